// Package approvals is the dev server's approvals inbox: a tool call that needs a person waits
// here, as a record in the job store, until someone approves it (once, for the rest of the job,
// or always) or denies it with a reason that reaches the model.
package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/orchestrator-zero/oz0/devserver/store"
	"github.com/orchestrator-zero/oz0/harnesskit"
)

// Answer is how a waiting call was decided.
type Answer struct {
	Allow  bool
	Reason string // a denial's, for the harness (and so the model)
	By     string // for the trace: "person", "person (for this job)", "rule:<id>"
}

// Call is a tool call that needs a person.
type Call struct {
	Job, Agent, Harness, Tool string
	Request                   string // the permission request's id in the session
	Arguments                 json.RawMessage
	Why                       string
	// Hold stops the job's timeout clock while the call waits; it returns the release.
	Hold func() (release func())
}

// Target is <harness>.<tool>.
func (c Call) Target() string { return c.Harness + "." + c.Tool }

// The inbox's bounds, so that what waits for a person cannot grow with what a harness sends (the
// protocol lets a session have 256 permission requests open at once, each up to its 8 MiB line):
// a call past them is denied at once, with a reason that says which bound, and is not stored.
const (
	// MaxPendingPerJob is the most calls of one job that wait for a person at once: more than a
	// person answers one by one, and more than a harness that waits for each answer needs.
	MaxPendingPerJob = 32
	// MaxArgumentBytes is the most JSON of one waiting call's arguments: what a person can read
	// before approving it.
	MaxArgumentBytes = 1 << 20
)

// Inbox holds the pending approvals of the live jobs.
type Inbox struct {
	store *store.Store

	mu      sync.Mutex
	waiters map[string]chan Answer     // approval id → its waiting call
	pending map[string]int             // job → its pending approvals
	grants  map[string]map[string]bool // job → targets approved for the rest of the job
	// stopping is why the requests still waiting end: set by Stop, when oz0 dev stops and
	// interrupts its jobs, so that they are interrupted (as after a crash), not withdrawn.
	stopping atomic.Pointer[string]
}

// Stop makes the requests that wait from now on end interrupted, for reason, rather than
// withdrawn, as their sessions end: oz0 dev is stopping (docs/approvals.md).
func (in *Inbox) Stop(reason string) { in.stopping.Store(&reason) }

// New returns the inbox over st. Approvals left pending by an earlier run cannot be answered
// (their sessions are gone): call Interrupt once at start-up.
func New(st *store.Store) *Inbox {
	return &Inbox{store: st, waiters: map[string]chan Answer{}, pending: map[string]int{}, grants: map[string]map[string]bool{}}
}

// Interrupt marks every pending approval interrupted: at start-up, their jobs are interrupted.
func (in *Inbox) Interrupt(reason string) ([]string, error) {
	return in.store.EndApprovals("", store.ApprovalInterrupted, reason)
}

// Ask decides a call that needs a person: an "always" rule or a grant for the rest of the job
// answers at once; otherwise the call waits in the inbox, with the job waiting for approval and
// its clock held, until a person answers or ctx ends (the session ended: the approval is
// withdrawn).
func (in *Inbox) Ask(ctx context.Context, c Call) (Answer, error) {
	rules, err := in.store.Rules()
	if err != nil {
		return Answer{}, err
	}
	for _, r := range rules {
		if r.Target == c.Target() {
			return Answer{Allow: true, By: "rule:" + r.ID}, nil
		}
	}
	in.mu.Lock()
	granted := in.grants[c.Job][c.Target()]
	in.mu.Unlock()
	if granted {
		return Answer{Allow: true, By: "person (for this job)"}, nil
	}
	if len(c.Arguments) > MaxArgumentBytes {
		return Answer{By: "inbox", Reason: fmt.Sprintf("%s's arguments are %d bytes of JSON, more than the %d (1 MiB) the approvals inbox shows a person; the call is denied without asking",
			c.Target(), len(c.Arguments), MaxArgumentBytes)}, nil
	}
	in.mu.Lock()
	if in.pending[c.Job] >= MaxPendingPerJob {
		in.mu.Unlock()
		return Answer{By: "inbox", Reason: fmt.Sprintf("job %s already has %d calls waiting for a person, the most the approvals inbox holds for one job; the call is denied without asking (ask again once some are answered)",
			c.Job, MaxPendingPerJob)}, nil
	}
	in.pending[c.Job]++ // the place is taken before the record is written: two calls at once cannot both take the last one
	first := in.pending[c.Job] == 1
	in.mu.Unlock()
	a, err := in.store.CreateApproval(store.Approval{
		Job: c.Job, Agent: c.Agent, Harness: c.Harness, Tool: c.Tool, Request: c.Request, Arguments: c.Arguments, Why: c.Why,
	})
	if err != nil {
		in.mu.Lock()
		in.leave(c.Job)
		in.mu.Unlock()
		return Answer{}, err
	}
	ch := make(chan Answer, 1)
	in.mu.Lock()
	in.waiters[a.ID] = ch
	in.mu.Unlock()
	if first {
		_ = in.store.SetStatus(c.Job, store.StatusWaitingForApproval, fmt.Sprintf("%s waits for a person: oz0 approval approve %s", c.Target(), a.ID))
	}
	release := func() {}
	if c.Hold != nil {
		release = c.Hold()
	}
	var ans Answer
	select {
	case ans = <-ch:
	case <-ctx.Done():
		// The session ended (cancelled, timed out): withdraw the request, unless a person's
		// answer won the race, which then stands in the record but reaches no one.
		why, to := withdrawnBecause(ctx), store.ApprovalWithdrawn
		if stop := in.stopping.Load(); stop != nil {
			why, to = *stop, store.ApprovalInterrupted
		}
		if _, err := in.store.DecideApproval(a.ID, to, "", why); err != nil && !errors.Is(err, store.ErrDecided) {
			release()
			return Answer{}, err
		}
		ans = Answer{Reason: why, By: "withdrawn"}
	}
	release()
	in.mu.Lock()
	delete(in.waiters, a.ID)
	last := in.leave(c.Job)
	in.mu.Unlock()
	if last && ctx.Err() == nil {
		_ = in.store.SetStatus(c.Job, store.StatusRunning, "")
	}
	return ans, nil
}

// leave gives back a job's place in the inbox; it reports whether it was the job's last. in.mu
// is held.
func (in *Inbox) leave(job string) bool {
	in.pending[job]--
	if in.pending[job] > 0 {
		return false
	}
	delete(in.pending, job)
	return true
}

// Approve approves a pending approval with a scope: once, job (the rest of this job) or always
// (a rule for its <harness>.<tool>, until revoked).
func (in *Inbox) Approve(id, scope string) (store.Approval, *store.ApprovalRule, error) {
	switch scope {
	case "":
		scope = store.ScopeOnce
	case store.ScopeOnce, store.ScopeJob, store.ScopeAlways:
	default:
		return store.Approval{}, nil, fmt.Errorf("%w: unknown scope %q; choose once, job or always", store.ErrInvalid, scope)
	}
	a, err := in.store.DecideApproval(id, store.ApprovalApproved, scope, "")
	if err != nil {
		return a, nil, err
	}
	var rule *store.ApprovalRule
	by := "person"
	switch scope {
	case store.ScopeJob:
		in.mu.Lock()
		if in.grants[a.Job] == nil {
			in.grants[a.Job] = map[string]bool{}
		}
		in.grants[a.Job][a.Target()] = true
		in.mu.Unlock()
		by = "person (for this job)"
	case store.ScopeAlways:
		r, err := in.store.AddRule(a.Target(), a.ID)
		if err != nil {
			return a, nil, err
		}
		rule, by = &r, "person (always: "+r.ID+")"
	}
	in.wake(id, Answer{Allow: true, By: by})
	return a, rule, nil
}

// Deny denies a pending approval; the reason reaches the harness.
func (in *Inbox) Deny(id, reason string) (store.Approval, error) {
	if reason == "" {
		return store.Approval{}, fmt.Errorf("%w: a denial needs a reason, for the model to read: --reason \"...\"", store.ErrInvalid)
	}
	a, err := in.store.DecideApproval(id, store.ApprovalDenied, "", reason)
	if err != nil {
		return a, err
	}
	in.wake(id, Answer{Reason: reason, By: "person"})
	return a, nil
}

func (in *Inbox) wake(id string, ans Answer) {
	in.mu.Lock()
	ch := in.waiters[id]
	in.mu.Unlock()
	if ch != nil {
		ch <- ans
	}
}

// EndJob forgets a job's grants once it has ended.
func (in *Inbox) EndJob(job string) {
	in.mu.Lock()
	delete(in.grants, job)
	in.mu.Unlock()
}

// withdrawnBecause says why a request was withdrawn: how its session ended, when the context
// says (the supervisor's does).
func withdrawnBecause(ctx context.Context) string {
	var ee *harnesskit.EndError
	if !errors.As(context.Cause(ctx), &ee) {
		return "the job ended before anyone answered"
	}
	switch ee.End.Status {
	case harnesskit.Cancelled:
		return "the job was cancelled before anyone answered"
	case harnesskit.TimedOut:
		return "the job timed out before anyone answered"
	}
	return "the job ended (" + string(ee.End.Status) + ") before anyone answered"
}
