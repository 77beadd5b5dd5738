package node

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/devserver/store"
	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/supervisor"
	"github.com/orchestrator-zero/oz0/supervisor/jobspec"
	"github.com/orchestrator-zero/oz0/telemetry"
)

// run runs job's session to its end and records it.
func (n *Node) run(job *Job) {
	defer n.wg.Done()
	defer n.release(job)
	job.mu.Lock()
	cancelled := job.cancel
	job.mu.Unlock()
	n.mu.Lock()
	closing := n.closed
	n.mu.Unlock()
	switch {
	case cancelled:
		n.finish(job.ID, store.StatusCancelled, StoppedOnRequest+" before it started", nil)
		return
	case closing:
		n.finish(job.ID, store.StatusInterrupted, "oz0 dev stopped before the job started", nil)
		return
	}
	if err := n.cfg.Store.SetStatus(job.ID, store.StatusRunning, ""); err != nil {
		n.cfg.Logger.Error("job could not start", "job", job.ID, "err", err)
		return
	}
	grant := job.spec.Grant()
	grant.Recording = (n.cfg.Record || job.opts.Record) && !job.opts.NoRecord
	if job.opts.Replay != nil {
		grant.Replay = job.opts.Replay
	}
	key := n.cfg.Keys.Issue(grant)
	// Deferred calls run last first: revoke the job's keys, then forget its account, so that no
	// call can land between them and make the account anew.
	defer n.cfg.Gateway.Forget(job.ID)
	defer n.cfg.Keys.RevokeJob(job.ID)

	spec := job.spec.Spec(n.cfg.GatewayURL, key, n.Sandbox(job.Plugin.Dir))
	n.nodeSpec(&spec)
	if n.cfg.ReceiveSpans {
		// The gateway's OTLP receiver takes the session's own spans under its key, as children
		// of the job's span.
		spec.Env.Traceparent = telemetry.Traceparent(job.ID)
		spec.Env.OTLPHeaders = "authorization=Bearer%20" + key
	}
	spec.Decider = supervisor.DeciderFunc(func(ctx context.Context, ask *supervisor.Ask) supervisor.Decision { return n.decide(ctx, job, ask) })
	spec.Sink = func(ev harnesskit.Event) { n.record(job, ev) }
	job.rec = newRecorder(n.cfg.Store, job.ID, n.cfg.Logger)
	job.says = n.cfg.SayStream()
	sess, how, err := n.ahead.Start(context.Background(), spec)
	if err == nil {
		// How the session was made comes first in what the session did.
		job.rec.add(store.EventSession, how)
	}
	if err != nil {
		job.rec.close()
		n.append(job.ID, store.EventError, map[string]any{"message": err.Error()})
		n.finish(job.ID, store.StatusFailed, "the harness could not start: "+err.Error(), nil)
		return
	}
	job.mu.Lock()
	job.session = sess
	cancelled = job.cancel
	job.mu.Unlock()
	// Close cancels the sessions it finds; one set after it looked is cancelled here.
	n.mu.Lock()
	closing = n.closed
	n.mu.Unlock()
	if cancelled || closing {
		sess.Cancel()
	}
	end := sess.Wait()
	job.rec.close()
	if n.cfg.BeforeEnd != nil {
		n.cfg.BeforeEnd(job.ID)
	}
	n.end(job, end)
}

// decide asks the node's Decider and remembers who decided, for the trace. The request is
// committed first: a decider writes to the job's record directly (the approvals inbox sets the
// job waiting for approval), and the trace must have the request before what it led to.
func (n *Node) decide(ctx context.Context, job *Job, ask *supervisor.Ask) supervisor.Decision {
	job.rec.flush()
	d, who := n.cfg.Decider.Decide(ctx, job, ask)
	// Whether the arguments changed is known here, where both are: the node keeps no request's
	// arguments for its decision (a call's may be megabytes).
	changed := d.Allow && d.Arguments != nil && !sameJSON(d.Arguments, ask.Arguments)
	job.mu.Lock()
	job.deciders[ask.ID], job.changed[ask.ID] = who, changed
	job.mu.Unlock()
	return d
}

// record writes one session event to the store; the store commits it before anyone sees it.
func (n *Node) record(job *Job, ev harnesskit.Event) {
	switch m := ev.Message.(type) {
	case harnesskit.Say:
		if ev.Kind == harnesskit.EventSay {
			if text := job.says.Write(m.Text); text != "" {
				job.add(store.EventSay, sayJSON(text)) // the hot path: encoded without reflection
			}
			return
		}
	case harnesskit.PermissionRequest:
		if ev.Kind == harnesskit.EventPermissionRequest {
			job.mu.Lock()
			job.tools[m.ID] = m.Tool
			job.mu.Unlock()
			job.add(store.EventPermissionRequest, eventData(member{"arguments", m.Arguments}, member{"id", m.ID}, member{"tool", m.Tool}))
			return
		}
	case harnesskit.Permission:
		if ev.Kind == harnesskit.EventPermission {
			job.add(store.EventPermissionDecision, n.decisionData(job, m, ev.By))
			return
		}
	case harnesskit.ToolResult:
		if ev.Kind == harnesskit.EventToolResult {
			if m.Error != "" {
				job.add(store.EventToolResult, eventData(member{"error", m.Error}, member{"id", m.ID}, member{"tool", m.Tool}))
			} else {
				job.add(store.EventToolResult, eventData(member{"id", m.ID}, member{"result", m.Result}, member{"tool", m.Tool}))
			}
			return
		}
	case harnesskit.Log:
		if ev.Kind == harnesskit.EventLog {
			d := map[string]any{"level": m.Level, "message": m.Message}
			if ev.More || job.logs != nil {
				// A long log read in pieces: its pieces are masked as one text, as the says are,
				// and each but the last says that more of it follows.
				if job.logs == nil {
					job.logs = n.cfg.SayStream()
				}
				text := job.logs.Write(m.Message)
				if ev.More {
					d["more"] = true
				} else {
					text += job.logs.Flush()
					job.logs = nil
				}
				d["message"] = text
			}
			job.add(store.EventLog, d)
			return
		}
	case harnesskit.Result, harnesskit.ErrorMessage:
		if ev.Kind == harnesskit.EventResult || ev.Kind == harnesskit.EventError {
			// The end records the last line, after the model calls still being metered; what
			// the says held back comes before it, and what follows it (ignored lines, stderr) is
			// kept to come after it.
			job.flushSays()
			job.last = true
			return
		}
	}
	switch ev.Kind {
	case harnesskit.EventEnd:
		job.flushSays()
		if job.logs != nil { // a long log cut short by the session's end
			if text := job.logs.Flush(); text != "" {
				job.add(store.EventLog, map[string]any{"level": "info", "message": text})
			}
			job.logs = nil
		}
	case harnesskit.EventStray:
		job.add(store.EventStrayOutput, map[string]any{"line": ev.Text, "note": ev.Note})
	case harnesskit.EventViolation:
		// The line that ended the session, as a last line does: what the says held back comes
		// before it, what follows it after the job's error.
		job.flushSays()
		d := map[string]any{"rule": ev.Rule, "message": ev.Note}
		if ev.Text != "" {
			d["line"] = ev.Text
		}
		job.add(store.EventViolation, d)
		job.last = true
	case harnesskit.EventIgnored:
		job.add(store.EventLog, map[string]any{"level": "warning", "message": "ignored a line: " + ev.Note, "line": ev.Text})
	case harnesskit.EventStderr:
		if ev.Text == "" {
			job.add(store.EventStderr, map[string]any{"note": ev.Note})
		} else {
			job.add(store.EventStderr, map[string]any{"line": ev.Text})
		}
	}
}

func (n *Node) decisionData(job *Job, m harnesskit.Permission, by string) json.RawMessage {
	job.mu.Lock()
	tool, changed := job.tools[m.ID], job.changed[m.ID]
	if by == harnesskit.ByDecider {
		by = job.deciders[m.ID]
	} else {
		by = "node" // rule 1, default-deny: a tool the agent does not list
	}
	job.mu.Unlock()
	if m.Allow {
		return eventData(member{"arguments", m.Arguments}, member{"by", by}, member{"changed", changed},
			member{"decision", "allow"}, member{"id", m.ID}, member{"tool", tool})
	}
	return eventData(member{"by", by}, member{"decision", "deny"}, member{"id", m.ID}, member{"reason", m.Reason}, member{"tool", tool})
}

// end records the session's end as the job's: the last line the harness wrote, what came after
// it, and the job's status. A replayed job whose session departed from its recording fails with
// how it departed, however the session ended.
func (n *Node) end(job *Job, end harnesskit.End) {
	if rp := job.opts.Replay; rp != nil && end.Status != harnesskit.Cancelled {
		if d := rp.Divergence(); d != "" {
			reason := "replay: " + d
			n.append(job.ID, store.EventError, map[string]any{"message": reason})
			n.finish(job.ID, store.StatusFailed, reason, nil)
			return
		}
		if w := rp.WentUpstream(); w != "" {
			n.append(job.ID, store.EventLog, map[string]any{"level": "warning", "message": apiv1.ReplayWentUpstream + w})
		}
	}
	if end.StderrDropped > 0 && end.StderrTail != "" {
		// Lines of stderr were left out of the trace (over its budget): the end of stderr, which
		// says most about how the session ended, is kept here, as the notes of what was left out
		// say.
		n.append(job.ID, store.EventStderr, map[string]any{
			"note": fmt.Sprintf("the last %d bytes of stderr (of %d), as the session ended", len(end.StderrTail), end.StderrBytes),
			"tail": end.StderrTail,
		})
	}
	switch end.Status {
	case harnesskit.Completed:
		output := json.RawMessage(n.cfg.Mask(end.Output))
		n.append(job.ID, store.EventResult, map[string]any{"output": output})
		n.appendAfterLast(job)
		if reason := jobspec.CheckOutput(job.Agent, output); reason != "" {
			n.append(job.ID, store.EventError, map[string]any{"message": reason})
			n.finish(job.ID, store.StatusFailed, reason, nil)
			return
		}
		n.finish(job.ID, store.StatusSucceeded, "", output)
	case harnesskit.Cancelled:
		job.mu.Lock()
		byUser := job.cancel
		job.mu.Unlock()
		if !byUser { // the node is closing: the dev server stopped under the job
			n.finish(job.ID, store.StatusInterrupted, "oz0 dev stopped while the job ran", nil)
			return
		}
		reason := StoppedOnRequest
		if end.Killed {
			reason += fmt.Sprintf("; the harness did not exit within %s of SIGTERM, so its processes were killed", cmp.Or(n.cfg.Grace, supervisor.DefaultGrace))
		}
		n.finish(job.ID, store.StatusCancelled, reason, nil)
	case harnesskit.TimedOut:
		n.append(job.ID, store.EventError, map[string]any{"message": end.Reason})
		n.finish(job.ID, store.StatusTimedOut, end.Reason, nil)
	default: // Failed (with its error line, or without), ProtocolViolation
		reason := end.Reason // a violation's names its rule
		if end.Status == harnesskit.Failed && end.Message != "" {
			reason = end.Message
		}
		if end.Status == harnesskit.Failed {
			// A module the harness imports is not installed: the failure says how to install
			// it, as oz0 plugin test and oz0 doctor do.
			lines := strings.Split(strings.TrimSpace(end.StderrTail), "\n")
			missing := cmp.Or(supervisor.MissingModule(end.Message), supervisor.MissingModule(strings.Join(lines[max(0, len(lines)-25):], "\n")))
			if missing != "" {
				if !strings.Contains(reason, missing) {
					reason += ": " + missing
				}
				reason += "; a module the harness imports is not installed in the plugin's environment: " + supervisor.InstallMend(job.Plugin.Dir, supervisor.IsPythonMissing(missing))
			}
		}
		n.append(job.ID, store.EventError, map[string]any{"message": reason})
		n.appendAfterLast(job)
		n.finish(job.ID, store.StatusFailed, reason, nil)
	}
}

// appendAfterLast records what the harness wrote after its last line, kept until that was.
func (n *Node) appendAfterLast(job *Job) {
	for _, ev := range job.afterLast {
		n.append(job.ID, ev.typ, ev.data)
	}
	if job.leftOut > 0 {
		n.append(job.ID, store.EventLog, map[string]any{"level": "warning",
			"message": fmt.Sprintf("%d more lines after the session's last line were not kept", job.leftOut)})
	}
}

func (n *Node) append(job, typ string, data any) {
	b, err := json.Marshal(data)
	if err == nil {
		_, err = n.cfg.Store.Append(job, typ, b)
	}
	if err != nil && !errors.Is(err, store.ErrClosed) {
		n.cfg.Logger.Error("could not record an event", "job", job, "type", typ, "err", err)
	}
}

func (n *Node) finish(job string, st store.Status, reason string, output json.RawMessage) {
	if err := n.cfg.Store.FinishJob(job, st, reason, output); err != nil && !errors.Is(err, store.ErrClosed) {
		n.cfg.Logger.Error("could not record a job's end", "job", job, "err", err)
		return
	}
	if n.cfg.AfterEnd != nil {
		n.cfg.AfterEnd(job)
	}
}

// StoppedOnRequest is the reason of a job cancelled by a person (oz0 job cancel, Ctrl-C in oz0
// run, the dev UI): the status says cancelled, the reason says how.
const StoppedOnRequest = "stopped on request"

// Cancel cancels a live job: SIGTERM to its session's process group, a grace period, SIGKILL;
// its model calls in flight are cut. It reports whether the job was live here.
func (n *Node) Cancel(id string) bool {
	n.mu.Lock()
	job := n.running[id]
	queued := job != nil && n.unqueueLocked(job)
	n.mu.Unlock()
	if job == nil {
		return false
	}
	if queued {
		n.endQueued(job, store.StatusCancelled, StoppedOnRequest+" before it started")
		return true
	}
	n.cfg.Gateway.Kill(id)
	job.mu.Lock()
	job.cancel = true
	sess := job.session
	job.mu.Unlock()
	if sess != nil {
		sess.Cancel()
	}
	return true
}

// Running returns the ids of the live jobs.
func (n *Node) Running() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	ids := make([]string, 0, len(n.running))
	for id := range n.running {
		ids = append(ids, id)
	}
	return ids
}

// KillSessions ends every running session at once, without its grace period (supervisor's
// Kill): a node that Close is stopping, told to hurry (a second Ctrl-C on oz0 dev). Their jobs
// end as Close ends them.
func (n *Node) KillSessions() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, job := range n.running {
		job.mu.Lock()
		if sess := job.session; sess != nil {
			sess.Kill()
		}
		job.mu.Unlock()
	}
}

// Close cancels every live job and waits for them to end, at most until ctx is done.
func (n *Node) Close(ctx context.Context) error {
	n.ahead.Close()
	n.mu.Lock()
	n.closed = true
	queued := n.queue
	n.queue = nil
	for _, job := range queued {
		delete(n.running, job.ID)
	}
	for _, job := range n.running {
		job.mu.Lock()
		if sess := job.session; sess != nil {
			sess.Cancel()
		}
		job.mu.Unlock()
	}
	n.mu.Unlock()
	for _, job := range queued {
		n.endQueued(job, store.StatusInterrupted, "oz0 dev stopped before the job started")
	}
	done := make(chan struct{})
	go func() { n.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(2 * time.Minute):
		return errors.New("jobs did not end")
	}
}

type sayData struct {
	Text string `json:"text"`
}
