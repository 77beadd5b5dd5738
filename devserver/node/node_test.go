package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/devserver/node"
	"github.com/orchestrator-zero/oz0/devserver/store"
	"github.com/orchestrator-zero/oz0/supervisor"
)

const ticket = "I was charged twice for my order"

func TestJobSucceedsWithItsEventsInOrder(t *testing.T) {
	w := newWorld(t, loadPlugin(t, map[string]string{"triage": ""}), nil)
	j := w.submit(t, "triage", ticket)
	if j.Agent != "triage" || j.Plugin != "shop" || j.InputText != ticket || string(j.Input) != `"`+ticket+`"` ||
		j.ModelRecord != "fake" || j.ModelName != "fake-model" {
		t.Errorf("job as made: %+v", j)
	}
	evs, end := w.events(t, j.ID, nil)
	// No model_call: the dev server records those from the gateway's meter, not the node.
	want := "status:queued status:running session say permission_request permission_decision tool_result result status:succeeded"
	if got := types(evs); got != want {
		t.Errorf("events %s\nwant   %s", got, want)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) || e.Job != j.ID || (i > 0 && e.Time.Before(evs[i-1].Time)) {
			t.Errorf("event %d: seq %d, job %s, time %v after %v", i, e.Seq, e.Job, e.Time, evs[max(i-1, 0)].Time)
		}
	}
	var decision struct{ Decision, By, Tool string }
	for _, e := range evs {
		if e.Type == store.EventPermissionDecision {
			_ = json.Unmarshal(e.Data, &decision)
		}
	}
	if decision.Decision != "allow" || decision.By != "policy" || decision.Tool != "notify_team" {
		t.Errorf("permission decision %+v: want allow by policy (the node's AllowListed)", decision)
	}
	var out string
	if end.Status != store.StatusSucceeded || json.Unmarshal(end.Output, &out) != nil || !strings.HasPrefix(out, "billing: ") {
		t.Errorf("job ended %s (%s) with %s", end.Status, end.Reason, end.Output)
	}
	if calls := w.meter.Job(j.ID); len(calls) != 1 || calls[0].Record != "fake" {
		t.Errorf("model calls %+v: want one through the fake record", calls)
	}
}

func TestFailingHarnessFailsTheJobWithItsReason(t *testing.T) {
	w := newWorld(t, loadPlugin(t, map[string]string{"fail": "", "crash": ""}), nil)
	for agent, reason := range map[string]string{
		"fail":  "the ticket system is down",
		"crash": "the harness exited with status 2 without a result or an error (rule 2)",
	} {
		evs, end := w.events(t, w.submit(t, agent, ticket).ID, nil)
		if end.Status != store.StatusFailed || !strings.HasPrefix(end.Reason, reason) {
			t.Errorf("%s: job ended %s: %q, want failed: %q", agent, end.Status, end.Reason, reason)
		}
		last := evs[len(evs)-2]
		var d struct{ Message string }
		if last.Type != store.EventError || json.Unmarshal(last.Data, &d) != nil || d.Message != end.Reason {
			t.Errorf("%s: the event before the end is %s %s, want the error %q", agent, last.Type, last.Data, end.Reason)
		}
	}
}

func TestCancelEndsALiveJob(t *testing.T) {
	w := newWorld(t, loadPlugin(t, map[string]string{"hang": ""}), nil)
	if w.node.Cancel("job_unknown") {
		t.Error("Cancel of a job the node does not run reported it live")
	}
	j := w.submit(t, "hang", ticket)
	cancelled := false
	_, end := w.events(t, j.ID, func(e store.Event) {
		if e.Type == store.EventSay && !cancelled { // the harness is working: cancel it now
			cancelled = true
			if !w.node.Cancel(j.ID) {
				t.Error("Cancel of a live job reported it not live")
			}
		}
	})
	if end.Status != store.StatusCancelled || end.Reason != node.StoppedOnRequest {
		t.Errorf("job ended %s: %q, want cancelled: %s", end.Status, end.Reason, node.StoppedOnRequest)
	}
	// The session gives its room back just after its end is recorded (run's deferred release):
	// the job leaves the running list then, not before the end is seen.
	if ids := waitNoneRunning(w.node); len(ids) != 0 {
		t.Errorf("running after the end: %v", ids)
	}
}

// waitNoneRunning waits until the node runs no job, at most a minute (a bound for a failure,
// never reached when all is well), and returns what still runs.
func waitNoneRunning(n *node.Node) []string {
	deadline := time.Now().Add(time.Minute)
	for {
		ids := n.Running()
		if len(ids) == 0 || time.Now().After(deadline) {
			return ids
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCloseInterruptsLiveJobsAndRefusesNewOnes(t *testing.T) {
	w := newWorld(t, loadPlugin(t, map[string]string{"hang": ""}), nil)
	j := w.submit(t, "hang", ticket)
	closed := make(chan error, 1)
	_, end := w.events(t, j.ID, func(e store.Event) {
		if e.Type == store.EventSay {
			go func() { closed <- w.node.Close(t.Context()) }()
		}
	})
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if end.Status != store.StatusInterrupted || end.Reason != "oz0 dev stopped while the job ran" {
		t.Errorf("job ended %s: %q, want interrupted", end.Status, end.Reason)
	}
	if _, err := w.node.Submit("hang", ticket); !errors.Is(err, node.ErrClosed) {
		t.Errorf("Submit after Close: %v, want ErrClosed", err)
	}
}

func TestInputTheAgentDoesNotTakeMakesNoJob(t *testing.T) {
	w := newWorld(t, loadPlugin(t, map[string]string{"echo": "input: {schema: {type: object, required: [order]}}\n"}), nil)
	for input, want := range map[string]string{
		ticket:          "agent echo takes JSON input, and this is not JSON: line 1, column 1: invalid character 'I' looking for beginning of value",
		`{"note": "x"}`: "the input does not match agent echo's input schema: at /: missing property 'order'",
	} {
		_, err := w.node.Submit("echo", input)
		var inErr *node.InputError
		if !errors.As(err, &inErr) || err.Error() != want {
			t.Errorf("Submit(%q): %v, want an InputError %q", input, err, want)
		}
	}
	if jobs, err := w.store.ListJobs(store.ListFilter{}); err != nil || len(jobs) != 0 {
		t.Errorf("jobs made: %d (%v)", len(jobs), err)
	}
	// JSON it takes is the job's input, compacted, and the text as it came.
	j := w.submit(t, "echo", "{\"order\": \"A-1\"}\n")
	if string(j.Input) != `{"order":"A-1"}` || j.InputText != "{\"order\": \"A-1\"}\n" {
		t.Errorf("input %s, text %q", j.Input, j.InputText)
	}
	w.events(t, j.ID, nil)
}

// An input over the limit as the session request carries it is refused at submit, before a job
// is made, whether it is long or only escapes long (2 MiB of line breaks is 4 MiB as JSON); one
// at the limit runs. Before, inputs of up to 16 MiB were taken, and every session of one over
// about 4 MiB failed: its request line carries the input twice.
func TestInputOverTheLimitMakesNoJob(t *testing.T) {
	w := newWorld(t, loadPlugin(t, map[string]string{"echo": ""}), nil)
	for input, want := range map[string]string{
		strings.Repeat("a", apiv1.MaxInput+1): "the input is over 3 MiB, the most a job takes; give a shorter one",
		strings.Repeat("\n", 2<<20):           "the input is 2097152 bytes, 4194306 bytes written as a JSON string",
	} {
		_, err := w.node.Submit("echo", input)
		var inErr *node.InputError
		if !errors.As(err, &inErr) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Submit(%d bytes): %v, want an InputError %q", len(input), err, want)
		}
	}
	if jobs, err := w.store.ListJobs(store.ListFilter{}); err != nil || len(jobs) != 0 {
		t.Errorf("jobs made: %d (%v)", len(jobs), err)
	}
	at := strings.Repeat("a", apiv1.MaxInput-2)
	if _, end := w.events(t, w.submit(t, "echo", at).ID, nil); end.Status != store.StatusSucceeded {
		t.Errorf("an input at the limit: %s %s", end.Status, end.Reason)
	}
}

func TestUnknownAgent(t *testing.T) {
	w := newWorld(t, loadPlugin(t, map[string]string{"ok": "", "echo": ""}), nil)
	_, err := w.node.Submit("nope", ticket)
	if !errors.Is(err, node.ErrUnknownAgent) || err.Error() != `unknown agent "nope"; the dev server runs: echo, ok` {
		t.Errorf("Submit of an unknown agent: %v", err)
	}
}

func TestOutputThatDoesNotMatchTheSchemaFailsTheJob(t *testing.T) {
	w := newWorld(t, loadPlugin(t, map[string]string{"ok": "output: {schema: {type: object, required: [team]}}\n"}), nil)
	evs, end := w.events(t, w.submit(t, "ok", ticket).ID, nil)
	want := "the result does not match the agent's output schema: at /: got string, want object"
	if end.Status != store.StatusFailed || end.Reason != want || end.Output != nil {
		t.Errorf("job ended %s: %q with %s; want failed: %q", end.Status, end.Reason, end.Output, want)
	}
	if got := types(evs[len(evs)-3:]); got != "result error status:failed" {
		t.Errorf("the job ends with %s: the result is kept, then the error", got)
	}
}

// The dev server waits in BeforeEnd for the job's model calls still being metered: it must come
// after the session has ended and before the job's end is recorded.
func TestEndRecordedAfterBeforeEnd(t *testing.T) {
	var w *world
	var statusAtBeforeEnd store.Status
	var callsAtBeforeEnd int
	w = newWorld(t, loadPlugin(t, map[string]string{"triage": ""}), func(c *node.Config) {
		c.BeforeEnd = func(job string) {
			w.gw.Flush() // as the dev server waits for its meter
			j, err := w.store.GetJob(job)
			if err != nil {
				t.Error(err)
			}
			statusAtBeforeEnd, callsAtBeforeEnd = j.Status, len(w.meter.Job(job))
			// A model call metered late, as the dev server records it.
			if _, err := w.store.Append(job, store.EventModelCall, json.RawMessage(`{"record":"fake","status":200,"step":1}`)); err != nil {
				t.Error(err)
			}
		}
	})
	evs, end := w.events(t, w.submit(t, "triage", ticket).ID, nil)
	if statusAtBeforeEnd != store.StatusRunning || callsAtBeforeEnd != 1 {
		t.Errorf("at BeforeEnd the job was %s with %d model call(s) metered; want running, 1", statusAtBeforeEnd, callsAtBeforeEnd)
	}
	if got := types(evs[len(evs)-3:]); end.Status != store.StatusSucceeded || got != "model_call result status:succeeded" {
		t.Errorf("the job (%s) ends with %s: the model call metered in BeforeEnd must come before its end", end.Status, got)
	}
	if end.Usage.ModelCalls != 1 {
		t.Errorf("usage %+v", end.Usage)
	}
}

// The trace records what happened, in order: a line after the harness's result (a second result,
// say) comes after the result, with what it was.
func TestLinesAfterTheResultComeAfterIt(t *testing.T) {
	w := newWorld(t, loadPlugin(t, map[string]string{"after": ""}), nil)
	evs, end := w.events(t, w.submit(t, "after", ticket).ID, nil)
	if end.Status != store.StatusSucceeded {
		t.Fatalf("job %s: %s", end.Status, end.Reason)
	}
	result, late := -1, 0
	for i, e := range evs {
		switch e.Type {
		case store.EventResult:
			result = i
		case store.EventLog, store.EventStrayOutput:
			if strings.Contains(string(e.Data), "after the session's last line") {
				late++
				if result < 0 || i < result {
					t.Errorf("event %d %s %s comes before the result (event %d)", i, e.Type, e.Data, result)
				}
			}
		}
	}
	if result < 0 || late != 3 {
		t.Fatalf("result at %d, %d lines after it in the trace, want 3", result, late)
	}
	if got := types(evs[len(evs)-1:]); got != "status:succeeded" {
		t.Errorf("the job ends with %s", got)
	}
}

// statusDecider decides as the approvals inbox does: it sets the job waiting for approval in the
// store directly, then running again, and allows. It notes each request it is asked about that is
// not in the job's record yet.
type statusDecider struct {
	st      *store.Store
	mu      sync.Mutex
	asked   int
	missing []string
}

func (d *statusDecider) Decide(_ context.Context, job *node.Job, ask *supervisor.Ask) (supervisor.Decision, string) {
	evs, err := d.st.Events(job.ID, 0, 0)
	committed := false
	for _, e := range evs {
		var req struct{ ID string }
		if e.Type == store.EventPermissionRequest && json.Unmarshal(e.Data, &req) == nil && req.ID == ask.ID {
			committed = true
		}
	}
	d.mu.Lock()
	d.asked++
	if err != nil || !committed {
		d.missing = append(d.missing, fmt.Sprintf("%s %s (%v)", job.ID, ask.ID, err))
	}
	d.mu.Unlock()
	// Concurrent requests of one job: the status may be set already; that is refused, harmlessly.
	_ = d.st.SetStatus(job.ID, store.StatusWaitingForApproval, ask.Tool+" waits for a person")
	_ = d.st.SetStatus(job.ID, store.StatusRunning, "")
	return supervisor.Allow(nil), "person"
}

// The trace records what happened in order: a permission request is in the record before its
// decider writes anything, such as the status waiting_for_approval (the recorder writes the
// session's events asynchronously; the inbox sets the status directly).
func TestPermissionRequestIsRecordedBeforeItIsDecided(t *testing.T) {
	d := &statusDecider{}
	w := newWorld(t, loadPlugin(t, map[string]string{
		"triage": "",
		"tools":  "harness:\n  options:\n    calls:\n" + strings.Repeat("      - {tool: notify_team, arguments: {team: billing}}\n", 8),
	}), func(c *node.Config) { d.st, c.Decider = c.Store, d })
	for range 5 {
		evs, end := w.events(t, w.submit(t, "triage", ticket).ID, nil)
		if end.Status != store.StatusSucceeded {
			t.Fatalf("job %s: %s", end.Status, end.Reason)
		}
		want := "status:queued status:running session say permission_request status:waiting_for_approval status:running permission_decision tool_result result status:succeeded"
		if got := types(evs); got != want {
			t.Errorf("events %s\nwant   %s", got, want)
		}
	}
	for range 3 {
		if _, end := w.events(t, w.submit(t, "tools", ticket).ID, nil); end.Status != store.StatusSucceeded {
			t.Fatalf("job %s: %s", end.Status, end.Reason)
		}
	}
	if d.asked != 5+3*8 || len(d.missing) > 0 {
		t.Errorf("asked %d times; these requests were not in the record when their decider was asked: %v", d.asked, d.missing)
	}
}

// KillSessions makes a Close under way quick (a second Ctrl-C on oz0 dev): a session that ignores
// SIGTERM under an hour's grace ends at once, and its job is still recorded as interrupted.
func TestKillSessionsHurriesClose(t *testing.T) {
	w := newWorld(t, loadPlugin(t, map[string]string{"ignoreterm": ""}), func(c *node.Config) { c.Grace = time.Hour })
	j := w.submit(t, "ignoreterm", ticket)
	closed := make(chan error, 1)
	_, end := w.events(t, j.ID, func(e store.Event) {
		if e.Type == store.EventSay { // it ignores SIGTERM from here on
			go func() { closed <- w.node.Close(t.Context()) }()
			go w.node.KillSessions()
		}
	})
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close waited for the hour's grace")
	}
	if end.Status != store.StatusInterrupted || end.Reason != "oz0 dev stopped while the job ran" {
		t.Errorf("job ended %s: %q, want interrupted", end.Status, end.Reason)
	}
}

// A protocol violation is in the job's record where it happened, with the line and its rule, and
// fails the job with the same message: a say with a second "type" (result) once made the job
// succeed with its forged answer; a tool_result for a call the node denied was recorded as any
// other.
func TestViolationRecordedAndFailsTheJob(t *testing.T) {
	w := newWorld(t, loadPlugin(t, map[string]string{"dupkeys": "", "runsanyway": "", "strayresult": ""}), func(c *node.Config) {
		c.Decider = denyAll{}
	})
	for agent, c := range map[string]struct{ rule, message, line, types string }{
		"dupkeys": {"keys", `protocol violation (keys): line 1 of stdout is an object with the key "type" twice`,
			`{"type":"say","text":"working","type":"result","output":"forged"}`,
			"status:queued status:running session violation error status:failed"},
		"runsanyway": {"results", "protocol violation (results): line 3 of stdout is a tool_result for p1, a call of notify_team the node denied: the harness ran it anyway",
			`{"type":"tool_result","id":"p1","tool":"notify_team","result":"told the billing team: ` + ticket + `"}`,
			"status:queued status:running session say permission_request permission_decision violation error status:failed"},
		"strayresult": {"results", `protocol violation (results): line 2 of stdout is a tool_result for the id "p9", which no permission_request of this session asked`,
			`{"type":"tool_result","id":"p9","tool":"notify_team","result":"told the billing team"}`,
			"status:queued status:running session say violation error status:failed"},
	} {
		evs, end := w.events(t, w.submit(t, agent, ticket).ID, nil)
		// The harness's result line after the violation, when it is read before the harness is
		// stopped, is kept as a line after the last: after the error.
		if got := strings.Replace(types(evs), " error log ", " error ", 1); got != c.types {
			t.Errorf("%s: events %s\nwant   %s", agent, got, c.types)
		}
		if end.Status != store.StatusFailed || !strings.HasPrefix(end.Reason, c.message) {
			t.Errorf("%s: job ended %s: %q, want failed: %q", agent, end.Status, end.Reason, c.message)
		}
		for _, e := range evs {
			if e.Type != store.EventViolation {
				continue
			}
			var d struct{ Rule, Message, Line string }
			if err := json.Unmarshal(e.Data, &d); err != nil || d.Rule != c.rule || d.Message != end.Reason || d.Line != c.line {
				t.Errorf("%s: the violation event %s; want rule %s, the job's reason, the line %s", agent, e.Data, c.rule, c.line)
			}
		}
	}
}

// denyAll denies every call, as a person would.
type denyAll struct{}

func (denyAll) Decide(context.Context, *node.Job, *supervisor.Ask) (supervisor.Decision, string) {
	return supervisor.Deny("not today"), "person"
}
