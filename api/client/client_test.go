package client

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
)

// A live stream as the dev server sends it: each event's seq and type in the id and event fields
// and its JSON in data; the first connection drops after three events, and the next resumes from
// after= (repeating the last one, which the client drops).
func TestEventsRawResumesInOrder(t *testing.T) {
	big := strings.Repeat("x", 200<<10) // a line longer than the reader's buffer
	event := func(seq int64, typ, data string) apiv1.Event {
		return apiv1.Event{Job: "job_a", Seq: seq, Time: time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC), Type: typ, Data: []byte(data)}
	}
	events := []apiv1.Event{
		event(1, "status", `{"status":"running","from":"queued"}`),
		event(2, "say", `{"text":"`+big+`"}`),
		event(3, "say", `{"text":"two"}`),
		event(4, "result", `{"output":"done"}`),
		event(5, "status", `{"status":"succeeded","from":"running"}`),
	}
	var conns atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := conns.Add(1)
		after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
		w.Header().Set("Content-Type", "text/event-stream")
		sent := 0
		for _, ev := range events {
			if ev.Seq < after { // the last one seen comes again
				continue
			}
			fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Type, ev.AppendJSON(nil))
			if sent++; n == 1 && sent == 3 {
				return // the connection drops
			}
		}
		fmt.Fprint(w, "event: end\ndata: {}\n\n")
	}))
	defer srv.Close()
	c := New(apiv1.Context{URL: srv.URL, Token: apiv1.NewToken()})
	var got []string
	reconnects := 0
	err := c.EventsRaw(context.Background(), "job_a", 0, func(r RawEvent) error {
		want := events[len(got)]
		if r.Seq != want.Seq || r.Type != want.Type || string(r.JSON) != string(want.AppendJSON(nil)) {
			t.Errorf("event %d: %d %s %.80s", len(got)+1, r.Seq, r.Type, r.JSON)
		}
		got = append(got, r.Type)
		return nil
	}, func(error) { reconnects++ })
	if err != nil || len(got) != len(events) || reconnects != 1 {
		t.Fatalf("%v: %d events %v, %d reconnects", err, len(got), got, reconnects)
	}
	var decoded []apiv1.Event
	if err := c.Events(context.Background(), "job_a", 3, func(ev apiv1.Event) error { decoded = append(decoded, ev); return nil }, nil); err != nil {
		t.Fatal(err)
	}
	if len(decoded) != 2 || decoded[0].Type != "result" || !decoded[1].Terminal() || !decoded[0].Time.Equal(events[0].Time) {
		t.Errorf("decoded %+v", decoded)
	}
}
