// Package conformance is the conformance kit behind `oz0 plugin test`: it runs every harness of
// a plugin, with its real command, through the supervisor against the gateway and the fake model,
// in scripted scenarios, and checks that it keeps protocol v1 in each.
package conformance

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/orchestrator-zero/oz0/fakemodel"
	"github.com/orchestrator-zero/oz0/gateway"
	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/internal/textclip"
	"github.com/orchestrator-zero/oz0/plugin"
	"github.com/orchestrator-zero/oz0/schemas"
	"github.com/orchestrator-zero/oz0/supervisor"
	"github.com/orchestrator-zero/oz0/supervisor/ahead"
	"github.com/orchestrator-zero/oz0/supervisor/jobspec"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

// Check is the outcome of one scenario for one harness.
type Check struct {
	// Plugin is the name of the plugin the harness is of: oz0 plugin test of several plugins
	// reports their checks in one list.
	Plugin  string `json:"plugin"`
	Harness string `json:"harness"`
	ID      string `json:"check"`
	Title   string `json:"title"`
	Pass    bool   `json:"pass"`
	// NotApplicable: the check means nothing for this harness (it asks for no tools); Pass is true.
	NotApplicable bool   `json:"not_applicable,omitempty"`
	Expected      string `json:"expected"`
	Got           string `json:"got"`
	Note          string `json:"note,omitempty"`
	// Hint says what the author can do about a failed check.
	Hint string `json:"hint,omitempty"`
	// NotRun: the harness could not load its code (the failed check LoadCheck says why), so this
	// check was not run; Pass is false.
	NotRun bool `json:"not_run,omitempty"`
	// Output is what the harness printed on stderr as it failed to load, as it printed it (a
	// Python traceback, Node's report): LoadCheck's only.
	Output string `json:"output,omitempty"`
	// Diff is how the harness's request differs from the script's nearest rule, a line each, as
	// oz0 eval and oz0 job replay print it: ScriptCheck's only.
	Diff string `json:"diff,omitempty"`
	// Sandbox is the tier the check's sessions ran in.
	Sandbox sandbox.Tier  `json:"sandbox"`
	Elapsed time.Duration `json:"-"`
	// ElapsedMS is Elapsed for JSON readers.
	ElapsedMS int64 `json:"elapsed_ms"`
}

// Report is every check of a run.
type Report struct {
	Plugin string `json:"plugin"`
	// Sandbox is the tier the sessions ran in, as oz0 dev's node would run them.
	Sandbox sandbox.Tier `json:"sandbox"`
	Checks  []Check      `json:"checks"`
}

// Counts returns how many checks passed, failed, and did not apply.
func (r *Report) Counts() (passed, failed, notApplicable int) {
	for _, c := range r.Checks {
		switch {
		case c.NotRun:
		case c.NotApplicable:
			notApplicable++
		case c.Pass:
			passed++
		default:
			failed++
		}
	}
	return passed, failed, notApplicable
}

// Options tune a run. The zero value is the defaults.
type Options struct {
	// Script is the fake model's script; nil is the built-in one, which answers the byo-agent
	// template's triage prompt.
	Script *fakemodel.Script
	// Input is the job input of every scenario; "" is the guide's ticket.
	Input string
	// Timeout bounds each scenario; 0 is DefaultTimeout.
	Timeout time.Duration
	// Grace is how long a harness has to exit after its last line or after SIGTERM; 0 is
	// supervisor.DefaultGrace.
	Grace time.Duration
	// Harnesses limits the run to these harnesses; empty runs all.
	Harnesses []string
	// Progress is told of each check as it ends; may be nil.
	Progress func(Check)
	// Sandbox is the tier to run sessions in; "" is oz0 dev's default (sandbox.Resolve): standard
	// where it works, else none, with a warning to Warn.
	Sandbox sandbox.Tier
	// Warn is told of a fallback to tier none; may be nil.
	Warn func(string)
	// Ahead says when the scenarios' sessions are made (oz0 plugin test --warm N, --cold): the
	// zero value makes each at its scenario.
	Ahead ahead.Policy
}

// NotRun counts the checks that were not run, their harness unable to load its code.
func (r *Report) NotRun() int {
	n := 0
	for _, c := range r.Checks {
		if c.NotRun {
			n++
		}
	}
	return n
}

// LoadCheck is the ID of the check that fails, ahead of the scenarios' (then not run), for a
// harness that could not load its code: a syntax error, a module not installed.
const LoadCheck = "loads"

// ScriptCheck is the ID of the check that fails, ahead of the first scenario that showed it, for
// a fake model script that answers none of a harness's requests (the prompt changed since it was
// recorded, another --input): said once, with the request's diff, rather than by each scenario.
const ScriptCheck = "script"

// DefaultInput is the guide's ticket.
const DefaultInput = "I was charged twice for my order"

// DefaultTimeout bounds one scenario.
const DefaultTimeout = 60 * time.Second

// Changed is what the changed-arguments scenario puts in every string argument it changes.
const Changed = "oz0-changed"

// DenyReason is the reason the denied scenario gives.
const DenyReason = "denied by oz0 plugin test"

// scenario is one check's session: how it is decided, and what is expected of it.
type scenario struct {
	id, title, expected string
	// hint is what the author can do when the check fails, unless the failure says better.
	hint string
	// needsTools: the check means nothing for a harness that asks for no permission.
	needsTools bool
	run        func(e *env, ctx context.Context, t *target) outcome
}

// outcome is how a check went: what was seen, a note, and (failed) what the author can do.
type outcome struct {
	got, note, hint string
	pass            bool
}

func passed(got, note string) outcome { return outcome{got: got, note: note, pass: true} }
func failed(got string) outcome       { return outcome{got: got} }

// noRequestHint is what to do about a harness that asked for no tool when the check needed one.
const noRequestHint = "the fake model calls the first tool a request offers it; a harness whose code calls tools only for some inputs needs one that makes it: --input \"...\", or a fake model script that answers its prompts: --script FILE (docs/fake-model.md)"

var scenarios = []scenario{
	{id: "plain-run", title: "a plain run ends with a result",
		expected: "a result line, then exit within the grace period",
		hint:     "run the harness by hand on a session request (docs/protocol.md) and read its stderr; oz0 dev shows the same run with its log",
		run:      (*env).plainRun},
	{id: "permission-allowed", title: "an allowed tool call runs and reports its result", needsTools: true,
		expected: "a permission_request, then a tool_result for the same id and tool, then a result",
		hint:     "after an allow, run the tool and write its tool_result with the request's id (session.call_tool does both)",
		run:      (*env).permissionAllowed},
	{id: "changed-arguments", title: "an allowed call runs with the arguments the job changed", needsTools: true,
		expected: "the tool runs with the changed arguments: its tool_result shows " + Changed + " values, not the asked ones",
		hint:     "run the tool with the arguments of the permission answer, not the ones asked: a hook may change them",
		run:      (*env).changedArguments},
	{id: "denied", title: "a denied call does not run and the session ends cleanly", needsTools: true,
		expected: "no tool_result for the denied request, and a result or an error line",
		hint:     "never run a tool after a deny; give the reason to the model as the tool's answer, or end the session with an error line",
		run:      (*env).denied},
	{id: "unlisted-tool", title: "a tool outside the agent's list is refused and the session ends cleanly", needsTools: true,
		expected: "the node refuses the call (rule 1), no tool_result for it, and a result or an error line",
		hint:     "a refused call must not run; end the session cleanly after it",
		run:      (*env).unlistedTool},
	{id: "max-steps", title: "a model call past limits.max_steps is refused and the session ends cleanly",
		expected: "the gateway's 429 ends the session with an error line (or a result), without retrying in a loop",
		hint:     "turn off the model client's retries (the SDKs and frameworks retry a 429 by default) and end the session on it",
		run:      (*env).maxSteps},
	{id: "cancel", title: "a cancelled session exits on SIGTERM within the grace period",
		expected: "exit within the grace period after SIGTERM, without SIGKILL",
		hint:     "exit on SIGTERM: do not ignore it, and end work that holds the process (threads, children) within the grace period",
		run:      (*env).cancel},
}

// Scenarios lists the checks' IDs and titles, in the order they run.
func Scenarios() [][2]string {
	out := make([][2]string, len(scenarios))
	for i, s := range scenarios {
		out[i] = [2]string{s.id, s.title}
	}
	return out
}

// target is the harness under test and the job its sessions run: the one the node would run for
// the first agent (by name) that uses the harness, or, when none does, the one jobspec builds for
// the harness alone.
type target struct {
	harness *plugin.Harness
	job     jobspec.Job // every session's, but for its ID and what its scenario changes
	// load is why the harness could not load its code, from the first session that showed it;
	// nil while none did.
	load *loadFailure
	// script is the first request of its sessions that the fake model's script did not answer;
	// nil while none was.
	script *fakemodel.NoMatch
}

// loadFailure is a harness's failure to load its code.
type loadFailure struct {
	what   string // the error's line ("SyntaxError: invalid syntax (agent.py, line 3)")
	output string // stderr as the harness printed it: the traceback
	hint   string
}

// env is the fake model and the gateway that the sessions of one run talk to.
type env struct {
	opts     Options
	upstream *httptest.Server
	gwServer *httptest.Server
	keys     *gateway.MemResolver
	meter    *gateway.MemMeter
	sandbox  supervisor.Sandbox
	gw       *gateway.Gateway
	jobs     atomic.Int64
	ahead    *ahead.Pool

	mu      sync.Mutex
	noMatch []fakemodel.NoMatch // the requests the fake model's script did not answer, in order
}

// misses is how many requests the script has not answered so far, and the last.
func (e *env) misses() (int, fakemodel.NoMatch) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.noMatch) == 0 {
		return 0, fakemodel.NoMatch{}
	}
	return len(e.noMatch), e.noMatch[len(e.noMatch)-1]
}

// Run runs every scenario for every harness of p (or those Options.Harnesses names). Options.Input
// must be an input that each harness's agent takes, as the node checks it: otherwise Run returns
// an error wrapping the *jobspec.InputError, before any scenario runs.
func Run(ctx context.Context, p *plugin.Plugin, opts Options) (*Report, error) {
	if opts.Input == "" {
		opts.Input = DefaultInput
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	for _, name := range opts.Harnesses {
		if p.Harness(name) == nil {
			return nil, fmt.Errorf("the plugin has no harness %q", name)
		}
	}
	tier, warning, err := sandbox.Resolve(opts.Sandbox)
	if err != nil {
		return nil, err
	}
	if warning != "" && opts.Warn != nil {
		opts.Warn(warning)
	}
	sandbox.WarmUp(tier)
	e := &env{opts: opts, keys: gateway.NewMemResolver(), meter: &gateway.MemMeter{}}
	fm := fakemodel.New(opts.Script)
	fm.OnNoMatch = func(nm fakemodel.NoMatch) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if len(e.noMatch) < 100 { // the count and the first ones are what is said
			e.noMatch = append(e.noMatch, nm)
		}
	}
	e.upstream = httptest.NewServer(fm)
	defer e.upstream.Close()
	gw, err := gateway.New(gateway.Config{Resolver: e.keys, Meter: e.meter})
	if err != nil {
		return nil, err
	}
	defer gw.Close()
	e.gwServer = httptest.NewServer(gw)
	defer e.gwServer.Close()
	e.sandbox = supervisor.Sandbox{Tier: tier, Gateway: gw}
	e.gw = gw
	e.ahead = ahead.New(opts.Ahead, nil)
	defer e.ahead.Close()

	var targets []*target
	for i := range p.Manifest.Harnesses {
		h := &p.Manifest.Harnesses[i]
		if len(opts.Harnesses) > 0 && !slices.Contains(opts.Harnesses, h.Name) {
			continue
		}
		t, err := newTarget(p, h, opts.Input, gateway.FakeRecord(e.upstream.URL))
		if err != nil {
			return nil, err
		}
		targets = append(targets, t)
	}

	rep := &Report{Plugin: p.Manifest.Name, Sandbox: tier}
	add := func(c Check) {
		c.Plugin = p.Manifest.Name
		rep.Checks = append(rep.Checks, c)
		if opts.Progress != nil {
			opts.Progress(c)
		}
	}
	for _, t := range targets {
		// Its sessions made ahead, as the node makes them, while the first scenario waits.
		e.ahead.Prepare(e.harnessSpec(t))
		for _, sc := range scenarios {
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			start := time.Now()
			c := Check{Harness: t.harness.Name, ID: sc.id, Title: sc.title, Expected: sc.expected, Sandbox: tier}
			switch {
			case t.load != nil:
				c.NotRun, c.Got = true, "not run: the harness could not load its code"
			case sc.needsTools && (!t.harness.Permissions || len(t.job.Tools()) == 0):
				c.Pass, c.NotApplicable, c.Got = true, true, "not applicable"
				c.Note = "the harness declares no tools it asks for (permissions: false or no tools)"
			default:
				before, _ := e.misses()
				o := sc.run(e, ctx, t)
				after, nm := e.misses()
				missed := t.load == nil && after > before && !o.pass
				if missed {
					// A request the script does not answer: said once, with how it differs,
					// ahead of the first scenario it failed; the scenarios say only that.
					if t.script == nil {
						t.script = &nm
						add(scriptCheck(t.harness.Name, opts.Input, nm, tier, time.Since(start)))
					}
					o.got = "failed: the fake model's script answers none of its requests (the script check above says why)"
				}
				if t.load != nil {
					// The harness never ran its code: it passes nothing (not even what a dead
					// harness passes by default), and one failure says why, ahead of the rest.
					add(Check{Harness: t.harness.Name, ID: LoadCheck, Title: "the harness loads its code",
						Expected: "the harness starts and loads its code, then speaks the protocol",
						Got:      "the harness could not load its code: " + t.load.what, Output: t.load.output,
						Hint: t.load.hint, Sandbox: tier, Elapsed: time.Since(start), ElapsedMS: time.Since(start).Milliseconds()})
					c.NotRun, c.Got = true, "not run: the harness could not load its code"
					break
				}
				c.Got, c.Note, c.Pass = o.got, o.note, o.pass
				if !o.pass && !missed { // the script check says what to do
					c.Hint = cmp.Or(o.hint, sc.hint)
				}
			}
			c.Elapsed = time.Since(start)
			c.ElapsedMS = c.Elapsed.Milliseconds()
			if c.NotRun {
				c.Elapsed, c.ElapsedMS = 0, 0
			}
			add(c)
		}
	}
	return rep, nil
}

// scriptCheck is the failed ScriptCheck of a request the script did not answer.
func scriptCheck(harness, input string, nm fakemodel.NoMatch, tier sandbox.Tier, took time.Duration) Check {
	c := Check{Harness: harness, ID: ScriptCheck, Title: "the fake model's script answers the harness's requests",
		Expected: "each model call the harness makes is one a rule of the --script answers", Sandbox: tier, Elapsed: took, ElapsedMS: took.Milliseconds()}
	switch {
	case nm.Input != "":
		c.Got = fmt.Sprintf("the harness's request does not hold the script's input %s: it ran on %s", strconv.Quote(textclip.ClipN(nm.Input, 200)), strconv.Quote(textclip.ClipN(input, 200)))
		c.Hint = "run with that input (oz0 plugin test --script without --input sends it), or add a rule to the script that matches the request"
	case nm.Rule != "":
		c.Got = fmt.Sprintf("the request differs from %s, the nearest:", nm.Rule)
		c.Diff = strings.Join(nm.Diff, "\n")
		c.Hint = "the harness asks something else than the script was made from (its prompt, tools or code changed): if the change is meant, make the script again from a job of it (oz0 job script JOB -o FILE); else undo it"
	default:
		c.Got = textclip.Squash(nm.Message, 600)
		c.Hint = "add a rule to the script that matches the request, or a rule without match at its end as a catch-all (docs/fake-model.md)"
	}
	return c
}

// newTarget builds the job of harness h's sessions as the node would, on input. The kit's records
// are oz0 dev's with no provider key set, the fake alone; an agent that names another record
// (use: anthropic) runs on the fake model under that record's name, as it cannot reach the real.
func newTarget(p *plugin.Plugin, h *plugin.Harness, input string, fake gateway.Record) (*target, error) {
	var agent *plugin.Agent
	for _, a := range p.Agents {
		if a.HarnessName() == h.Name {
			agent = a
			break
		}
	}
	in, err := jobspec.ParseInput(agent, input)
	if err != nil {
		return nil, fmt.Errorf("harness %s: %w; every scenario runs on --input, so give one the agent takes", h.Name, err)
	}
	records := []gateway.Record{fake}
	if agent != nil && agent.Model.Use != "" && agent.Model.Use != gateway.DefaultUse && agent.Model.Use != fake.Name {
		standIn := fake
		standIn.Name = agent.Model.Use
		records = []gateway.Record{standIn}
	}
	model, err := jobspec.ResolveModel(records, h, agent)
	if err != nil {
		return nil, fmt.Errorf("harness %s: %w", h.Name, err)
	}
	job := jobspec.Job{Plugin: p, Harness: h, Agent: agent, Input: in, Model: model}
	if err := job.CheckRequest(); err != nil {
		return nil, fmt.Errorf("harness %s: %w; every scenario runs on --input, so give one the agent takes", h.Name, err)
	}
	return &target{harness: h, job: job}, nil
}

// session is the record of one scenario's session.
type session struct {
	end       harnesskit.End
	events    []harnesskit.Event
	invalid   []string // lines that do not match the protocol's schemas
	asked     []harnesskit.PermissionRequest
	results   map[string]harnesskit.ToolResult
	decided   int // Decide calls
	startErr  error
	errorLine string // the harness's error line, if it wrote one
}

// sessionSpec says how one scenario's session differs from the job's: only in what it names.
type sessionSpec struct {
	tools    []string // the request's tools; nil: the job's
	maxSteps int      // the request's and the key's limits.max_steps; 0: the job's
	decide   func(ctx context.Context, ask *supervisor.Ask) supervisor.Decision
	onEvent  func(*supervisor.Session, harnesskit.Event)
	// spendSteps: steps the gateway counts as made before the session starts.
	spendSteps int
}

// harnessSpec is what every session of t's harness shares here.
func (e *env) harnessSpec(t *target) supervisor.Spec {
	spec := jobspec.HarnessSpec(t.job.Plugin, t.job.Harness, e.gwServer.URL, e.sandbox)
	spec.Limits.Grace = e.opts.Grace
	return spec
}

// run runs one session of t's job, changed as ss says, bounded by Options.Timeout.
func (e *env) run(ctx context.Context, t *target, ss sessionSpec) *session {
	job := t.job
	job.ID = fmt.Sprintf("job_conformance%09d", e.jobs.Add(1))
	grant := job.Grant()
	if ss.maxSteps != 0 {
		grant.Limits.MaxSteps = ss.maxSteps
	}
	key := e.keys.Issue(grant)
	defer e.keys.Revoke(key)
	for range ss.spendSteps {
		e.spendStep(key)
	}
	spec := job.Spec(e.gwServer.URL, key, e.sandbox)
	if ss.tools != nil {
		spec.Request.Tools = ss.tools
	}
	if ss.maxSteps != 0 {
		spec.Request.Limits.MaxSteps = ss.maxSteps
	}
	spec.Limits.Grace = e.opts.Grace
	// The kit's bound is its own, not the agent's limits.timeout (which the request carries as
	// the node sends it): a session past it is cancelled.
	ctx, cancel := context.WithTimeoutCause(ctx, e.opts.Timeout,
		fmt.Errorf("the scenario ran past oz0 plugin test's --timeout of %s", e.opts.Timeout))
	defer cancel()

	out := &session{results: map[string]harnesskit.ToolResult{}}
	var mu sync.Mutex
	var sess *supervisor.Session
	ready := make(chan struct{})
	spec.Decider = supervisor.DeciderFunc(func(ctx context.Context, ask *supervisor.Ask) supervisor.Decision {
		mu.Lock()
		out.decided++
		mu.Unlock()
		if ss.decide == nil {
			return supervisor.Allow(nil)
		}
		return ss.decide(ctx, ask)
	})
	spec.Sink = func(ev harnesskit.Event) {
		mu.Lock()
		kept := ev
		kept.Raw = nil // the reader's buffer: valid only here
		if ev.Kind == harnesskit.EventSay || ev.Kind == harnesskit.EventLog {
			// The checks look at what came, not at what was said: a harness that floods does
			// not fill oz0 plugin test's memory with its text.
			kept.Message = nil
		}
		out.events = append(out.events, kept)
		if ev.Raw != nil && ev.Kind != harnesskit.EventViolation { // a violation says what is wrong
			if err := validateLine(ev.Raw); err != nil {
				out.invalid = append(out.invalid, fmt.Sprintf("line %d: %v", ev.Line, err))
			}
		}
		if m, ok := ev.Message.(harnesskit.ErrorMessage); ok && ev.Kind == harnesskit.EventError {
			out.errorLine = m.Message
		}
		switch m := ev.Message.(type) {
		case harnesskit.PermissionRequest:
			if ev.Kind == harnesskit.EventPermissionRequest {
				out.asked = append(out.asked, m)
			}
		case harnesskit.ToolResult:
			if ev.Kind == harnesskit.EventToolResult {
				out.results[m.ID] = m
			}
		}
		mu.Unlock()
		if ss.onEvent != nil {
			<-ready
			ss.onEvent(sess, ev)
		}
	}
	s, _, err := e.ahead.Start(ctx, spec)
	if err != nil {
		close(ready)
		out.startErr = err
		return out
	}
	sess = s
	close(ready)
	out.end = s.Wait()
	if t.load == nil {
		t.load = out.loadFailure(t.job.Plugin.Dir)
	}
	return out
}

// loadFailure is why the session's harness could not load its code, nil when it could: a
// module it imports is not installed, or its code does not compile (Python's SyntaxError,
// IndentationError or TabError; Node's SyntaxError, of which Node dies before any line).
func (s *session) loadFailure(dir string) *loadFailure {
	if m := s.missingModule(); m != "" {
		return &loadFailure{what: m, output: s.traceback(), hint: missingHint(m, dir)}
	}
	if s.end.Status != harnesskit.Failed || len(s.asked) > 0 {
		return nil
	}
	for _, ev := range s.events {
		if ev.Kind == harnesskit.EventSay || ev.Kind == harnesskit.EventResult || ev.Kind == harnesskit.EventToolResult {
			return nil // it ran
		}
	}
	what := cmp.Or(s.errorLine, s.end.Message)
	if what == "" {
		// No error line: what stderr ended with, for a harness that died before any line.
		lines := strings.Split(strings.TrimSpace(s.end.StderrTail), "\n")
		what = strings.TrimSpace(lines[len(lines)-1])
		for _, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), "SyntaxError:") {
				what = strings.TrimSpace(l) // Node's, above its stack
			}
		}
	}
	for _, mark := range []string{"SyntaxError:", "IndentationError:", "TabError:"} {
		if strings.HasPrefix(what, mark) {
			return &loadFailure{what: clip(what, 300), output: s.traceback(),
				hint: "fix the error the harness printed above (the file and line are in it), then test again; a harness that cannot load its code passes no check"}
		}
	}
	return nil
}

// traceback is the harness's stderr as it ended, as it printed it: from Python's last
// "Traceback (most recent call last):" on, else the last 40 lines.
func (s *session) traceback() string {
	tail := strings.TrimRight(s.end.StderrTail, "\n")
	if i := strings.LastIndex(tail, "Traceback (most recent call last):"); i >= 0 {
		return tail[i:]
	}
	lines := strings.Split(tail, "\n")
	return strings.Join(lines[max(0, len(lines)-40):], "\n")
}

// missingModule is the line that says the session failed because a module its harness imports
// is not installed, "" when it did not. Only how the session ended counts: its error line, or
// the end of the stderr of a harness that died without one (a traceback ends with the error;
// Node's report of an uncaught error ends within a few lines of it). A library that logs an
// ImportError it recovers from on the way does not count.
func (s *session) missingModule() string {
	if s.end.Status == harnesskit.Completed {
		return ""
	}
	if msg := cmp.Or(s.errorLine, s.end.Message); msg != "" {
		return missingModule(msg)
	}
	if s.end.Status != harnesskit.Failed {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(s.end.StderrTail), "\n")
	return missingModule(strings.Join(lines[max(0, len(lines)-25):], "\n"))
}

// missingModule is supervisor.MissingModule.
func missingModule(text string) string { return supervisor.MissingModule(text) }

// missingHint says how to have the module the error says is missing (supervisor.MissingMend, as
// oz0 doctor and a job of oz0 dev say it).
func missingHint(missing, dir string) string {
	if supervisor.IsPythonMissing(missing) {
		return "a module the harness imports is not installed in the plugin's environment: " + supervisor.MissingMend(dir, missing) + ", then test again"
	}
	return "a package the harness imports is not installed: " + supervisor.MissingMend(dir, missing) + ", then test again"
}

// spendStep makes a call through the gateway with key, so that it counts as a step.
func (e *env) spendStep(key string) {
	body := `{"model":"fake-model","max_tokens":16,"messages":[{"role":"user","content":"oz0 plugin test: spend a step"}]}`
	req, _ := http.NewRequest(http.MethodPost, e.gwServer.URL+"/anthropic/v1/messages", strings.NewReader(body))
	req.Header.Set("x-api-key", key)
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("content-type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
}

// validateLine checks one stdout line against the protocol's schemas.
func validateLine(raw []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("not JSON: %.80q", raw)
	}
	sch, err := schemas.Compile(harnesskit.SchemaHarnessMessage)
	if err != nil {
		return err
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("does not match %s: %s", harnesskit.SchemaHarnessMessage, firstLine(err.Error()))
	}
	return nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return s
}

// describe says in a sentence how a session went, for Check.Got.
func (s *session) describe() string {
	if s.startErr != nil {
		return "the harness did not start: " + s.startErr.Error()
	}
	d := s.end.String()
	if s.end.Status == harnesskit.Failed && s.end.Message != "" {
		d = "failed with the error line: " + s.end.Message
	}
	if s.end.Status != harnesskit.Completed && s.end.StderrTail != "" && !strings.Contains(d, "stderr") {
		if !saysAgain(s.end.StderrTail, s.end.Message) {
			d += "; stderr ends: " + tail(s.end.StderrTail, 300)
		}
	}
	return strings.Join(strings.Fields(d), " ")
}

// saysAgain reports whether stderr ends with the error line msg, as a harness that prints its
// error (after its traceback) before it sends it leaves it: the error line says it, once.
func saysAgain(stderr, msg string) bool {
	if msg == "" {
		return false
	}
	fold := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	m, end := fold(msg), fold(stderr)
	// The tail kept may begin within the error line.
	return strings.HasSuffix(end, m) || strings.Contains(m, end)
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return strings.ReplaceAll(s, "\n", " | ")
}

// protocolOK is the common ground of every scenario: the session started, every line matched
// the schemas, and nothing broke a rule.
func (s *session) protocolOK() (string, bool) {
	if s.startErr != nil {
		return s.describe(), false
	}
	if s.end.Status == harnesskit.ProtocolViolation {
		return s.describe(), false
	}
	if len(s.invalid) > 0 {
		return fmt.Sprintf("%d line(s) that do not match the protocol: %s", len(s.invalid), strings.Join(s.invalid[:min(3, len(s.invalid))], "; ")), false
	}
	if s.end.Killed {
		return s.describe() + "; the process did not exit within the grace period and was killed", false
	}
	return "", true
}

// broke is a check failed by what protocolOK found: a protocol violation says what to do about
// its rule.
func (s *session) broke(got string) outcome {
	o := failed(got)
	if s.end.Status == harnesskit.ProtocolViolation {
		o.hint = violationHints[s.end.Rule]
	}
	return o
}

// violationHints say what to do about a violation of each rule.
var violationHints = map[harnesskit.ViolatedRule]string{
	harnesskit.RuleKeys:        "write each key of a message once: make every line from one dict or object (json.dumps, JSON.stringify and json.Marshal do), never by joining JSON text; the node acts on no line with a key twice",
	harnesskit.RuleResults:     "send a tool_result only for a call the job allowed, once its answer came, with the request's id and tool; never run a denied or refused call (session.call_tool does this)",
	harnesskit.RuleIDs:         "give each permission_request an id of its own (p1, p2, …)",
	harnesskit.RuleLineTooLong: "keep every line within 8 MiB: say long text in several says, and give a tool's long result in parts",
}

// endedCleanly: a result, or an error line, and not a crash, a hang or a violation.
func (s *session) endedCleanly() bool {
	return s.end.Status == harnesskit.Completed || (s.end.Status == harnesskit.Failed && s.end.Message != "")
}

func (e *env) plainRun(ctx context.Context, t *target) outcome {
	s := e.run(ctx, t, sessionSpec{})
	if got, ok := s.protocolOK(); !ok {
		return s.broke(got)
	}
	if s.end.Status != harnesskit.Completed {
		return failed(s.describe())
	}
	return passed("result "+clip(string(s.end.Output), 200), "")
}

func (e *env) permissionAllowed(ctx context.Context, t *target) outcome {
	s := e.run(ctx, t, sessionSpec{})
	if got, ok := s.protocolOK(); !ok {
		return s.broke(got)
	}
	if len(s.asked) == 0 {
		return outcome{got: "no permission_request; " + s.describe(), hint: noRequestHint}
	}
	for _, a := range s.asked {
		// A tool_result that names another tool than its request is a violation (rule results).
		if _, ok := s.results[a.ID]; !ok {
			return failed(fmt.Sprintf("permission_request %s for %s was allowed but no tool_result came for it; %s", a.ID, a.Tool, s.describe()))
		}
	}
	if s.end.Status != harnesskit.Completed {
		return failed(s.describe())
	}
	return passed(fmt.Sprintf("%d call(s) allowed, each with its tool_result; then a result", len(s.asked)), "")
}

func (e *env) changedArguments(ctx context.Context, t *target) outcome {
	var mu sync.Mutex
	originals := map[string][]string{} // request id → the string values asked
	s := e.run(ctx, t, sessionSpec{decide: func(_ context.Context, ask *supervisor.Ask) supervisor.Decision {
		var args map[string]any
		if json.Unmarshal(ask.Arguments, &args) != nil {
			return supervisor.Allow(nil)
		}
		var asked []string
		for _, k := range slices.Sorted(maps.Keys(args)) {
			if str, ok := args[k].(string); ok {
				asked = append(asked, str)
				args[k] = Changed + "-" + k
			}
		}
		mu.Lock()
		originals[ask.ID] = asked
		mu.Unlock()
		changed, _ := json.Marshal(args)
		return supervisor.Allow(changed)
	}})
	if got, ok := s.protocolOK(); !ok {
		return s.broke(got)
	}
	if len(s.asked) == 0 {
		return outcome{got: "no permission_request; " + s.describe(), hint: noRequestHint}
	}
	for _, a := range s.asked {
		r, ok := s.results[a.ID]
		if !ok {
			return failed(fmt.Sprintf("no tool_result for %s; %s", a.ID, s.describe()))
		}
		shown := string(r.Result) + r.Error
		if strings.Contains(shown, Changed) {
			continue
		}
		for _, orig := range originals[a.ID] {
			if len(orig) >= 3 && strings.Contains(shown, orig) {
				return failed(fmt.Sprintf("tool_result %s shows the asked value %q, not the changed one: the tool ran with its own arguments", a.ID, clip(orig, 80)))
			}
		}
		return passed(fmt.Sprintf("tool_result %s: %s", a.ID, clip(shown, 120)), "the tool's result shows none of its string arguments, so which it ran with cannot be seen")
	}
	return passed("the tool ran with the changed arguments: its tool_result shows them", "")
}

func (e *env) denied(ctx context.Context, t *target) outcome {
	s := e.run(ctx, t, sessionSpec{decide: func(context.Context, *supervisor.Ask) supervisor.Decision {
		return supervisor.Deny(DenyReason)
	}})
	return s.checkRefused("denied")
}

func (e *env) unlistedTool(ctx context.Context, t *target) outcome {
	s := e.run(ctx, t, sessionSpec{tools: []string{}})
	if s.decided > 0 {
		return failed(fmt.Sprintf("the decider saw %d request(s) for unlisted tools", s.decided))
	}
	if got, ok := s.protocolOK(); ok && len(s.asked) == 0 && s.endedCleanly() {
		// A harness that keeps to the session's tools never asks for one outside them: that is
		// as right as being refused.
		return passed("no permission_request; "+s.describe(), "the session's tool list was empty and the harness asked for no tool, so the node had nothing to refuse")
	} else if !ok {
		return s.broke(got)
	}
	return s.checkRefused("refused by the node")
}

// checkRefused is what a harness whose calls were all refused must show (how: how they were): it
// asked, none of the refused tools ran, and it ended with a result or an error line.
func (s *session) checkRefused(how string) outcome {
	if got, ok := s.protocolOK(); !ok {
		return s.broke(got)
	}
	if len(s.asked) == 0 {
		return outcome{got: "no permission_request; " + s.describe(), hint: noRequestHint}
	}
	// A tool_result for a refused call ended the session as a violation (rule results): the
	// harness ran it anyway.
	if !s.endedCleanly() {
		return failed(s.describe())
	}
	return passed(how+"; "+s.describe(), "")
}

func (e *env) maxSteps(ctx context.Context, t *target) outcome {
	e.gw.Flush()
	before := len(e.meter.Calls())
	s := e.run(ctx, t, sessionSpec{maxSteps: 1, spendSteps: 1})
	if got, ok := s.protocolOK(); !ok {
		return s.broke(got)
	}
	e.gw.Flush() // the session's last calls may still be on their way to the meter
	refused := 0
	for _, c := range e.meter.Calls()[before:] {
		if c.Refused != "" {
			refused++
		}
	}
	if refused > 3 {
		return failed(fmt.Sprintf("the harness made %d more calls after the gateway refused the first", refused-1))
	}
	if !s.endedCleanly() {
		return failed(s.describe())
	}
	if refused == 0 {
		return passed(s.describe(), "the harness made no model call, so the limit was never met")
	}
	return passed(s.describe(), "")
}

func (e *env) cancel(ctx context.Context, t *target) outcome {
	var once sync.Once
	cancelled := make(chan time.Time, 1)
	s := e.run(ctx, t, sessionSpec{
		// Hold every permission request until the session ends, so that the cancel lands while
		// the harness is mid-session whatever it does first.
		decide: func(ctx context.Context, _ *supervisor.Ask) supervisor.Decision {
			<-ctx.Done()
			return supervisor.Deny("cancelled")
		},
		onEvent: func(sess *supervisor.Session, ev harnesskit.Event) {
			if ev.Line == 0 { // not from stdout
				return
			}
			once.Do(func() {
				cancelled <- time.Now()
				// Here, in the Sink: the end is decided before the harness's next line is read,
				// so a harness that answers at once cannot outrun the cancel.
				sess.Cancel()
			})
		},
	})
	if s.startErr != nil {
		return failed(s.describe())
	}
	if len(s.invalid) > 0 {
		return failed(fmt.Sprintf("%d line(s) that do not match the protocol: %s", len(s.invalid), s.invalid[0]))
	}
	select {
	case <-cancelled:
	default:
		return failed("the session wrote nothing before it ended, so it could not be cancelled mid-way; " + s.describe())
	}
	if s.end.Status != harnesskit.Cancelled {
		return failed("the session ended before the cancel took effect: " + s.describe())
	}
	if s.end.Killed {
		return failed("the process did not exit within the grace period after SIGTERM and was killed")
	}
	return passed(fmt.Sprintf("exited on SIGTERM (%s)", orDefault(s.end.Signal, fmt.Sprintf("exit status %d", s.end.ExitCode))), "")
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func clip(s string, n int) string { return textclip.Squash(s, n) }
