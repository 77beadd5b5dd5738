package client

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
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
	plugin, state := pluginWithState(t)
	token := apiv1.NewToken()
	second := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { streamEvents(w, r, 1, 4, true) }))
	defer second.Close()
	var first *httptest.Server
	first = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		streamEvents(w, r, 1, 2, false)
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
	var notes []string
	if err := c.EventsRaw(context.Background(), "job_a", 0, func(r RawEvent) error { seqs = append(seqs, r.Seq); return nil }, func(err error) { notes = append(notes, err.Error()) }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seqs) != "[1 2 3 4]" || c.URL() != second.URL {
		t.Fatalf("events %v from %s; want 1 to 4, the last from %s", seqs, c.URL(), second.URL)
	}
	// The restarted oz0 dev keeps its token: the notes while it is away say what happened, not
	// to start it and export its line.
	for _, n := range notes {
		if strings.Contains(n, "export") || strings.Contains(n, "start `oz0 dev`") {
			t.Errorf("a note while resuming gives a mend: %s", n)
		}
	}
}

// kill -9 of oz0 dev, and another plugin's oz0 dev takes its port: a follower found through the
// discovery file gets that one's 401 while it resumes, which is not its server refusing it: it
// keeps waiting for its own (reading the file again), which comes back on another port. Its notes
// say what happens, without the mends of a command that gives up.
func TestEventsWaitThroughAnotherServersRefusal(t *testing.T) {
	plugin, state := pluginWithState(t)
	token := apiv1.NewToken()
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { streamEvents(w, r, 1, 4, true) }))
	defer back.Close()
	var conns atomic.Int32
	port := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n := conns.Add(1); {
		case n == 1: // the plugin's oz0 dev, killed after two events
			streamEvents(w, r, 1, 2, false)
		default: // another plugin's oz0 dev on the same port
			if n == 3 { // the plugin's own comes back elsewhere
				if err := discovery.WriteRunning(state, apiv1.Context{URL: back.URL, Token: token}); err != nil {
					t.Error(err)
				}
			}
			w.Header().Set(apiv1.ServerHeader, "v1")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"code":"unauthorized","message":"missing or wrong bearer token"}}`))
		}
	}))
	defer port.Close()
	if err := discovery.WriteRunning(state, apiv1.Context{URL: port.URL, Token: token}); err != nil {
		t.Fatal(err)
	}
	c, err := Find(func(string) string { return "" }, plugin)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	var notes []string
	err = c.EventsRaw(context.Background(), "job_a", 0, func(r RawEvent) error { seqs = append(seqs, r.Seq); return nil }, func(err error) { notes = append(notes, err.Error()) })
	if err != nil || fmt.Sprint(seqs) != "[1 2 3 4]" {
		t.Fatalf("%v: events %v; want 1 to 4 (notes %q)", err, seqs, notes)
	}
	want := "another dev server answers at " + port.URL + ": it refused this job's token; waiting for the oz0 dev that runs the job"
	if !slices.Contains(notes, want) {
		t.Errorf("notes %q; want %q among them", notes, want)
	}
	for _, n := range notes {
		if strings.Contains(n, "OZ0_CONTEXT") || strings.Contains(n, "export") {
			t.Errorf("a note while resuming says to export the context: %s", n)
		}
	}

	// A call that gets the other server's 401 says where its token came from: the discovery
	// file, not OZ0_CONTEXT.
	c, err = Find(func(string) string { return "" }, plugin)
	if err != nil {
		t.Fatal(err)
	}
	c.ctx.URL = port.URL
	_, err = c.Jobs(context.Background(), "", "", 0)
	running := filepath.Join(state, discovery.RunningFile)
	if err == nil || strings.Contains(err.Error(), "OZ0_CONTEXT") || !strings.Contains(err.Error(), "refused the token that "+running+" gave (missing or wrong bearer token): another oz0 dev answers") {
		t.Errorf("the 401 of a context found through %s: %v", running, err)
	}
}

// pluginWithState is a plugin's folder (its manifest) and its oz0 dev's default state directory,
// made, where the discovery file goes.
func pluginWithState(t *testing.T) (plugin, state string) {
	t.Helper()
	plugin = t.TempDir()
	if err := os.WriteFile(filepath.Join(plugin, discovery.ManifestFile), []byte("name: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	state = discovery.StateDir(plugin)
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	return plugin, state
}

// streamEvents answers a live stream of job_a as oz0 dev does: says from..to after the request's
// ?after (each its seq as text), the last a terminal status when end.
func streamEvents(w http.ResponseWriter, r *http.Request, from, to int64, end bool) {
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
