package client

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/discovery"
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

// An oz0 dev started again while its port was taken listens on another one: a live stream
// found through the discovery file follows it there, resuming after the last event seen.
func TestEventsFollowARestartToAnotherPort(t *testing.T) {
	events := func(from, to int64, end bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
			w.Header().Set("Content-Type", "text/event-stream")
			for seq := max(from, after+1); seq <= to; seq++ {
				ev := apiv1.Event{Job: "job_a", Seq: seq, Type: "say", Data: []byte(`{"text":"` + strconv.FormatInt(seq, 10) + `"}`)}
				if end && seq == to {
					ev.Type, ev.Data = "status", []byte(`{"status":"succeeded","from":"running"}`)
				}
				fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Type, ev.AppendJSON(nil))
			}
			if end {
				fmt.Fprint(w, "event: end\ndata: {}\n\n")
			}
		}
	}
	plugin := t.TempDir()
	if err := os.WriteFile(filepath.Join(plugin, discovery.ManifestFile), []byte("name: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	state := discovery.StateDir(plugin)
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	token := apiv1.NewToken()
	second := httptest.NewServer(events(1, 4, true))
	defer second.Close()
	var first *httptest.Server
	first = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		events(1, 2, false)(w, r)
		// The first oz0 dev stops after two events; the next one is elsewhere.
		if err := discovery.WriteRunning(state, apiv1.Context{URL: second.URL, Token: token}); err != nil {
			t.Error(err)
		}
		go first.Close()
	}))
	defer first.Close()
	if err := discovery.WriteRunning(state, apiv1.Context{URL: first.URL, Token: token}); err != nil {
		t.Fatal(err)
	}
	c, err := Find(func(string) string { return "" }, plugin)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	if err := c.EventsRaw(context.Background(), "job_a", 0, func(r RawEvent) error { seqs = append(seqs, r.Seq); return nil }, nil); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seqs) != "[1 2 3 4]" || c.URL() != second.URL {
		t.Fatalf("events %v from %s; want 1 to 4, the last from %s", seqs, c.URL(), second.URL)
	}
}
