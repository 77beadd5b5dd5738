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
		r, err := s.CreateEvalRun(json.RawMessage(`{"files":["triage.yaml"]}`), 3)
		if err != nil {
			t.Fatal(err)
		}
		last = r
	}
	if err := s.EvalRunProgress(last.ID, 1, json.RawMessage(`{"cases":[1]}`), []string{"a job waits"}); err != nil {
		t.Fatal(err)
	}
	if r, err := s.GetEvalRun(last.ID); err != nil || r.Done != 1 || r.Cases != 3 || string(r.Report) != `{"cases":[1]}` || len(r.Notes) != 1 {
		t.Errorf("a run's progress: %+v %v", r, err)
	}
	if err := s.FinishEvalRun(last.ID, EvalDone, 0, json.RawMessage(`{"cases":[]}`), ""); err != nil {
		t.Fatal(err)
	}
	if err := s.EvalRunProgress(last.ID, 2, nil, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("progress of an ended run: %v", err)
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
	if err := s.FinishEvalRun(9999, EvalDone, 0, nil, ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("finishing no run: %v", err)
	}
}

// Each write of a run is a change of the feed.
func TestEvalRunChanges(t *testing.T) {
	s := newStore(t)
	w, err := s.Watch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := s.CreateEvalRun(json.RawMessage(`{}`), 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EvalRunProgress(r.ID, 1, json.RawMessage(`{}`), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishEvalRun(r.ID, EvalDone, 1, nil, ""); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if c := <-w.C; c != (Change{Kind: ChangeEvalRun, ID: "1"}) {
			t.Errorf("change %d: %+v", i, c)
		}
	}
}
