package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// A recorded model call is kept with its model_call event, masked, read back in order by
// Exchanges, and never shown in the events or the trace.
func TestExchanges(t *testing.T) {
	s := newStore(t)
	s.SetMasker(func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("sk-secret"), []byte("***")) })
	a, _ := s.CreateJob(NewJob{Agent: "a"})
	b, _ := s.CreateJob(NewJob{Agent: "a"})
	if got, err := s.Exchanges(a.ID); err != nil || len(got) != 0 {
		t.Fatalf("before any: %v %v", got, err)
	}
	call := NewEvent{Type: EventModelCall, Data: json.RawMessage(`{"step":1}`)}
	say := NewEvent{Type: EventSay, Data: json.RawMessage(`{"text":"hi"}`)}
	raw := func(s ...string) []json.RawMessage {
		out := make([]json.RawMessage, len(s))
		for i, x := range s {
			out[i] = json.RawMessage(x)
		}
		return out
	}
	if _, err := s.AppendBatchWithExchanges(a.ID, []NewEvent{call, say, call}, raw(`{"request":"key sk-secret"}`, "", `{"call":2}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendBatchWithExchanges(b.ID, []NewEvent{call}, raw(`{"other":true}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendBatchWithExchanges(a.ID, []NewEvent{call, call}, raw(`{"call":3}`)); err != nil {
		t.Fatal(err)
	}
	got, err := s.Exchanges(a.ID)
	if err != nil || len(got) != 3 {
		t.Fatalf("%s %v", got, err)
	}
	if string(got[0]) != `{"request":"key ***"}` || string(got[1]) != `{"call":2}` || string(got[2]) != `{"call":3}` {
		t.Errorf("order or masking: %s", got)
	}
	if other, _ := s.Exchanges(b.ID); len(other) != 1 {
		t.Errorf("the other job's: %s", other)
	}
	evs, _ := s.Events(a.ID, 0, 0)
	var trace bytes.Buffer
	s.Trace(a.ID, &trace)
	for _, e := range evs {
		if strings.Contains(string(e.Data), "request") {
			t.Errorf("an event carries its exchange: %s", e.Data)
		}
	}
	if strings.Contains(trace.String(), `"call":2`) {
		t.Errorf("the trace carries an exchange:\n%s", trace.String())
	}
	if _, err := s.Exchanges("job_nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown job: %v", err)
	}
	if _, err := s.AppendBatchWithExchanges(a.ID, []NewEvent{call}, raw(`{"x":`)); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad JSON: %v", err)
	}
}
