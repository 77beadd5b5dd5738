package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/devserver/store"
)

func setup(t *testing.T) (*Inbox, *store.Store, string) {
	t.Helper()
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	j, err := st.CreateJob(store.NewJob{Agent: "acme-triage"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetStatus(j.ID, store.StatusRunning, ""); err != nil {
		t.Fatal(err)
	}
	return New(st), st, j.ID
}

func call(job string) Call {
	return Call{Job: job, Agent: "acme-triage", Harness: "acme-triage", Tool: "notify_team", Request: "p1",
		Arguments: json.RawMessage(`{"team":"billing"}`), Why: "requires_approval lists notify_team"}
}

// ask runs Ask in the background and returns the pending approval and the answer's channel.
func ask(t *testing.T, in *Inbox, st *store.Store, ctx context.Context, c Call) (store.Approval, chan Answer) {
	t.Helper()
	out := make(chan Answer, 1)
	go func() {
		a, err := in.Ask(ctx, c)
		if err != nil {
			t.Error(err)
		}
		out <- a
	}()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		list, err := st.ListApprovals(store.ApprovalPending)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) > 0 {
			return list[0], out
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no pending approval")
	return store.Approval{}, nil
}

// waitStatus waits until job has status st.
func waitStatus(t *testing.T, st *store.Store, job string, want store.Status) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		j, err := st.GetJob(job)
		if err == nil && j.Status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job is %s (%v), want %s", j.Status, err, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestApproveForTheJobAnswersTheJobsNextCalls(t *testing.T) {
	in, st, job := setup(t)
	a, out := ask(t, in, st, context.Background(), call(job))
	// The approval is made first and the job's status follows it (so that a client that sees the
	// job waiting finds its approval): the status comes a moment after the approval is listed.
	waitStatus(t, st, job, store.StatusWaitingForApproval)
	if _, _, err := in.Approve(a.ID, store.ScopeJob); err != nil {
		t.Fatal(err)
	}
	if ans := <-out; !ans.Allow || ans.By != "person (for this job)" {
		t.Errorf("answer %+v", ans)
	}
	if j, _ := st.GetJob(job); j.Status != store.StatusRunning {
		t.Errorf("job is %s after the answer", j.Status)
	}
	// The next call of the same tool in the job is answered at once; another job's is not.
	ans, err := in.Ask(context.Background(), call(job))
	if err != nil || !ans.Allow {
		t.Fatalf("second call: %+v %v", ans, err)
	}
	in.EndJob(job)
	other, _ := st.CreateJob(store.NewJob{Agent: "acme-triage"})
	st.SetStatus(other.ID, store.StatusRunning, "")
	ctx, cancel := context.WithCancel(context.Background())
	_, out = ask(t, in, st, ctx, call(other.ID))
	cancel()
	if ans := <-out; ans.Allow {
		t.Errorf("another job's call was allowed: %+v", ans)
	}
}

func TestDenyNeedsAReasonAndReachesTheCaller(t *testing.T) {
	in, st, job := setup(t)
	a, out := ask(t, in, st, context.Background(), call(job))
	if _, err := in.Deny(a.ID, ""); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("deny without reason: %v", err)
	}
	if _, err := in.Deny(a.ID, "not today"); err != nil {
		t.Fatal(err)
	}
	if ans := <-out; ans.Allow || ans.Reason != "not today" {
		t.Errorf("answer %+v", ans)
	}
	if _, _, err := in.Approve(a.ID, ""); !errors.Is(err, store.ErrDecided) {
		t.Errorf("answering twice: %v", err)
	}
}

func TestAlwaysMakesARuleAndRevokingItAsksAgain(t *testing.T) {
	in, st, job := setup(t)
	a, out := ask(t, in, st, context.Background(), call(job))
	_, rule, err := in.Approve(a.ID, store.ScopeAlways)
	if err != nil || rule == nil || rule.Target != "acme-triage.notify_team" {
		t.Fatalf("rule %+v, %v", rule, err)
	}
	<-out
	ans, err := in.Ask(context.Background(), call(job))
	if err != nil || !ans.Allow || ans.By != "rule:"+rule.ID {
		t.Fatalf("with the rule: %+v %v", ans, err)
	}
	if _, err := st.RevokeRule(rule.ID); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b, out := ask(t, in, st, ctx, call(job))
	cancel() // the session ended: the approval is withdrawn
	if ans := <-out; ans.Allow {
		t.Errorf("allowed after revoke: %+v", ans)
	}
	if got, _ := st.GetApproval(b.ID); got.Status != store.ApprovalWithdrawn {
		t.Errorf("status %s, want withdrawn", got.Status)
	}
}

func TestUnknownScope(t *testing.T) {
	in, _, _ := setup(t)
	if _, _, err := in.Approve("apr_x", "forever"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("got %v", err)
	}
}

// TestInboxBounded: 256 permission requests of 180 KB at once (as many as the protocol lets a
// session have open) made the inbox hold 46 MB for one job. Past MaxPendingPerJob calls of a job,
// a call is denied at once and not stored; another job's call still waits; an answered call
// frees its place. Arguments past MaxArgumentBytes are denied without asking.
func TestInboxBounded(t *testing.T) {
	in, st, job := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	big := json.RawMessage(`{"body":"` + strings.Repeat("x", 180<<10) + `"}`)
	outs := make(chan Answer, MaxPendingPerJob)
	for range MaxPendingPerJob {
		go func() {
			c := call(job)
			c.Arguments = big
			a, err := in.Ask(ctx, c)
			if err != nil {
				t.Error(err)
			}
			outs <- a
		}()
	}
	waitPending := func(n int) []store.Approval {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			list, err := st.ListApprovals(store.ApprovalPending)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) == n {
				return list
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d approvals pending, want %d", len(list), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	list := waitPending(MaxPendingPerJob)
	ans, err := in.Ask(ctx, call(job))
	if err != nil || ans.Allow || ans.By != "inbox" || !strings.Contains(ans.Reason, "already has 32 calls waiting for a person") {
		t.Errorf("the call past the bound: %+v, %v", ans, err)
	}
	// Another job is not held up by this one.
	other, err := st.CreateJob(store.NewJob{Agent: "acme-triage"})
	if err != nil {
		t.Fatal(err)
	}
	_, otherOut := ask(t, in, st, ctx, call(other.ID))
	waitPending(MaxPendingPerJob + 1)
	// An answer frees a place.
	if _, err := in.Deny(list[0].ID, "no"); err != nil {
		t.Fatal(err)
	}
	if a := <-outs; a.Allow || a.Reason != "no" {
		t.Errorf("the denied call: %+v", a)
	}
	go func() {
		a, err := in.Ask(ctx, call(job))
		if err != nil {
			t.Error(err)
		}
		outs <- a
	}()
	waitPending(MaxPendingPerJob + 1)
	// Too large arguments are not stored, whatever the count.
	huge := call(other.ID)
	huge.Arguments = json.RawMessage(`"` + strings.Repeat("y", MaxArgumentBytes) + `"`)
	ans, err = in.Ask(ctx, huge)
	if err != nil || ans.Allow || ans.By != "inbox" || !strings.Contains(ans.Reason, "more than the 1048576 (1 MiB) the approvals inbox shows a person") {
		t.Errorf("too large arguments: %+v, %v", ans, err)
	}
	waitPending(MaxPendingPerJob + 1)
	cancel()
	<-otherOut
	for range MaxPendingPerJob {
		if a := <-outs; a.By != "withdrawn" {
			t.Errorf("a call left waiting: %+v", a)
		}
	}
}
