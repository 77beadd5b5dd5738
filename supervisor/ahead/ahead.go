// Package ahead decides when a job's session is made: at its job (cold), or ahead of it (warm),
// and keeps the sessions made ahead. It is the one place that decision is made; the dev server's
// node, the conformance kit (oz0 plugin test) and through the node oz0 eval read it.
//
// A session made ahead is still one process per job, with its own directories, sandbox, key and
// trace context, nothing of another session's: what changes is when the process is started and
// what it has loaded when its job comes. What it may have loaded, written down here and tested:
//
//   - The third-party modules the harness imports (found by reading its modules and the plugin's
//     own modules they reach, never running them: supervisor/pyimports' reader), imported with
//     the plugin's own directories off the import path.
//   - Nothing of the plugin's own: its modules, a sitecustomize in its src/, run only once the
//     job has bound the session (PYTHONPATH comes with the job).
//   - Nothing of any job: the job, agent, key (ANTHROPIC_API_KEY, OPENAI_API_KEY, the OTLP
//     headers) and trace context (TRACEPARENT) come with the job, set before the harness runs.
//
// A Python harness run as `python -m MODULE` or `python FILE` is made ahead (the loader,
// loader.py, runs it as Python would), its sessions forked from a fork server (fork.go) where
// the policy says so; a Node harness run as `node FILE` is made ahead one session at a time
// (loader.mjs); any other starts at its job, as does every session of a Cold policy.
//
// A session made ahead is thrown away, and its job started cold, when what it loaded may have
// changed since: the harness's command, the plugin's environment (its .venv: a uv add, a uv
// sync), the sandbox. An edit of the plugin's own code never makes one stale: that code is
// imported after the job binds it.
package ahead

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/supervisor"
	"github.com/orchestrator-zero/oz0/supervisor/pyimports"
)

//go:embed warmups.py
var warmUps string

//go:embed zygote.py
var forkServer string

//go:embed loader.py
var loaderMain string

// nodeLoader is the program of a Node session made ahead.
//
//go:embed loader.mjs
var nodeLoader string

// loaderScript is the program of a Python session made ahead: the import reader, the frameworks'
// warm-ups, the fork server, then the loader (whose last line runs it). Made on first use: not in
// every command's start.
var loaderScript = sync.OnceValue(func() string {
	return pyimports.Reader + "\n" + warmUps + "\n" + forkServer + "\n" + loaderMain
})

// Mode is when a policy makes sessions.
type Mode string

const (
	// Cold makes each session at its job: the platform's cold start, every time.
	Cold Mode = "cold"
	// Warm keeps sessions made ahead of their jobs, their dependencies loaded.
	Warm Mode = "warm"
)

// Policy says when sessions are made, and how many are kept made ahead.
type Policy struct {
	Mode Mode
	// Fork forks each session of a Python harness from a fork server of the harness's, made
	// ahead (Warm): a burst of jobs then costs one import, not one each. A harness whose loader
	// leaves a thread running is made ahead PerHarness sessions at a time instead.
	Fork bool
	// PerHarness is how many sessions are kept made ahead for each harness (Warm); 0 is 1.
	PerHarness int
	// Max bounds the sessions made ahead in all, whatever the harnesses; 0 is PerHarness for
	// each harness asked for.
	Max int
	// Idle is how long a session made ahead is kept unused before it is dropped; 0 is DefaultIdle.
	Idle time.Duration
	// Backlog, when set, says whether jobs wait for a session (a node's queue). A fork server
	// forks none ahead meanwhile: the next job takes a session at once, and one forked at it
	// costs less than one forked ahead and warmed up (50 to 100 ms of a core), which then takes
	// a core from the jobs that run. It must not block.
	Backlog func() bool
}

// DefaultIdle is how long a session made ahead waits for a job before it is dropped.
const DefaultIdle = 10 * time.Minute

// String says the policy as the banner and oz0 plugin test say it.
func (p Policy) String() string {
	if p.Mode != Warm {
		return "cold: each session is made at its job (--cold)"
	}
	if p.forks() {
		return fmt.Sprintf("warm: %d forked ahead of their jobs from each Python harness's fork server, its dependencies loaded (--warm N; --cold makes each at its job)", p.forkedAhead())
	}
	return fmt.Sprintf("warm: %d made ahead for each Python harness, its dependencies loaded (--warm N; --cold makes each at its job)", p.perHarness())
}

// forks says whether the policy's Python sessions are forked: it asks for it, and the platform
// has fork servers (Linux).
func (p Policy) forks() bool { return p.Fork && supervisor.ForkServers }

// Forks says whether the policy forks the sessions of a harness run by command from a fork
// server (a Python harness, sessions made ahead, on Linux), unless its server finds it cannot.
func (p Policy) Forks(command []string) bool {
	return p.Mode == Warm && p.forks() && len(command) > 0 && supervisor.IsPython(command[0])
}

func (p Policy) perHarness() int { return max(1, p.PerHarness) }

// forkedAhead is how many sessions of each harness a fork server forks ahead of their jobs:
// PerHarness, and at least two, since one is forked as a job ends: a job that comes right after
// another (oz0 plugin test's scenarios, an eval's cases) takes the second. A forked session costs
// what it writes (10 to 20 MiB), not a framework's import.
func (p Policy) forkedAhead() int { return max(2, p.PerHarness) }

// How says how a job's session was made, for its record (the session event).
type How = apiv1.SessionStart

// The starts of How.
const (
	StartMadeAhead = apiv1.SessionMadeAhead
	StartForked    = apiv1.SessionForked
	// StartForkedAhead is a session forked from its harness's fork server before its job came.
	StartForkedAhead = apiv1.SessionForkedAhead
	StartCold        = apiv1.SessionCold
)

// Pool keeps the sessions made ahead of their jobs, for a policy.
type Pool struct {
	policy Policy
	log    *slog.Logger

	mu      sync.Mutex
	made    map[string][]*entry // by harness key, oldest first
	making  map[string]int      // being made, by harness key
	servers map[string]*server  // each harness's fork server, by harness key
	noForks map[string]string   // the harnesses whose sessions cannot be forked: the plugin's environment then
	total   int
	closed  bool
	wg      sync.WaitGroup
}

type entry struct {
	m     *supervisor.Made
	stamp string        // the plugin's environment when it was made
	gone  chan struct{} // closed when it leaves the pool (taken or thrown away)
}

// New returns a pool for policy; logger gets what went wrong making a session ahead.
func New(policy Policy, logger *slog.Logger) *Pool {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if policy.Idle <= 0 {
		policy.Idle = DefaultIdle
	}
	return &Pool{policy: policy, log: logger, made: map[string][]*entry{}, making: map[string]int{},
		servers: map[string]*server{}, noForks: map[string]string{}}
}

// Policy is the pool's policy.
func (p *Pool) Policy() Policy { return p.policy }

// Start starts the session of spec, a job's: with a session made ahead for its harness when the
// policy keeps them and one fits, else at once (cold); then it makes the harness's next one.
func (p *Pool) Start(ctx context.Context, spec supervisor.Spec) (*supervisor.Session, How, error) {
	if p == nil || p.policy.Mode != Warm {
		return startCold(ctx, spec, "")
	}
	key, ok := harnessKey(spec)
	if !ok {
		return startCold(ctx, spec, "")
	}
	if p.forks(key, spec) {
		if s, how, ok, err := p.startForked(ctx, key, spec); ok {
			return s, how, err
		}
	}
	e, ready, why := p.take(key, envStamp(spec.PluginDir))
	defer p.Prepare(spec)
	if e == nil {
		return startCold(ctx, spec, why)
	}
	s, err := e.m.Bind(ctx, spec)
	if errors.Is(err, supervisor.ErrGone) {
		return startCold(ctx, spec, "its session made ahead had exited")
	}
	if err != nil {
		return nil, How{}, err
	}
	how := How{Start: StartMadeAhead, MadeAt: s.MadeAt(), BoundAt: time.Now(), Program: s.Program(), Loaded: e.m.Report()}
	if !ready {
		how.Start, how.Why = StartCold, why
	}
	return s, how, nil
}

func startCold(ctx context.Context, spec supervisor.Spec, why string) (*supervisor.Session, How, error) {
	s, err := supervisor.Start(ctx, spec)
	if err != nil {
		return nil, How{}, err
	}
	now := time.Now()
	return s, How{Start: StartCold, MadeAt: now, BoundAt: now, Program: s.Program(), Why: why}, nil
}

// take returns a made session of the harness key whose environment is still stamp, throwing away
// the ones it finds stale: one that is ready first, else the one being made longest (it is ready
// sooner than a session started now would be); nil, and why, when there is none. ready says
// whether it was ready.
func (p *Pool) take(key, stamp string) (e *entry, ready bool, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var stale []*entry
	kept := p.made[key][:0]
	for _, c := range p.made[key] {
		if c.stamp != stamp {
			stale = append(stale, c)
		} else {
			kept = append(kept, c)
		}
	}
	for _, c := range kept {
		if c.m.Ready() {
			e, ready = c, true
			break
		}
	}
	if e == nil && len(kept) > 0 {
		e = kept[0]
	}
	if e != nil {
		kept = slices.DeleteFunc(kept, func(c *entry) bool { return c == e })
		close(e.gone)
	}
	p.total -= len(p.made[key]) - len(kept)
	p.made[key] = kept
	for _, c := range stale {
		close(c.gone)
		go c.m.Discard()
	}
	switch {
	case e != nil && !ready:
		why = "its session made ahead was still loading when the job came"
	case e == nil && len(stale) > 0:
		why = "the plugin's environment changed since its session was made ahead"
	case e == nil:
		why = "no session was made ahead for it yet"
	}
	return e, ready, why
}

// Prepare makes sessions ahead for the harness of spec (a job's spec, or one without a job: its
// request and keys are not used) until the policy's number wait, in the background.
func (p *Pool) Prepare(spec supervisor.Spec) {
	if p == nil || p.policy.Mode != Warm {
		return
	}
	key, ok := harnessKey(spec)
	if !ok {
		return
	}
	if p.forks(key, spec) {
		p.prepareServer(key, spec)
		return
	}
	p.mu.Lock()
	want := p.policy.perHarness() - len(p.made[key]) - p.making[key]
	if p.policy.Max > 0 {
		want = min(want, p.policy.Max-p.total-p.makingTotal())
	}
	if p.closed || want <= 0 {
		p.mu.Unlock()
		return
	}
	p.making[key] += want
	p.wg.Add(want)
	p.mu.Unlock()
	ahead := aheadSpec(spec)
	for range want {
		go p.make(key, ahead)
	}
}

func (p *Pool) makingTotal() int {
	n := 0
	for _, k := range p.making {
		n += k
	}
	return n
}

// make makes one session ahead for the harness key and keeps it until it is taken, goes stale,
// idles past the policy's Idle, or exits.
func (p *Pool) make(key string, spec supervisor.Spec) {
	defer p.wg.Done()
	stamp := envStamp(spec.PluginDir)
	m, err := makeLoader(spec)
	p.mu.Lock()
	p.making[key]--
	if err != nil || p.closed {
		p.mu.Unlock()
		if err != nil {
			p.log.Warn("a session could not be made ahead; jobs start cold", "harness", spec.Request.Harness, "err", err)
		} else {
			m.Discard()
		}
		return
	}
	e := &entry{m: m, stamp: stamp, gone: make(chan struct{})}
	p.made[key] = append(p.made[key], e)
	p.total++
	p.wg.Add(1)
	p.mu.Unlock()
	go p.watch(key, e)
}

// watch drops e when its process exits unbound or it idles past the policy's Idle; it returns
// when e leaves the pool.
func (p *Pool) watch(key string, e *entry) {
	defer p.wg.Done()
	idle := time.NewTimer(p.policy.Idle)
	defer idle.Stop()
	select {
	case <-e.gone:
		return
	case <-e.m.Exited():
	case <-idle.C:
	}
	if p.remove(key, e) {
		e.m.Discard()
	}
}

// remove takes e out of the pool; false when it was out already.
func (p *Pool) remove(key string, e *entry) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.made[key]
	i := slices.Index(list, e)
	if i < 0 {
		return false
	}
	p.made[key] = slices.Delete(list, i, i+1)
	p.total--
	close(e.gone)
	return true
}

// Keep makes sessions ahead for the harnesses of specs, those of the plugin in dir as it is now,
// and throws away the ones made for a harness of dir that specs no longer have (its command
// changed, say). An edit of the plugin's own code keeps them: it is imported once a job binds.
func (p *Pool) Keep(dir string, specs []supervisor.Spec) {
	if p == nil {
		return
	}
	keys := map[string]bool{}
	for _, spec := range specs {
		if key, ok := harnessKey(spec); ok {
			keys[key] = true
		}
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	p.mu.Lock()
	var gone []*entry
	for key, list := range p.made {
		if keyDir(key) == dir && !keys[key] {
			gone = append(gone, list...)
			p.total -= len(list)
			delete(p.made, key)
		}
	}
	for _, e := range gone {
		close(e.gone)
	}
	var servers []*server
	for key, srv := range p.servers {
		if keyDir(key) == dir && !keys[key] {
			servers = append(servers, srv)
			delete(p.servers, key)
		}
	}
	p.mu.Unlock()
	for _, e := range gone {
		e.m.Discard()
	}
	for _, srv := range servers {
		srv.close()
	}
	for _, spec := range specs {
		p.Prepare(spec)
	}
}

// Close throws away every session made ahead and waits for those being made.
func (p *Pool) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.closed = true
	var gone []*entry
	for key, list := range p.made {
		gone = append(gone, list...)
		delete(p.made, key)
	}
	for _, e := range gone {
		close(e.gone)
	}
	p.total = 0
	servers := p.servers
	p.servers = map[string]*server{}
	p.mu.Unlock()
	for _, srv := range servers {
		srv.close()
	}
	for _, e := range gone {
		e.m.Discard()
	}
	p.wg.Wait()
}

// Ready is how many sessions made ahead are ready for a job now, in all.
func (p *Pool) Ready() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, list := range p.made {
		for _, e := range list {
			if e.m.Ready() {
				n++
			}
		}
	}
	for _, srv := range p.servers {
		_, ready := srv.waiting()
		n += ready
	}
	return n
}

// Waiting is how many sessions are made ahead and waiting, in all.
func (p *Pool) Waiting() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.total
	for _, srv := range p.servers {
		waiting, _ := srv.waiting()
		n += waiting
	}
	return n
}

// harnessKey names what a made session must share with a job's to take it: the harness's command,
// the plugin, where sessions are made, the sandbox and the environment the node gives sessions.
// ok is false for a harness that is not made ahead.
func harnessKey(spec supervisor.Spec) (string, bool) {
	if loaderEntry(spec.Command) == nil {
		return "", false
	}
	dir, err := filepath.Abs(cmp.Or(spec.PluginDir, "."))
	if err != nil {
		return "", false
	}
	e := spec.Env
	parts := []string{dir, strings.Join(spec.Command, "\x00"), spec.TempDir, string(spec.Sandbox.Tier),
		strings.Join(spec.Sandbox.Hide, "\x00"), e.PATH, e.LANG, e.AnthropicBaseURL, e.OpenAIBaseURL, e.OTLPEndpoint}
	return strings.Join(parts, "\x01"), true
}

func keyDir(key string) string { dir, _, _ := strings.Cut(key, "\x01"); return dir }

// loaderEntry is what the loader runs of a harness's command: for Python, -m MODULE ARGS... or
// FILE ARGS... (as python runs them); for Node, FILE ARGS... (node FILE). nil when it is not one
// a loader can run as its interpreter would.
func loaderEntry(argv []string) []string {
	if len(argv) < 2 || strings.ContainsRune(argv[0], '/') {
		return nil
	}
	switch {
	case supervisor.IsPython(argv[0]):
		if mod, at := supervisor.PythonModule(argv); mod != "" && at == 2 && argv[1] == "-m" {
			return argv[1:]
		}
		if i := supervisor.ScriptArg(argv); i == 1 && strings.HasSuffix(argv[1], ".py") {
			return argv[1:]
		}
	case isNode(argv[0]):
		if i := supervisor.ScriptArg(argv); i == 1 && (strings.HasSuffix(argv[1], ".mjs") || strings.HasSuffix(argv[1], ".js")) {
			return argv[1:]
		}
	}
	return nil
}

func isNode(program string) bool { return program == "node" || program == "nodejs" }

// aheadSpec is the harness's part of spec, as a session made ahead is made with: no job, no key,
// no trace context, and the loader's command.
func aheadSpec(spec supervisor.Spec) supervisor.Spec {
	return supervisor.Spec{
		Command:   spec.Command,
		PluginDir: spec.PluginDir,
		TempDir:   spec.TempDir,
		Sandbox:   spec.Sandbox,
		Env: supervisor.Env{PATH: spec.Env.PATH, LANG: spec.Env.LANG,
			AnthropicBaseURL: spec.Env.AnthropicBaseURL, OpenAIBaseURL: spec.Env.OpenAIBaseURL, OTLPEndpoint: spec.Env.OTLPEndpoint},
		Request: harnesskit.SessionRequest{Harness: spec.Request.Harness}, // for the log alone
	}
}

// makeLoader makes a session ahead with the loader as its program.
func makeLoader(spec supervisor.Spec) (*supervisor.Made, error) {
	made, err := loaderSpec(spec, false)
	if err != nil {
		return nil, err
	}
	if isNode(spec.Command[0]) {
		// Its packages resolve from the plugin's directory, as the harness's own imports do.
		return supervisor.MakeIn(made, made.PluginDir)
	}
	return supervisor.Make(made)
}

// loaderSpec is spec with the loader as its program, which runs the harness's command once bound
// (or, with fork, forks a session running it for each job).
func loaderSpec(spec supervisor.Spec, fork bool) (supervisor.Spec, error) {
	dir, err := filepath.Abs(cmp.Or(spec.PluginDir, "."))
	if err != nil {
		return spec, err
	}
	var pythonPath string
	if supervisor.IsPython(spec.Command[0]) {
		path := cmp.Or(spec.Env.PATH, os.Getenv("PATH"), supervisor.DefaultPATH)
		if _, _, pythonPath, err = supervisor.PythonEnv(spec.Command[0], dir, path); err != nil {
			return spec, err
		}
	}
	entry := slices.Clone(loaderEntry(spec.Command))
	if entry[0] != "-m" && !filepath.IsAbs(entry[0]) {
		entry[0] = filepath.Join(dir, entry[0]) // as the node resolves a script's path
	}
	spec.PluginDir = dir
	if isNode(spec.Command[0]) {
		spec.Command = append([]string{spec.Command[0], "--input-type=module", "-e", nodeLoader, dir}, entry...)
		return spec, nil
	}
	// -S: the loader does site's work itself, without a sitecustomize of the plugin's (loader.py).
	args := []string{spec.Command[0], "-S", "-c", loaderScript(), dir, pythonPath}
	if fork {
		args = append(args, "--fork")
	}
	spec.Command = append(args, entry...)
	return spec, nil
}

// envStamp says when the plugin's environment last changed: its .venv's configuration and its
// site-packages directories (a package installed or removed changes them), "" without one.
func envStamp(pluginDir string) string {
	venv := filepath.Join(pluginDir, ".venv")
	var b strings.Builder
	stamp := func(p string) {
		if info, err := os.Stat(p); err == nil {
			b.WriteString(p + "\x00" + strconv.FormatInt(info.ModTime().UnixNano(), 10) + "\x00" + strconv.FormatInt(info.Size(), 10) + "\n")
		}
	}
	stamp(filepath.Join(venv, "pyvenv.cfg"))
	sites, _ := filepath.Glob(filepath.Join(venv, "lib", "python*", "site-packages"))
	for _, s := range sites {
		stamp(s)
	}
	return b.String()
}
