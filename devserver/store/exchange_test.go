package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestExchanges(t *testing.T) {
	s := newStore(t)
	s.SetMasker(func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("sk-secret"), []byte("***")) })
	a, _ := s.CreateJob(NewJob{Agent: "a"})
	b, _ := s.CreateJob(NewJob{Agent: "a"})
	if got, err := s.Exchanges(a.ID); err != nil || len(got) != 0 {
		t.Fatalf("before any: %v %v", got, err)
	}
	for i, data := range []string{`{"call":1,"request":"key sk-secret"}`, `{"call":2}`, `{"call":3}`} {
		if err := s.AppendExchange(a.ID, json.RawMessage(data)); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := s.AppendExchange(b.ID, json.RawMessage(`{"other":true}`)); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := s.Exchanges(a.ID)
	if err != nil || len(got) != 3 {
		t.Fatalf("%v %v", got, err)
	}
	if string(got[0]) != `{"call":1,"request":"key ***"}` || string(got[1]) != `{"call":2}` || string(got[2]) != `{"call":3}` {
		t.Errorf("order or masking: %s", got)
	}
	if other, _ := s.Exchanges(b.ID); len(other) != 1 {
		t.Errorf("the other job's: %s", other)
	}
	if err := s.AppendExchange("job_nope", json.RawMessage(`{}`)); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown job: %v", err)
	}
	if _, err := s.Exchanges("job_nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown job: %v", err)
	}
	if err := s.AppendExchange(a.ID, json.RawMessage(`{"x":`)); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad JSON: %v", err)
	}
	if err := s.AppendExchange(a.ID, json.RawMessage(`"`+strings.Repeat("x", MaxData)+`"`)); !errors.Is(err, ErrInvalid) {
		t.Errorf("too large: %v", err)
	}
}
