package node

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/devserver/store"
	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/internal/textclip"
	"github.com/orchestrator-zero/oz0/internal/traceback"
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
		// Its end is the node's to record still (and its own: nothing else may decide it).
		n.finish(job.ID, store.StatusFailed, "the job could not start: "+err.Error(), nil)
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
	job.rec = newRecorder(n.cfg.Store, job.ID, n.cfg.Logger, func(events, bytes int, err error) { n.lose(job, events, bytes, err) })
	job.says = n.cfg.SayStream()
	sess, how, err := n.ahead.Start(context.Background(), spec)
	if err == nil {
		// How the session was made comes first in what the session did.
		job.rec.add(store.EventSession, how)
	}
	if err != nil {
		job.rec.close()
		n.endJob(job, store.StatusFailed, "the harness could not start: "+err.Error(), nil, event(store.EventError, map[string]any{"message": err.Error()}))
		return
	}
	job.mu.Lock()
	job.session = sess
	cancelled = job.cancel
	lost := job.lost.decides
	job.mu.Unlock()
	// Close cancels the sessions it finds; one set after it looked is cancelled here, and one
	// whose events could not be recorded before it was set is stopped.
	n.mu.Lock()
	closing = n.closed
	n.mu.Unlock()
	switch {
	case lost:
		sess.Kill()
	case cancelled || closing:
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
	var evs []store.NewEvent
	st, reason, output := n.endOf(job, end, func(typ string, data any) { evs = append(evs, event(typ, data)) })
	if len(evs) > 0 {
		n.appendEnd(job, evs)
	}
	n.endJob(job, st, reason, output)
}

// endOf decides the job's end from its session's, adding the events that go before its status.
func (n *Node) endOf(job *Job, end harnesskit.End, add func(typ string, data any)) (store.Status, string, json.RawMessage) {
	if rp := job.opts.Replay; rp != nil && end.Status != harnesskit.Cancelled {
		if d := rp.Divergence(); d != "" {
			reason := "replay: " + d
			add(store.EventError, map[string]any{"message": reason})
			return store.StatusFailed, reason, nil
		}
		if w := rp.WentUpstream(); w != "" {
			add(store.EventLog, map[string]any{"level": "warning", "message": apiv1.ReplayWentUpstream + w})
		}
	}
	if end.StderrDropped > 0 && end.StderrTail != "" {
		// Lines of stderr were left out of the trace (over its budget): the end of stderr, which
		// says most about how the session ended, is kept here, as the notes of what was left out
		// say.
		add(store.EventStderr, map[string]any{
			"note": fmt.Sprintf("the last %d bytes of stderr (of %d), as the session ended", len(end.StderrTail), end.StderrBytes),
			"tail": end.StderrTail,
		})
	}
	switch end.Status {
	case harnesskit.Completed:
		output := json.RawMessage(n.cfg.Mask(end.Output))
		add(store.EventResult, map[string]any{"output": output})
		afterLast(job, add)
		if reason := jobspec.CheckOutput(job.Agent, output); reason != "" {
			add(store.EventError, map[string]any{"message": reason})
			return store.StatusFailed, reason, nil
		}
		return store.StatusSucceeded, "", output
	case harnesskit.Cancelled:
		job.mu.Lock()
		byUser := job.cancel
		job.mu.Unlock()
		if !byUser { // the node is closing: the dev server stopped under the job
			return store.StatusInterrupted, "oz0 dev stopped while the job ran", nil
		}
		reason := StoppedOnRequest
		if end.Killed {
			reason += fmt.Sprintf("; the harness did not exit within %s of SIGTERM, so its processes were killed", cmp.Or(n.cfg.Grace, supervisor.DefaultGrace))
		}
		return store.StatusCancelled, reason, nil
	case harnesskit.TimedOut:
		add(store.EventError, map[string]any{"message": end.Reason})
		return store.StatusTimedOut, end.Reason, nil
	}
	// Failed (with its error line, or without), ProtocolViolation
	reason := end.Reason // a violation's names its rule
	if end.Status == harnesskit.Failed && end.Message != "" {
		reason = end.Message
	}
	data := map[string]any{}
	if end.Status == harnesskit.Failed {
		// The traceback the harness died with, kept on the job (oz0 run, oz0 job show and the UI
		// show its frames), its paths in the plugin relative to it as the author reads them.
		if tb := traceback.Last(end.StderrTail); tb != nil {
			dir := job.Plugin.Dir + string(filepath.Separator)
			for i, l := range tb {
				tb[i] = strings.ReplaceAll(strings.ReplaceAll(l, "file://"+dir, ""), dir, "")
			}
			data["traceback"] = tb
		}
		// A module the harness imports is not installed: the failure says how to have it, as
		// oz0 plugin test and oz0 doctor do (supervisor.MissingMend, the one place that decides).
		lines := strings.Split(strings.TrimSpace(end.StderrTail), "\n")
		missing := cmp.Or(supervisor.MissingModule(end.Message), supervisor.MissingModule(strings.Join(lines[max(0, len(lines)-25):], "\n")))
		if missing != "" {
			if !strings.Contains(reason, missing) {
				reason += ": " + missing
			}
			reason += "; a module the harness imports is not installed in the plugin's environment: " + supervisor.MissingMend(job.Plugin.Dir, missing)
		}
	}
	data["message"] = reason
	add(store.EventError, data)
	afterLast(job, add)
	return store.StatusFailed, reason, nil
}

// afterLast adds what the harness wrote after its last line, kept until that was.
func afterLast(job *Job, add func(typ string, data any)) {
	for _, ev := range job.afterLast {
		add(ev.typ, ev.data)
	}
	if job.leftOut > 0 {
		add(store.EventLog, map[string]any{"level": "warning",
			"message": fmt.Sprintf("%d more lines after the session's last line were not kept", job.leftOut)})
	}
}

// event is an event to record. The node's data always encodes (its own maps and values); what
// would not is null.
func event(typ string, data any) store.NewEvent {
	b, err := json.Marshal(data)
	if err != nil {
		b = nil
	}
	return store.NewEvent{Type: typ, Data: b}
}

// appendEnd records the events of a job's end, before its status. Events the store cannot take
// are lost (lose), and so are these once the job has lost some: they would come after its gap.
func (n *Node) appendEnd(job *Job, evs []store.NewEvent) {
	job.mu.Lock()
	failed := job.lost.err != nil
	job.mu.Unlock()
	var err error
	if !failed {
		if _, err = n.cfg.Store.AppendBatch(job.ID, evs); err == nil || errors.Is(err, store.ErrClosed) {
			return
		}
		n.cfg.Logger.Error("events not recorded: the job fails", "job", job.ID, "events", len(evs), "err", err)
	}
	size := 0
	for _, e := range evs {
		size += len(e.Data)
	}
	n.lose(job, len(evs), size, err)
}

// lose counts events of job that could not be recorded. The first loss decides the job's end,
// unless a cancel or the node's stop decided it before: its session is stopped at once (nothing
// it says could be kept), and the job fails saying why. Either way its record marks the gap
// where the events went (endJob).
func (n *Node) lose(job *Job, events, bytes int, err error) {
	n.mu.Lock()
	closing := n.closed
	n.mu.Unlock()
	job.mu.Lock()
	first := job.lost.err == nil && err != nil
	job.lost.events += events
	job.lost.bytes += bytes
	if first {
		job.lost.err = err
		job.lost.decides = !job.cancel && !closing
	}
	kill := first && job.lost.decides
	sess := job.session
	job.mu.Unlock()
	if kill && sess != nil {
		sess.Kill()
	}
}

// Lost tells the node that events of a live job could not be recorded by a writer other than its
// recorder (the gateway's meter, with the job's model calls): the job fails as when its own
// events could not be.
func (n *Node) Lost(id string, events, bytes int, err error) {
	n.mu.Lock()
	job := n.running[id]
	n.mu.Unlock()
	if job != nil && err != nil {
		n.lose(job, events, bytes, err)
	}
}

// endJob records the end of a job whose session has run (or could not start), with its last
// events. When events of the job could not be recorded, its record says how many before its end
// (a warning log event with "gap"), and, when that decided its end, it fails saying why, whatever
// its session said.
func (n *Node) endJob(job *Job, st store.Status, reason string, output json.RawMessage, last ...store.NewEvent) {
	job.mu.Lock()
	lost := job.lost
	job.mu.Unlock()
	if lost.err == nil {
		n.finish(job.ID, st, reason, output, last...)
		return
	}
	gap := event(store.EventLog, map[string]any{"level": "warning", "gap": map[string]int{"events": lost.events, "bytes": lost.bytes},
		"message": fmt.Sprintf("%s of the session (%s) were not recorded: %v", plural(lost.events, "event"), textclip.SizeName(int64(lost.bytes)), lost.err)})
	if !lost.decides {
		n.finish(job.ID, st, reason, output, append([]store.NewEvent{gap}, last...)...)
		return
	}
	reason = "its events could not be recorded, so its session was stopped: " + lost.err.Error()
	n.finish(job.ID, store.StatusFailed, reason, nil, gap, event(store.EventError, map[string]any{"message": reason}))
}

// finish records a job's end, with its last events. A job's end is decided once: when the store
// cannot write it, the node keeps it and tries again, in the background (a cancel that ends a
// queued job answers at once), and nothing decides the job again meanwhile (Cancel leaves a job
// that is ending), until it is written or the node closes (the next start marks the job
// interrupted then).
func (n *Node) finish(job string, st store.Status, reason string, output json.RawMessage, last ...store.NewEvent) {
	err := n.cfg.Store.FinishJobWith(job, st, reason, output, last...)
	if err == nil {
		n.ended(job)
		return
	}
	if !retryable(err) {
		if !errors.Is(err, store.ErrClosed) {
			n.cfg.Logger.Error("could not record a job's end", "job", job, "err", err)
		}
		return
	}
	n.cfg.Logger.Error("could not record a job's end; trying again", "job", job, "err", err)
	n.mu.Lock()
	n.ending[job] = true
	n.wg.Add(1)
	n.mu.Unlock()
	go func() {
		defer n.wg.Done()
		defer func() {
			n.mu.Lock()
			delete(n.ending, job)
			n.mu.Unlock()
		}()
		for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
			select {
			case <-n.stop:
				return
			case <-time.After(wait):
			}
			err := n.cfg.Store.FinishJobWith(job, st, reason, output, last...)
			if err == nil {
				n.cfg.Logger.Info("recorded a job's end", "job", job, "status", st)
				n.ended(job)
				return
			}
			if !retryable(err) {
				return
			}
		}
	}()
}

// retryable: the store could not write a job's end (a full disk, an I/O error), as opposed to
// refusing it.
func retryable(err error) bool {
	return !errors.Is(err, store.ErrClosed) && !errors.Is(err, store.ErrIllegalTransition) &&
		!errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrInvalid)
}

// ended is told once a job's end is recorded.
func (n *Node) ended(job string) {
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
	ending := n.ending[id]
	n.mu.Unlock()
	if ending {
		return true // its end is decided, and being recorded
	}
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
	if !n.closed {
		close(n.stop)
	}
	n.closed = true
	if n.recheck != nil {
		n.recheck.Stop()
		n.recheck = nil
	}
	queued := n.queue
	n.queue = nil
	n.queued.Store(0)
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
