package store

import (
	"encoding/json"
	"testing"
	"time"
)

// nextChange reads one change, or fails after a generous deadline.
func nextChange(t *testing.T, w *Watch) Change {
	t.Helper()
	select {
	case c, ok := <-w.C:
		if !ok {
			t.Fatal("the watch ended")
		}
		return c
	case <-time.After(30 * time.Second):
		t.Fatal("no change came")
	}
	return Change{}
}

func TestWatchJobsAndApprovals(t *testing.T) {
	s := newStore(t)
	w, err := s.Watch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	j := newJob(t, s)
	s.SetStatus(j.ID, StatusRunning, "")
	s.Append(j.ID, EventSay, json.RawMessage(`{"text":"hi"}`)) // no change to the record
	s.AppendBatch(j.ID, []NewEvent{
		{Type: EventModelCall, Data: json.RawMessage(`{"record":"fake","input_tokens":3}`)},
		{Type: EventModelCall, Data: json.RawMessage(`{"record":"fake","input_tokens":4}`)},
	})
	a, err := s.CreateApproval(Approval{Job: j.ID, Agent: "acme-triage", Harness: "h", Tool: "t", Request: "p1", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DecideApproval(a.ID, ApprovalApproved, ScopeOnce, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DecideApproval(a.ID, ApprovalDenied, "", "again"); err == nil {
		t.Fatal("deciding twice worked")
	}
	b, _ := s.CreateApproval(Approval{Job: j.ID, Agent: "acme-triage", Harness: "h", Tool: "t", Request: "p2", Arguments: json.RawMessage(`{}`)})
	s.EndApprovals(j.ID, ApprovalWithdrawn, "the job ended")
	s.FinishJob(j.ID, StatusSucceeded, "", json.RawMessage(`"ok"`))

	want := []Change{
		{ChangeJob, j.ID},      // created
		{ChangeJob, j.ID},      // running
		{ChangeJob, j.ID},      // the batch's two model calls: one change
		{ChangeApproval, a.ID}, // asked
		{ChangeApproval, a.ID}, // approved; the refused second answer changed nothing
		{ChangeApproval, b.ID}, // asked
		{ChangeApproval, b.ID}, // withdrawn
		{ChangeJob, j.ID},      // succeeded
	}
	for i, wc := range want {
		if c := nextChange(t, w); c != wc {
			t.Fatalf("change %d is %v %s, want %v %s", i, c.Kind, c.ID, wc.Kind, wc.ID)
		}
	}
	select {
	case c := <-w.C:
		t.Fatalf("an extra change: %v %s", c.Kind, c.ID)
	default:
	}
}

// A watcher that stops reading costs the writer nothing; when it reads again it gets what was
// buffered, then one ChangeLost, after which nothing is missing.
func TestWatchLagging(t *testing.T) {
	s := newStore(t, Options{LiveBuffer: 4})
	w, _ := s.Watch(t.Context())
	const n = 40
	for range n {
		newJob(t, s)
	}
	lost := false
	jobs := 0
	for !lost {
		switch c := nextChange(t, w); c.Kind {
		case ChangeJob:
			jobs++
		case ChangeLost:
			lost = true
		}
	}
	if jobs >= n {
		t.Fatalf("%d job changes before the loss: the watcher never lagged", jobs)
	}
	if s.Stats().Lags == 0 {
		t.Error("no lag counted")
	}
	// Live again after the loss: the new job is announced (or, should the buffer have filled
	// again meanwhile, covered by a later loss).
	j := newJob(t, s)
	for {
		if c := nextChange(t, w); c == (Change{ChangeJob, j.ID}) || c.Kind == ChangeLost {
			break
		}
	}
}

func TestWatchEnds(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w1, _ := s.Watch(t.Context())
	w2, _ := s.Watch(t.Context())
	w1.Close()
	for range w1.C {
	}
	s.Close()
	for range w2.C {
	}
	if _, err := s.Watch(t.Context()); err != ErrClosed {
		t.Fatalf("Watch on a closed store: %v", err)
	}
}

func TestUsageByRecord(t *testing.T) {
	s := newStore(t)
	j1 := newJob(t, s)
	j2, _ := s.CreateJob(NewJob{Agent: "other", Input: json.RawMessage(`"x"`)})
	for _, j := range []string{j1.ID, j2.ID} {
		s.SetStatus(j, StatusRunning, "")
	}
	s.AppendBatch(j1.ID, []NewEvent{
		{Type: EventModelCall, Data: json.RawMessage(`{"record":"fake","model":"m","input_tokens":100,"output_tokens":20,"cache_read_input_tokens":5,"cost_usd":0.25}`)},
		{Type: EventModelCall, Data: json.RawMessage(`{"record":"fake","model":"m","input_tokens":50,"output_tokens":10,"cache_creation_input_tokens":7,"cost_usd":0.5}`)},
		{Type: EventModelCall, Data: json.RawMessage(`{"record":"fake","model":"m","status":429,"refused":"limits.max_steps"}`)},
		{Type: EventModelCall, Data: json.RawMessage(`{"record":"anthropic","model":"claude","input_tokens":1,"output_tokens":2}`)},
		{Type: EventSay, Data: json.RawMessage(`{"text":"not a call"}`)},
	})
	s.Append(j2.ID, EventModelCall, json.RawMessage(`{"record":"fake","model":"m","input_tokens":9,"output_tokens":1}`))
	j3 := newJob(t, s)
	s.SetStatus(j3.ID, StatusRunning, "")
	s.Append(j3.ID, EventModelCall, json.RawMessage(`{"record":"fake","model":"m","input_tokens":1000,"output_tokens":1}`))

	rows, err := s.UsageByRecord(UsageFilter{})
	if err != nil {
		t.Fatal(err)
	}
	want := []UsageRow{
		{Agent: "acme-triage", Record: "anthropic", Model: "claude", Usage: Usage{ModelCalls: 1, InputTokens: 1, OutputTokens: 2}},
		{Agent: "acme-triage", Record: "fake", Model: "m", Usage: Usage{ModelCalls: 3, InputTokens: 1150, OutputTokens: 31, CacheReadTokens: 5, CacheCreationTokens: 7, CostUSD: 0.75}},
		{Agent: "other", Record: "fake", Model: "m", Usage: Usage{ModelCalls: 1, InputTokens: 9, OutputTokens: 1}},
	}
	checkUsage(t, rows, want)

	// The sums of a job agree with its Usage.
	rows, _ = s.UsageByRecord(UsageFilter{Job: j1.ID, ByJob: true})
	var sum Usage
	for _, r := range rows {
		if r.Job != j1.ID {
			t.Fatalf("a row of job %s", r.Job)
		}
		sum.ModelCalls += r.ModelCalls
		sum.InputTokens += r.InputTokens
		sum.OutputTokens += r.OutputTokens
		sum.CacheReadTokens += r.CacheReadTokens
		sum.CacheCreationTokens += r.CacheCreationTokens
		sum.CostUSD += r.CostUSD
	}
	if g, _ := s.GetJob(j1.ID); g.Usage != sum {
		t.Fatalf("job usage %+v, the rows sum to %+v", g.Usage, sum)
	}

	// By job, newest job first within an agent; one agent only.
	rows, _ = s.UsageByRecord(UsageFilter{Agent: "acme-triage", ByJob: true})
	want = []UsageRow{
		{Agent: "acme-triage", Job: j3.ID, Record: "fake", Model: "m", Usage: Usage{ModelCalls: 1, InputTokens: 1000, OutputTokens: 1}},
		{Agent: "acme-triage", Job: j1.ID, Record: "anthropic", Model: "claude", Usage: Usage{ModelCalls: 1, InputTokens: 1, OutputTokens: 2}},
		{Agent: "acme-triage", Job: j1.ID, Record: "fake", Model: "m", Usage: Usage{ModelCalls: 2, InputTokens: 150, OutputTokens: 30, CacheReadTokens: 5, CacheCreationTokens: 7, CostUSD: 0.75}},
	}
	checkUsage(t, rows, want)

	if rows, _ := s.UsageByRecord(UsageFilter{Agent: "nobody"}); rows == nil || len(rows) != 0 {
		t.Fatalf("no calls: %v, want an empty list", rows)
	}
}

func checkUsage(t *testing.T, got, want []UsageRow) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d rows %+v, want %d %+v", len(got), got, len(want), want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
