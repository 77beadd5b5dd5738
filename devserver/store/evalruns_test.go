package store

import (
	"encoding/json"
	"errors"
	"testing"
)

// Eval runs are kept newest first, the oldest going past MaxEvalRuns; one left running by a
// stopped server is marked interrupted.
func TestEvalRuns(t *testing.T) {
	s := newStore(t)
	var last EvalRun
	for i := 0; i < MaxEvalRuns+2; i++ {
		r, err := s.CreateEvalRun(json.RawMessage(`{"files":["triage.yaml"]}`))
		if err != nil {
			t.Fatal(err)
		}
		last = r
	}
	if err := s.FinishEvalRun(last.ID, EvalDone, json.RawMessage(`{"cases":[]}`), ""); err != nil {
		t.Fatal(err)
	}
	runs, err := s.EvalRuns()
	if err != nil || len(runs) != MaxEvalRuns || runs[0].ID != last.ID || runs[0].Status != EvalDone || string(runs[0].Report) != `{"cases":[]}` || runs[0].EndedAt.IsZero() {
		t.Fatalf("runs: %d, first %+v, %v", len(runs), runs[0], err)
	}
	if _, err := s.GetEvalRun(1); !errors.Is(err, ErrNotFound) {
		t.Errorf("the oldest run past the bound: %v", err)
	}
	if err := s.InterruptEvalRuns(); err != nil {
		t.Fatal(err)
	}
	if r, err := s.GetEvalRun(last.ID - 1); err != nil || r.Status != EvalInterrupted || r.Error == "" {
		t.Errorf("a run left running: %+v %v", r, err)
	}
	if r, _ := s.GetEvalRun(last.ID); r.Status != EvalDone {
		t.Errorf("an ended run is left as it was: %s", r.Status)
	}
	if err := s.FinishEvalRun(9999, EvalDone, nil, ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("finishing no run: %v", err)
	}
}
