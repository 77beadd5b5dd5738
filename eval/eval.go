// Package eval is the engine of `oz0 eval`: it runs the cases of a plugin's eval files
// (evals/*.yaml, package evalfile) as jobs of a dev server (one of its own, or the running oz0
// dev), each answered from its recording, a fake model script or the live model records, and
// checks what each case asserts of its job: the output, the tools called and refused, the usage,
// the status. It records cases (--record, --update) and compares a run with an earlier one
// (Compare). The reports' formats are in report.go.
//
// Decisions a reader would otherwise reverse-engineer:
//   - A case runs through the dev server's API as any job does, so its model calls go through
//     the gateway (metered, limited) and its tools through the node's rules; a recording is
//     replayed as `oz0 job replay` replays one, so a case whose agent now asks something the
//     recording does not have fails with the same diff.
//   - All cases are submitted at once; the node runs as many at once as its session limit lets
//     (oz0 eval --jobs is that limit), and a case's duration is its session's, not its wait.
//   - A case without a status assertion must succeed: a failed job is a failed case.
package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/fakemodel"
	"github.com/orchestrator-zero/oz0/internal/textclip"
	"github.com/orchestrator-zero/oz0/lint/evalfile"
)

// Server is what the engine needs of a dev server: its control API (internal/client.Client).
type Server interface {
	CreateJob(ctx context.Context, r apiv1.JobRequest) (apiv1.Job, error)
	Job(ctx context.Context, id string) (apiv1.Job, error)
	Calls(ctx context.Context, id string) (apiv1.Calls, error)
	Events(ctx context.Context, job string, after int64, fn func(apiv1.Event) error, reconnects func(error)) error
	Cancel(ctx context.Context, id string) (apiv1.Job, error)
	Approvals(ctx context.Context, all bool) ([]apiv1.Approval, error)
	Approve(ctx context.Context, id, scope string) (apiv1.Approval, *apiv1.Rule, error)
	Deny(ctx context.Context, id, reason string) (apiv1.Approval, error)
}

// Mode is where the cases' model answers come from.
type Mode int

// The modes.
const (
	Offline Mode = iota // each case's recording or script; a live case is skipped
	Live                // the live model records, for every case (--live)
	Record              // live for the cases whose recording is missing, which are written (--record)
	Update              // live for every recorded case, its recording rewritten (--update)
)

// Options tune a run.
type Options struct {
	Mode Mode
	// Progress is told of each case as it ends; may be nil.
	Progress func(Result)
	// Inbox is true when a person may answer the approvals in the server's inbox (oz0 eval
	// --dev): a case that says nothing of its approvals then waits for that person, and Note is
	// told so; else such a case fails at once, as nobody could answer.
	Inbox bool
	// Note is told what a person should know while the cases run; may be nil.
	Note func(string)
}

// File is an eval file to run: its parsed content and where it is.
type File struct {
	*evalfile.File
	Path string // on disk
	Dir  string // its directory: recordings and scripts are relative to it
}

// Case statuses.
const (
	Passed      = "passed"
	Failed      = "failed"
	Skipped     = "skipped"
	Interrupted = "interrupted" // stopped before it ended: the run was interrupted (Ctrl-C)
)

// Failure is one assertion that did not hold, at its place in the eval file.
type Failure struct {
	Kind    string `json:"kind"` // the assertion's key, or "job" for the job itself
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Message string `json:"message"`
}

// Result is how a case went.
type Result struct {
	File       string    `json:"file"`
	Case       string    `json:"case"`
	Line       int       `json:"line"`
	Col        int       `json:"col"`
	Status     string    `json:"status"`
	Source     string    `json:"source"` // recording, script or live
	Job        string    `json:"job,omitempty"`
	JobStatus  string    `json:"job_status,omitempty"`
	Failures   []Failure `json:"failures,omitempty"`
	Notes      []string  `json:"notes,omitempty"` // why it was skipped, a recording not written
	ModelCalls int64     `json:"model_calls"`
	Tokens     int64     `json:"tokens"`
	CostUSD    float64   `json:"cost_usd"`
	DurationMS int64     `json:"duration_ms"`
	Recorded   string    `json:"recorded,omitempty"` // the recording written
	// Output is the job's output, for a reader of --json.
	Output any `json:"output,omitempty"`
}

// Report is every case of a run, in the files' order.
type Report struct {
	// Plugins and OZ0Version say what ran (the plugins whose cases the run has, in the order
	// given): Merge refuses reports that differ in them.
	Plugins    []PluginRef `json:"plugins,omitempty"`
	OZ0Version string      `json:"oz0_version,omitempty"`
	// Shard is the part of the run's cases this report has (oz0 eval --shard); nil: all.
	Shard   *Shard   `json:"shard,omitempty"`
	Results []Result `json:"cases"`
}

// PluginRef names the plugin a report is of.
type PluginRef struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Counts counts the cases by status.
func (r *Report) Counts() Tally {
	var t Tally
	for _, c := range r.Results {
		switch c.Status {
		case Passed:
			t.Passed++
		case Failed:
			t.Failed++
		case Interrupted:
			t.Interrupted++
		default:
			t.Skipped++
		}
	}
	return t
}

// Tally is how many cases ended each way.
type Tally struct{ Passed, Failed, Skipped, Interrupted int }

// EnvError is an error of the environment a case needs (a recording that cannot be read or
// written, a server that fails): the run stops.
type EnvError struct{ Err error }

func (e *EnvError) Error() string { return e.Err.Error() }
func (e *EnvError) Unwrap() error { return e.Err }

// Run runs every case of files on srv and checks them. Cases are submitted at once and run as the
// server's session limit lets. An error is the environment's; a case that fails is a Result.
// Interrupted (ctx ends), it returns the report of what ran, the cases it stopped marked
// Interrupted, with an *InterruptedError.
func Run(ctx context.Context, srv Server, files []*File, opts Options) (*Report, error) {
	type slot struct {
		f *File
		c *evalfile.Case
	}
	var slots []slot
	for _, f := range files {
		for _, c := range f.Cases {
			slots = append(slots, slot{f, c})
		}
	}
	results := make([]Result, len(slots))
	errs := make([]error, len(slots))
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, s := range slots {
		wg.Go(func() {
			r, err := runCase(ctx, srv, s.f, s.c, opts)
			results[i], errs[i] = r, err
			if err == nil && opts.Progress != nil {
				mu.Lock()
				opts.Progress(r)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		// The cases that ended are reported as they went; those cut short, one line each, as
		// stopped: one line of the command says how many.
		ended := 0
		for i, s := range slots {
			if errs[i] == nil && results[i].Status != "" {
				ended++
				continue
			}
			results[i] = Result{File: s.f.Name, Case: s.c.Name, Line: s.c.Line, Col: s.c.Col, Source: string(s.c.Source),
				Job: results[i].Job, Status: Interrupted, Notes: []string{"stopped: oz0 eval was interrupted before the case ended"}}
		}
		return &Report{Results: results}, &InterruptedError{Ended: ended, Cases: len(slots)}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Report{Results: results}, nil
}

// InterruptedError is Run's error when its context ends (Ctrl-C): how many of the cases had
// ended; the others were stopped (their jobs cancelled).
type InterruptedError struct{ Ended, Cases int }

func (e *InterruptedError) Error() string {
	cases := "cases"
	if e.Cases == 1 {
		cases = "case"
	}
	return fmt.Sprintf("interrupted: %d of %d %s had ended; the others were stopped (the report says which)", e.Ended, e.Cases, cases)
}

// plan is how a case runs: its request's answers, whether it runs live, and the recording it
// writes ("" none).
type plan struct {
	answers *apiv1.Answers
	live    bool
	write   string
	skip    string
}

func planCase(f *File, c *evalfile.Case, mode Mode) (plan, error) {
	path := filepath.Join(f.Dir, filepath.FromSlash(c.Path))
	switch c.Source {
	case evalfile.FromLive:
		if mode == Offline {
			return plan{skip: "it runs on the live model only: oz0 eval --live"}, nil
		}
		return plan{live: true}, nil
	case evalfile.FromScript:
		if mode == Live {
			return plan{live: true}, nil
		}
		data, err := os.ReadFile(path)
		if msg := c.Absent(f.Name); errors.Is(err, fs.ErrNotExist) && msg != "" {
			return plan{}, &missingError{kind: c.PathKey, line: c.PathLine, col: c.PathCol, msg: msg}
		}
		if err != nil {
			return plan{}, &EnvError{fmt.Errorf("%s:%d:%d: case %s: cannot read its %s %s: %w", f.Name, c.PathLine, c.PathCol, c.Name, c.PathKey, c.Path, err)}
		}
		if _, err := fakemodel.ParseScript(c.Path, data); err != nil {
			return plan{}, err // a *diag.ReportError: the script's findings
		}
		return plan{answers: &apiv1.Answers{Script: string(data), ScriptName: c.Path}}, nil
	}
	switch mode {
	case Live:
		return plan{live: true}, nil
	case Update:
		return plan{live: true, write: path}, nil
	}
	rec, err := readRecording(path)
	switch {
	case errors.Is(err, errNoRecording) && mode == Record:
		return plan{live: true, write: path}, nil
	case errors.Is(err, errNoRecording):
		return plan{}, &missingError{kind: "recording", line: c.Line, col: c.Col,
			msg: fmt.Sprintf("no recording %s; make it with oz0 eval --record (on the live model, with a provider key)", c.Path)}
	case err != nil:
		return plan{}, &EnvError{err}
	}
	return plan{answers: &apiv1.Answers{Job: rec.Job, Record: rec.Record, Model: rec.Model, Calls: rec.Calls}}, nil
}

// missingError is a case's recording or script that is not there: the case fails, at the key
// that names it (the case, for the default recording), saying how to make it or mend the path.
type missingError struct {
	kind      string
	line, col int
	msg       string
}

func (e *missingError) Error() string { return e.msg }

func runCase(ctx context.Context, srv Server, f *File, c *evalfile.Case, opts Options) (Result, error) {
	r := Result{File: f.Name, Case: c.Name, Line: c.Line, Col: c.Col, Source: string(c.Source)}
	p, err := planCase(f, c, opts.Mode)
	var missing *missingError
	switch {
	case errors.As(err, &missing):
		r.Status = Failed
		r.Failures = []Failure{{Kind: missing.kind, Line: missing.line, Col: missing.col, Message: missing.msg}}
		return r, nil
	case err != nil:
		return r, err
	case p.skip != "":
		r.Status, r.Notes = Skipped, []string{p.skip}
		return r, nil
	}
	if p.live {
		r.Source = string(evalfile.FromLive)
	}
	checks := make([]check, len(c.Asserts))
	for i, a := range c.Asserts {
		if a.Kind == "judge" {
			continue // a job of its own, once the case's has ended
		}
		if checks[i], err = newCheck(a, f.Dir); err != nil {
			return r, &EnvError{fmt.Errorf("%s:%d:%d: %w", f.Name, a.Line, a.Col, err)}
		}
	}
	req := apiv1.JobRequest{Agent: f.Agent, Input: c.Input, Answers: p.answers}
	if p.write != "" {
		keep := true
		req.Record = &keep
	}
	// The case's timeout bounds it from here: its job's wait for a session, its run, a person's
	// answer (--dev).
	caseCtx := ctx
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		caseCtx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	job, err := srv.CreateJob(ctx, req)
	if err != nil {
		return r, fmt.Errorf("case %s of %s: %w", c.Name, f.Name, err)
	}
	r.Job = job.ID
	var events []apiv1.Event
	var unanswered *Failure // an approval nobody could answer, which ended the job
	var timedOut *Failure   // the case's timeout, which ended the job
	follow := func(ctx context.Context, answer bool) error {
		var after int64
		if len(events) > 0 {
			after = events[len(events)-1].Seq
		}
		return srv.Events(ctx, job.ID, after, func(ev apiv1.Event) error {
			events = append(events, ev)
			if answer && waitsForApproval(ev) && unanswered == nil {
				unanswered = answerApprovals(ctx, srv, job.ID, f, c, opts)
			}
			return nil
		}, nil)
	}
	err = follow(caseCtx, true)
	if err != nil && ctx.Err() == nil && caseCtx.Err() != nil {
		// Past its timeout: its job is cancelled, and followed to its end.
		cancelJob(ctx, srv, job.ID)
		timedOut = &Failure{Kind: "timeout", Line: c.TimeoutLine, Col: c.TimeoutCol,
			Message: fmt.Sprintf("the case did not end within its timeout of %s: its job was cancelled", c.Timeout)}
		err = follow(ctx, false)
	}
	if err != nil {
		if ctx.Err() != nil {
			cancelJob(ctx, srv, job.ID)
		}
		return r, &EnvError{fmt.Errorf("case %s of %s: job %s: %w", c.Name, f.Name, job.ID, err)}
	}
	if job, err = srv.Job(ctx, job.ID); err != nil {
		return r, &EnvError{fmt.Errorf("case %s of %s: job %s: %w", c.Name, f.Name, job.ID, err)}
	}
	o := newOutcome(job, events)
	r.JobStatus = string(job.Status)
	r.ModelCalls, r.Tokens, r.CostUSD = job.Usage.ModelCalls, o.tokens(), job.Usage.CostUSD
	r.DurationMS = o.duration().Milliseconds()
	if v, ok := o.value(); ok {
		r.Output = v
	}
	if p.write != "" {
		calls, err := srv.Calls(ctx, job.ID)
		if err != nil {
			return r, &EnvError{fmt.Errorf("case %s of %s: the calls of job %s: %w", c.Name, f.Name, job.ID, err)}
		}
		rec := &Recording{Job: job.ID, Agent: job.Agent, Input: job.InputText, Record: job.ModelRecord, Model: job.ModelName, DurationMS: r.DurationMS}
		for _, call := range calls.Calls {
			if len(call.Exchange) > 0 {
				rec.Calls = append(rec.Calls, call.Exchange)
			}
		}
		if len(rec.Calls) == 0 {
			r.Notes = append(r.Notes, "no recording written: the job made no model call that was kept")
		} else if err := writeRecording(p.write, rec); err != nil {
			return r, &EnvError{fmt.Errorf("case %s of %s: cannot write its recording: %w", c.Name, f.Name, err)}
		} else {
			r.Recorded = c.Path
		}
	}
	hasStatus := false
	for i, a := range c.Asserts {
		hasStatus = hasStatus || a.Kind == "status"
		if a.Kind == "judge" {
			if !p.live {
				r.Notes = append(r.Notes, "judge skipped: a judge asks a live model (oz0 eval --live)")
				continue
			}
			question, _ := a.Value.(string)
			v, judged, why, err := runJudge(ctx, srv, question, o.text())
			if err != nil {
				return r, &EnvError{fmt.Errorf("case %s of %s: the judge: %w", c.Name, f.Name, err)}
			}
			// The judge's call is metered as its job's; it counts in the case's usage.
			r.ModelCalls += judged.Usage.ModelCalls
			r.Tokens += judged.Usage.InputTokens + judged.Usage.OutputTokens
			r.CostUSD += judged.Usage.CostUSD
			switch {
			case why != "":
				r.Failures = append(r.Failures, Failure{Kind: a.Kind, Line: a.Line, Col: a.Col, Message: why})
			case v.Answer == "yes":
				r.Notes = append(r.Notes, fmt.Sprintf("judge (job %s) answered yes to %s: %s", judged.ID, quote(question), v.Reason))
			default:
				r.Failures = append(r.Failures, Failure{Kind: a.Kind, Line: a.Line, Col: a.Col,
					Message: fmt.Sprintf("the judge (job %s) answered no to %s: %s", judged.ID, quote(question), v.Reason)})
			}
			continue
		}
		if ok, why := checks[i].check(o); !ok {
			r.Failures = append(r.Failures, Failure{Kind: a.Kind, Line: a.Line, Col: a.Col, Message: why})
		}
	}
	switch {
	case timedOut != nil:
		// The timeout ended the job: it comes first, and says why.
		r.Failures = append([]Failure{*timedOut}, r.Failures...)
	case unanswered != nil:
		// The approval nobody could answer ended the job: it comes first, and says why.
		r.Failures = append([]Failure{*unanswered}, r.Failures...)
	case !hasStatus && job.Status != apiv1.StatusSucceeded:
		// The job's own failure comes first: the assertions on its output follow from it.
		r.Failures = append([]Failure{{Kind: "job", Line: c.Line, Col: c.Col,
			Message: fmt.Sprintf("the job %s%s", job.Status, reasonOf(job))}}, r.Failures...)
	}
	r.Status = Passed
	if len(r.Failures) > 0 {
		r.Status = Failed
	}
	return r, nil
}

// Elapsed is a Result's duration.
func (r Result) Elapsed() time.Duration { return time.Duration(r.DurationMS) * time.Millisecond }

// runJudge runs a judge job on question and output and reads its verdict; why says how the
// judge could not answer ("" when it did).
func runJudge(ctx context.Context, srv Server, question, output string) (v JudgeVerdict, job apiv1.Job, why string, err error) {
	in, _ := json.Marshal(judgeInput{Question: question, Output: output})
	job, err = srv.CreateJob(ctx, apiv1.JobRequest{Agent: JudgeAgent, Input: string(in)})
	if err != nil {
		return v, job, "", err
	}
	if err := srv.Events(ctx, job.ID, 0, func(apiv1.Event) error { return nil }, nil); err != nil {
		return v, job, "", err
	}
	if job, err = srv.Job(ctx, job.ID); err != nil {
		return v, job, "", err
	}
	if job.Status != apiv1.StatusSucceeded {
		return v, job, fmt.Sprintf("the judge (job %s) could not answer: it %s%s", job.ID, job.Status, reasonOf(job)), nil
	}
	if err := json.Unmarshal(job.Output, &v); err != nil {
		return v, job, fmt.Sprintf("the judge (job %s) answered %s, not a verdict", job.ID, compact(job.Output)), nil
	}
	return v, job, "", nil
}

// waitsForApproval reports whether ev says the job now waits for a person's approval.
func waitsForApproval(ev apiv1.Event) bool {
	if ev.Type != apiv1.EventStatus {
		return false
	}
	var st apiv1.StatusData
	return json.Unmarshal(ev.Data, &st) == nil && st.Status == apiv1.StatusWaitingForApproval
}

// answerApprovals answers the approvals that job waits for as the case says (approvals:
// approve, deny, or by tool). A call the case does not answer waits for a person where one may answer
// (opts.Inbox), and is told so in a note; elsewhere nobody can: the job is cancelled, and the
// returned failure says what it asked and how the case can answer it.
func answerApprovals(ctx context.Context, srv Server, job string, f *File, c *evalfile.Case, opts Options) *Failure {
	// The job says it waits once, for its first call; a second asked meanwhile (parallel tool
	// calls) says nothing more: the list is read again until it has none of the job's left that
	// this answers.
	noted := map[string]bool{}
	for {
		pending, err := srv.Approvals(ctx, false)
		if err != nil {
			cancelJob(ctx, srv, job)
			return &Failure{Kind: "approvals", Line: c.Line, Col: c.Col, Message: "cannot read the approvals its job waits for: " + err.Error()}
		}
		answered, failure := answerPending(ctx, srv, job, f, c, opts, pending, noted)
		if failure != nil || !answered {
			return failure
		}
	}
}

// answerPending answers job's approvals among pending as the case says, and reports whether it
// answered any; noted keeps the ones already said to wait for a person (--dev).
func answerPending(ctx context.Context, srv Server, job string, f *File, c *evalfile.Case, opts Options, pending []apiv1.Approval, noted map[string]bool) (bool, *Failure) {
	answered := false
	var err error
	for _, a := range pending {
		if a.Job != job {
			continue
		}
		call := fmt.Sprintf("%s %s", a.Target(), textclip.ClipN(string(a.Arguments), 200))
		answer := c.Approvals.For(a.Tool)
		switch answer {
		case evalfile.ApproveAll:
			_, _, err = srv.Approve(ctx, a.ID, apiv1.ScopeOnce)
		case evalfile.DenyAll:
			_, err = srv.Deny(ctx, a.ID, "denied by oz0 eval: the case says approvals: "+c.Approvals.String())
		default:
			if opts.Inbox {
				if opts.Note != nil && !noted[a.ID] {
					noted[a.ID] = true
					opts.Note(fmt.Sprintf("case %s of %s: job %s waits for a person to approve %s (oz0 approval list); approvals: {%s: approve} (or deny) in the case answers it", c.Name, f.Name, job, call, a.Tool))
				}
				continue
			}
			cancelJob(ctx, srv, job)
			line, col, says := c.Line, c.Col, ""
			if c.Approvals.Line > 0 {
				line, col, says = c.Approvals.Line, c.Approvals.Col, fmt.Sprintf(", which approvals: %s does not answer", c.Approvals)
			}
			return false, &Failure{Kind: "approvals", Line: line, Col: col, Message: fmt.Sprintf(
				"its job asked a person to approve %s (%s)%s, and oz0 eval has nobody to ask: say how the case answers (approvals: approve, approvals: deny, or by tool: approvals: {%s: approve}), or run it with --dev and answer in oz0 dev's inbox", call, a.Why, says, a.Tool)}
		}
		var apiErr *client.APIError
		if errors.As(err, &apiErr) && apiErr.Code == apiv1.CodeDecided {
			continue // a person answered it first (--dev)
		}
		if err != nil {
			if ctx.Err() != nil {
				return false, nil // interrupted: the run says so
			}
			cancelJob(ctx, srv, job) // else it would wait for the answer that failed
			return false, &Failure{Kind: "approvals", Line: c.Line, Col: c.Col, Message: fmt.Sprintf("cannot answer %s (approvals: %s): %v", call, answer, err)}
		}
		answered = true
	}
	return answered, nil
}

// cancelJob cancels a case's job when the run is interrupted: on oz0 dev (--dev) it would
// otherwise go on after oz0 eval has gone.
func cancelJob(ctx context.Context, srv Server, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, _ = srv.Cancel(ctx, id) // best effort: oz0 eval is stopping, and says why
}
