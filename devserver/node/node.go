// Package node runs the dev server's jobs: one harness session per job through the supervisor, its
// events written to the job store before anyone sees them, its model calls through the gateway
// under a key of the job's own, and the job's end recorded with its reason. A session that fails
// fails the job; it is not retried.
package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orchestrator-zero/oz0/devserver/store"
	"github.com/orchestrator-zero/oz0/gateway"
	"github.com/orchestrator-zero/oz0/plugin"
	"github.com/orchestrator-zero/oz0/supervisor"
	"github.com/orchestrator-zero/oz0/supervisor/ahead"
	"github.com/orchestrator-zero/oz0/supervisor/jobspec"
)

// Plugins gives the plugins as they are now: new jobs take the current ones, running jobs keep
// the ones they started with. (Config.Refresh has them looked at again before a job takes them.)
type Plugins interface {
	Plugins() []*plugin.Plugin
}

// Records gives the tenant's provider records, in the tenant's order.
type Records interface {
	Records() []gateway.Record
}

// Decider decides a job's permission requests for tools its agent lists. Who says who decided
// (e.g. "hook:NAME", "person", "policy"), for the trace.
type Decider interface {
	Decide(ctx context.Context, job *Job, ask *supervisor.Ask) (d supervisor.Decision, who string)
}

// AllowListed allows every call of a listed tool: the dev server's policy until hooks decide.
type AllowListed struct{}

// Decide allows.
func (AllowListed) Decide(context.Context, *Job, *supervisor.Ask) (supervisor.Decision, string) {
	return supervisor.Allow(nil), "policy"
}

// Config wires a Node.
type Config struct {
	Store   *store.Store
	Keys    *gateway.MemResolver
	Gateway *gateway.Gateway
	Plugins Plugins
	Records Records
	Decider Decider // nil: AllowListed
	// GatewayURL is the gateway's base URL as sessions reach it: its faces are GatewayURL +
	// "/anthropic" and "/openai".
	GatewayURL string
	// Mask hides secret values in what the node writes outside the store (the job's output).
	Mask func([]byte) []byte
	// SayStream masks a job's says as one stream, so that a secret said in pieces is masked too
	// (the store masks each event on its own); nil passes them as they are.
	SayStream func() TextStream
	// TempDir holds the sessions' directories; "" is os.TempDir().
	TempDir string
	// Grace is the sessions' grace period; 0 is supervisor.DefaultGrace.
	Grace time.Duration
	// Sandbox is the sessions' sandbox: its tier, what it hides (the node's state directory),
	// and the gateway's handler for the strict tier. Each session also hides the other plugins.
	Sandbox supervisor.Sandbox
	Logger  *slog.Logger
	// BeforeEnd is called when a session has ended, before the job's end is recorded: the dev
	// server waits there for the job's model calls still being metered.
	BeforeEnd func(job string)
	// AfterEnd is called once a job's end is recorded (the trace's export starts there); it must
	// not block.
	AfterEnd func(job string)
	// ReceiveSpans gives each session the gateway's OTLP receiver (GatewayURL + "/otlp") and
	// the job's span as its parent (TRACEPARENT), for its framework's own spans.
	ReceiveSpans bool
	// Record keeps every job's model calls (gateway.Grant.Recording), for replay.
	Record bool
	// MaxSessions is the most sessions the node runs at once; the jobs past it wait, queued, in
	// the order they came. 0 is DefaultMaxSessions().
	MaxSessions int
	// Cores is how many sessions the node starts however busy the machine is: past them (up to
	// MaxSessions), a queued job starts only while a core is free (Runnable). 0 is the machine's
	// (runtime.NumCPU).
	Cores int
	// Runnable counts the machine's threads that run or are ready to, the caller's included;
	// false when it cannot say (then the node starts up to MaxSessions however busy the machine
	// is). nil reads Linux's /proc/loadavg.
	Runnable func() (int, bool)
	// Refresh, when set, is called as a job is submitted, before it takes its plugin: the dev
	// server looks at the plugins' files there, so that a job submitted right after an edit is
	// saved runs the edited plugin.
	Refresh func()
	// Ahead says when sessions are made: at their jobs (cold, the zero value) or ahead of them.
	// The sessions made ahead are bounded by MaxSessions too.
	Ahead ahead.Policy
}

// Replay is a recording that answers a replayed job's model calls (package recording).
type Replay interface {
	gateway.Replay
	// Divergence says how the session departed from the recording once it has ended; "" when
	// it did not. A job whose session departed fails with it.
	Divergence() string
	// WentUpstream says where the replay left the recording for the upstream; "" when it did not.
	WentUpstream() string
}

// SubmitOptions are what a job may have beyond its agent and input.
type SubmitOptions struct {
	// Record keeps the job's model calls, for replay, when Config.Record does not keep every
	// job's; NoRecord keeps none of them, when it does.
	Record, NoRecord bool
	// Replay answers the job's model calls from a recording.
	Replay Replay
	// Model is the model the job runs on, as another job ran it: the record of that name among
	// the tenant's (or, when it is gone, a record of that name that reaches no upstream) and the
	// model name the session is told. nil: the agent's model, resolved as always.
	Model *ModelAs
	// Origin is the job this one is made from (run again, replayed); nil: none.
	Origin *store.Origin
}

// ModelAs names a job's model as a recorded job had it.
type ModelAs struct {
	Record string
	Name   string
	Format gateway.Format // the format the session spoke; "" the harness's first that the record takes
}

// TextStream masks a stream of texts cut anywhere: Write returns what may be shown now, Flush
// the rest (secrets.Stream).
type TextStream interface {
	Write(text string) string
	Flush() string
}

type unmasked struct{}

func (unmasked) Write(text string) string { return text }
func (unmasked) Flush() string            { return "" }

// Node runs jobs.
type Node struct {
	cfg Config

	mu        sync.Mutex
	running   map[string]*Job // the live jobs: queued and started
	queue     []*Job          // the jobs waiting for a session, in the order they came
	active    int             // the sessions started and not ended
	recheck   *time.Timer     // set while queued jobs wait for a free core
	pastCores time.Time       // when the last session past one a core started
	queued    atomic.Int32    // len(queue), read without mu (the pool of sessions made ahead asks)
	byAgent   map[string]int  // of those, each agent's (for its limits.max_concurrent)
	// ending are the jobs whose end is decided and not yet recorded (the store could not write
	// it): tried again until it is, and never decided again meanwhile (a cancel leaves them).
	ending map[string]bool
	wg     sync.WaitGroup
	closed bool
	stop   chan struct{} // closed by Close

	ahead *ahead.Pool // the sessions made ahead of their jobs
	// longLines bounds the long stdout lines (a tool's result, a call's arguments: up to 8 MiB
	// each) the sessions handle at once, together.
	longLines *supervisor.LongLines
}

// maxLongLines is how many long lines the node's sessions handle at once: a few lines' worth of
// memory (each is read, decoded and stored, about five times its size while it is), however many
// sessions write them.
const maxLongLines = 2

// Job is a running job.
type Job struct {
	ID      string
	Agent   *plugin.Agent
	Plugin  *plugin.Plugin
	Harness *plugin.Harness
	Record  gateway.Record

	spec     jobspec.Job // what its session is built from
	mu       sync.Mutex
	session  *supervisor.Session
	cancel   bool              // cancelled before its session started
	tools    map[string]string // permission id → its tool
	deciders map[string]string // permission id → who decided
	changed  map[string]bool   // permission id → the decider allowed other arguments than asked
	rec      *recorder
	opts     SubmitOptions
	says     TextStream // the job's says, masked as one stream
	logs     TextStream // the pieces of a long log line, masked as one text; nil between lines

	// lost counts the events of the session the store could not take; the first, unless the
	// job's end was decided before it, stops the session and fails the job, saying why.
	lost lostEvents

	// Once the session's last line (its result or error) has come, what stdout brings after it
	// is kept here and recorded after it, when the session ends. (stderr is not: it runs beside
	// stdout, and a line of it that comes later may well have been written before.)
	last      bool
	afterLast []pending
	leftOut   int
}

// lostEvents are a job's events that could not be recorded.
type lostEvents struct {
	events, bytes int
	err           error // why the first could not be
	// decides: the first loss came before the job's end was decided (a cancel, the node's
	// stop), so it decides it: the job fails.
	decides bool
}

// pending is an event kept to be recorded later.
type pending struct {
	typ  string
	data any
}

// maxAfterLast bounds what is kept of a harness's lines after its last one.
const maxAfterLast = 1000

// add records an event of the session, or keeps one from stdout for after the last line once
// that has come. Called from the session's Sink, one event at a time.
func (j *Job) add(typ string, data any) {
	switch {
	case !j.last || typ == store.EventStderr:
		j.rec.add(typ, data)
	case len(j.afterLast) < maxAfterLast:
		j.afterLast = append(j.afterLast, pending{typ, data})
	default:
		j.leftOut++
	}
}

// flushSays records what the says held back: it might have begun a secret.
func (j *Job) flushSays() {
	if text := j.says.Flush(); text != "" {
		j.add(store.EventSay, sayData{text})
	}
}

// New returns a node.
func New(cfg Config) *Node {
	if cfg.Decider == nil {
		cfg.Decider = AllowListed{}
	}
	if cfg.Mask == nil {
		cfg.Mask = func(b []byte) []byte { return b }
	}
	if cfg.SayStream == nil {
		cfg.SayStream = func() TextStream { return unmasked{} }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions()
	}
	if cfg.Cores <= 0 {
		cfg.Cores = runtime.NumCPU()
	}
	if cfg.Runnable == nil {
		cfg.Runnable = runnableThreads
	}
	if cfg.Ahead.Max <= 0 || cfg.Ahead.Max > cfg.MaxSessions {
		cfg.Ahead.Max = cfg.MaxSessions
	}
	n := &Node{cfg: cfg, running: map[string]*Job{}, byAgent: map[string]int{}, ending: map[string]bool{}, stop: make(chan struct{}),
		longLines: supervisor.NewLongLines(maxLongLines)}
	policy := cfg.Ahead
	policy.Backlog = func() bool { return n.queued.Load() > 0 }
	n.ahead = ahead.New(policy, cfg.Logger.With("part", "ahead"))
	return n
}

// Ahead is the node's policy of when sessions are made.
func (n *Node) Ahead() ahead.Policy { return n.ahead.Policy() }

// SessionsAhead is how many sessions are made ahead and ready for a job now.
func (n *Node) SessionsAhead() int { return n.ahead.Ready() }

// MakeAhead makes sessions ahead for the harnesses of ps as they are now, as the node's policy
// says (nothing when it makes them cold), throwing away those made for a harness they no longer
// have.
func (n *Node) MakeAhead(ps []*plugin.Plugin) {
	for _, p := range ps {
		specs := make([]supervisor.Spec, len(p.Manifest.Harnesses))
		for i := range p.Manifest.Harnesses {
			specs[i] = n.harnessSpec(p, &p.Manifest.Harnesses[i])
		}
		n.ahead.Keep(p.Dir, specs)
	}
}

// harnessSpec is what every session of harness h of plugin p shares on this node.
func (n *Node) harnessSpec(p *plugin.Plugin, h *plugin.Harness) supervisor.Spec {
	spec := jobspec.HarnessSpec(p, h, n.cfg.GatewayURL, n.Sandbox(p.Dir))
	n.nodeSpec(&spec)
	return spec
}

// nodeSpec sets in spec what the node gives every session: where its directories are made, its
// grace period, the bound on long lines, the OTLP receiver.
func (n *Node) nodeSpec(spec *supervisor.Spec) {
	spec.TempDir = n.TempDir()
	spec.Limits.Grace = n.cfg.Grace
	spec.LongLines = n.longLines
	if n.cfg.ReceiveSpans {
		spec.Env.OTLPEndpoint = n.cfg.GatewayURL + "/otlp"
	}
}

// InputError is a job input that the agent does not take; no job was made.
type InputError = jobspec.InputError

// ErrUnknownAgent is wrapped by the error for an agent no loaded plugin has.
var ErrUnknownAgent = errors.New("unknown agent")

// ErrClosed is returned by Submit once the node is closing.
var ErrClosed = errors.New("the node is shutting down")

// Submit makes a job for agent with input as the user gave it, and starts it, or queues it when
// the node runs as many sessions as it may (Config.MaxSessions, the agent's
// limits.max_concurrent). It returns once the job is recorded: it never waits for a session.
func (n *Node) Submit(agentName, input string) (store.Job, error) {
	return n.SubmitWith(agentName, input, SubmitOptions{})
}

// SubmitWith is Submit with options: a recorded job, a replayed one.
func (n *Node) SubmitWith(agentName, input string, opts SubmitOptions) (store.Job, error) {
	if n.cfg.Refresh != nil {
		n.cfg.Refresh()
	}
	p, a := n.findAgent(agentName)
	if a == nil {
		var names []string
		for _, p := range n.cfg.Plugins.Plugins() {
			names = append(names, p.AgentNames()...)
		}
		return store.Job{}, fmt.Errorf("%w %q; the dev server runs: %s", ErrUnknownAgent, agentName, strings.Join(names, ", "))
	}
	h := p.Harness(a.HarnessName())
	in, err := jobspec.ParseInput(a, input)
	if err != nil {
		return store.Job{}, err
	}
	var model jobspec.Model
	if opts.Model != nil {
		model = modelAs(n.cfg.Records.Records(), h, *opts.Model)
	} else if model, err = jobspec.ResolveModel(n.cfg.Records.Records(), h, a); err != nil {
		return store.Job{}, fmt.Errorf("agent %s: %w", a.Name, err)
	}
	spec := jobspec.Job{Plugin: p, Harness: h, Agent: a, Input: in, Model: model}
	if err := spec.CheckRequest(); err != nil {
		return store.Job{}, err
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return store.Job{}, ErrClosed
	}
	n.wg.Add(1)
	n.mu.Unlock()
	j, err := n.cfg.Store.CreateJob(store.NewJob{
		Agent: a.Name, Plugin: p.Manifest.Name, Input: in.JSON, InputText: in.Text,
		ModelRecord: model.Record.Name, ModelName: model.Name,
		Limits: store.Limits{MaxSteps: a.Limits.MaxSteps, Timeout: a.Limits.TimeoutDuration()},
		Origin: opts.Origin,
	})
	if err != nil {
		n.wg.Done()
		return store.Job{}, err
	}
	spec.ID = j.ID
	job := &Job{ID: j.ID, Agent: a, Plugin: p, Harness: h, Record: model.Record, spec: spec,
		tools: map[string]string{}, deciders: map[string]string{}, changed: map[string]bool{}, opts: opts}
	n.mu.Lock()
	if n.closed { // Close came while the job was being recorded: it has ended the queue
		n.mu.Unlock()
		n.endQueued(job, store.StatusInterrupted, "oz0 dev stopped before the job started")
		return j, nil
	}
	n.running[j.ID] = job
	n.queue = append(n.queue, job)
	n.dispatchLocked()
	n.mu.Unlock()
	return j, nil
}

// modelAs is the model of a job that runs as another ran: its record by name, or, when the
// tenant's records have none of that name any more, a record of that name that reaches no
// upstream (a replay answers from its recording, with no key).
func modelAs(records []gateway.Record, h *plugin.Harness, m ModelAs) jobspec.Model {
	var rec *gateway.Record
	for i := range records {
		if records[i].Name == m.Record {
			rec = &records[i]
			break
		}
	}
	format := m.Format
	if rec == nil {
		if format == "" && len(h.Formats) > 0 {
			format = gateway.Format(h.Formats[0])
		}
		rec = &gateway.Record{Name: m.Record, Formats: []gateway.Format{format}}
	}
	if format == "" {
		for _, f := range h.Formats {
			if rec.Takes(gateway.Format(f)) {
				format = gateway.Format(f)
				break
			}
		}
	}
	return jobspec.Model{Record: *rec, Format: format, Name: m.Name}
}

func (n *Node) findAgent(name string) (*plugin.Plugin, *plugin.Agent) {
	for _, p := range n.cfg.Plugins.Plugins() {
		if a := p.Agent(name); a != nil {
			return p, a
		}
	}
	return nil, nil
}

// Sandbox is the sandbox that a session of the plugin in pluginDir runs in: the node's, with the
// other plugins hidden.
func (n *Node) Sandbox(pluginDir string) supervisor.Sandbox {
	sandbox := n.cfg.Sandbox
	sandbox.Hide = slices.Clone(sandbox.Hide)
	for _, p := range n.cfg.Plugins.Plugins() {
		if p.Dir != pluginDir {
			sandbox.Hide = append(sandbox.Hide, p.Dir)
		}
	}
	return sandbox
}

// TempDir is where the node's sessions make their directories; "" is os.TempDir().
func (n *Node) TempDir() string { return n.cfg.TempDir }
