// Package devserver is `oz0 dev`: one process with the control API, the durable job store, a node
// that runs sessions, the model gateway and the fake model, all on one loopback port.
package devserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/api/discovery"
	"github.com/orchestrator-zero/oz0/devserver/api"
	"github.com/orchestrator-zero/oz0/devserver/approvals"
	"github.com/orchestrator-zero/oz0/devserver/node"
	"github.com/orchestrator-zero/oz0/devserver/secrets"
	"github.com/orchestrator-zero/oz0/devserver/store"
	"github.com/orchestrator-zero/oz0/devserver/tenanthooks"
	"github.com/orchestrator-zero/oz0/devserver/ui"
	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/fakemodel"
	"github.com/orchestrator-zero/oz0/gateway"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
	"github.com/orchestrator-zero/oz0/lint"
	"github.com/orchestrator-zero/oz0/plugin"
	"github.com/orchestrator-zero/oz0/supervisor"
	"github.com/orchestrator-zero/oz0/supervisor/ahead"
	"github.com/orchestrator-zero/oz0/supervisor/pyimports"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
	"github.com/orchestrator-zero/oz0/telemetry"
)

// Config says what to serve.
type Config struct {
	PluginDirs []string // at least one
	Addr       string   // loopback host:port; "" is 127.0.0.1:0 (a free port); Start refuses to serve off loopback
	// StablePort (oz0 dev without --addr) listens on 127.0.0.1 at the port this state directory's
	// server had last time, else discovery.DefaultPort, else a port of the plugin's own in the
	// fallback range; Addr is ignored.
	StablePort bool
	StateDir   string // "" is <first plugin>/.oz0/dev
	Ephemeral  bool   // state in a temporary directory, removed on Close
	Version    string
	// FakeScript is the fake model's script; nil is the built-in one.
	FakeScript *fakemodel.Script
	// FakeScriptFile is the file FakeScript was read from (--fake-script), "" for none: it is
	// watched, and read again when edited.
	FakeScriptFile string
	// Out gets the banner and reload notes; Log gets the server's log lines.
	Out io.Writer
	Log io.Writer
	// LogHandler formats the log lines (oz0 dev --log-level, --log-format); nil is text at info
	// level on Log.
	LogHandler slog.Handler
	// Poll is how often plugin files are checked for changes; 0 is 300 ms, < 0 is never.
	Poll time.Duration
	// HooksFile is the tenant's hooks; "" is hooks.yaml in the state directory, if it exists.
	HooksFile string
	// Getenv reads oz0 dev's environment: OZ0_ANTHROPIC_BASE_URL and OZ0_OPENAI_BASE_URL give the
	// providers' upstreams when their keys are set without --base-url. nil reads nothing.
	Getenv func(string) string
	// Started is when the command started, for "ready in N ms"; zero is Start's start.
	Started time.Time
	// warmUpDelay, when not zero, is how long the warm-ups wait for a first request (tests):
	// the constant warmUpDelay otherwise.
	warmUpDelay time.Duration
	// Sandbox is the node's sandbox tier; "" is the default: standard where this machine allows
	// it, else none with a warning (sandbox.Resolve). A tier asked for that cannot work here is
	// an environment error saying why.
	Sandbox sandbox.Tier
	// Record keeps every job's model calls, for `oz0 job replay` and `oz0 job script`.
	Record bool
	// MaxSessions is the most sessions the node runs at once (oz0 dev --max-sessions); the jobs
	// past it wait, queued. 0 is node.DefaultMaxSessions().
	MaxSessions int
	// Ahead says when sessions are made (oz0 dev --warm N, --cold): the zero value is cold.
	Ahead ahead.Policy
	// Ref is the git ref of oz0's repository whose schemas the files the server writes point at
	// (a release's tag); "" is main.
	Ref string
	// Telemetry says where each job's trace is exported over OTLP (oz0 dev's --otlp-* flags; the
	// standard OTEL_* variables, read with Getenv, otherwise).
	Telemetry telemetry.Config
	// TokenFiles are files outside the state directory that hold the token (oz0 dev's
	// --ready-file): sessions must not see them, as they must not see the state directory,
	// wherever they lie (in the plugin, beside it).
	TokenFiles []string

	limits portLimits // the port's limits (limits.go); zero: the defaults
}

// Server is a running dev server.
type Server struct {
	cfg      Config
	URL      string
	Token    string
	StateDir string

	store       *store.Store
	secrets     *secrets.Store
	gw          *gateway.Gateway
	fake        *fakeModel
	keys        *gateway.MemResolver
	inflight    *inflight
	inbox       *approvals.Inbox
	hooks       *liveHooks
	hooksFile   string
	node        *node.Node
	ui          *ui.UI
	http        *http.Server
	listener    net.Listener
	self        *selfListener  // the server's calls to itself (limits.go)
	selfAPI     *client.Client // its API called in memory (evals.go)
	selfOnce    sync.Once
	evalRuns    *evalRuns // the dev UI's eval runs (evalruns.go)
	selfHTTP    *http.Server
	conns       *countedListener
	plugins     atomic.Pointer[[]*plugin.Plugin]
	records     *records
	interrupted []string             // jobs marked interrupted at start-up, for the banner
	leftovers   supervisor.Leftovers // what a crashed oz0's sessions left, cleaned at start-up
	madeState   string               // the outermost directory openState made, removed if Start fails
	kept        discovery.Kept       // the port and token of the last run on this state directory
	portNote    string               // why the port is not the default one, for the banner
	tier        sandbox.Tier
	warmOnce    sync.Once
	warmMu      sync.Mutex    // held while the warm-ups start, and while the stop begins
	warming     chan struct{} // closed when the warm-ups start
	tierCh      chan resolvedTier
	reapCh      chan reaped
	// tierRemembered: the tier was taken as working from memory, and is checked again once the
	// API answers.
	tierRemembered bool
	recorded       recordedBytes
	otlp           *telemetry.Exporter // nil: no backend
	otlpSettings   telemetry.Settings
	spans          *telemetry.Receiver
	log            *slog.Logger
	out            io.Writer
	outMu          sync.Mutex

	undo      []func() error // what the steps of Start made, undone in reverse by Close
	stopWatch chan struct{}
	watchDone chan struct{}
	prints    pluginPrints // the plugins' files as last loaded, while the watcher runs
	closeOnce sync.Once
	closeErr  error
}

// ErrAgentConflict is wrapped by Start's error when two plugins have an agent of the same name.
var ErrAgentConflict = errors.New("an agent name must be unique across the plugins oz0 dev serves")

// Start starts a dev server, step by step; on error, what the steps made is undone and nothing
// is left running. A plugin with lint errors or a hooks file with problems gives a
// *diag.ReportError, and two plugins with an agent of the same name an error wrapping
// ErrAgentConflict; every other error is the environment's (a busy port, a file that
// cannot be read, a state directory that cannot be made or is in use).
func Start(cfg Config) (_ *Server, err error) {
	s := newServer(cfg)
	defer func() {
		if err != nil {
			s.stopWarmUps() // a request answered before the failure must not start them
			s.unwind()
			// A start that failed leaves no trace: a state directory it made goes again.
			if s.madeState != "" {
				os.RemoveAll(s.madeState)
			}
		}
	}()
	// Whether the sandbox's tier works here is learnt by building one (10–15 ms, mostly waiting
	// for it), unless it was seen to work since the machine started (then it is checked again
	// once the API answers): meanwhile the rest starts.
	go func() {
		var r resolvedTier
		r.tier, r.warning, r.remembered, r.err = sandbox.ResolveRemembered(s.cfg.Sandbox)
		s.tierCh <- r
	}()
	// The plugins are linted while the state directory opens (SQLite's open and migrations):
	// neither needs the other, and each is a good part of the start. A plugin with findings still
	// stops the start, and its findings are the error, whatever the state's open said.
	if err := s.lintBesideState(); err != nil {
		return nil, err
	}
	// The node is the first step that needs the tier: the probe has until then.
	for _, step := range []func() error{s.startTelemetry, s.loadHooks, s.listen, s.startGateway, s.loadTenant, s.resolveSandbox, s.startNode, s.serveAPI, s.advertise} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	s.startWatch()
	s.banner()
	timer := time.AfterFunc(cmp.Or(s.cfg.warmUpDelay, warmUpDelay), s.warmUp)
	s.undo = append(s.undo, func() error { timer.Stop(); return nil })
	return s, nil
}

// warmUpDelay is how long the warm-ups wait for the API's first request before they start
// without one.
const warmUpDelay = 250 * time.Millisecond

// warmUp starts, once, what no request needs but a first job would wait for: the tier's first
// init (an exec of oz0 in its namespaces), the interpreter question (a pyenv shim is ~150 ms of
// CPU), the default fake model's script (parsed and checked against its schema), the harnesses'
// imports, the check of a tier taken from memory. It runs once the API has answered its first
// request, or warmUpDelay after the banner without one: started with the banner, they took the
// two cores from that first answer (oz0 dev's first 200 came ~10 ms later, of ~20).
func (s *Server) warmUp() {
	s.warmOnce.Do(func() {
		// Under warmMu, which the stop takes to close stopWatch: once the stop has begun, none
		// starts (those started before it end with the node's stop, or the process).
		s.warmMu.Lock()
		defer s.warmMu.Unlock()
		if s.stopping() {
			return
		}
		close(s.warming)
		s.askAhead(s.Plugins())
		sandbox.WarmUp(s.tier)
		go s.fake.server()
		go s.checkImports()
		if s.tierRemembered {
			go s.recheckSandbox()
		}
	})
}

// stopWarmUps closes stopWatch, which the watcher, the warm-ups and the imports' check follow.
func (s *Server) stopWarmUps() {
	s.warmMu.Lock()
	defer s.warmMu.Unlock()
	close(s.stopWatch)
}

// stopping says whether the server has begun to stop (or its start failed).
func (s *Server) stopping() bool {
	select {
	case <-s.stopWatch:
		return true
	default:
		return false
	}
}

// afterFirstAnswer calls then, in the background, once h has answered its first request.
func afterFirstAnswer(h http.Handler, then func()) http.Handler {
	var answered atomic.Bool
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if answered.CompareAndSwap(false, true) {
			go then()
		}
	})
}

// checkImports looks up what the Python harnesses import (pyimports: their files read, never run),
// in a session of their sandbox (oz0 doctor's check), after the banner, so that a framework missing
// from the plugin's environment is said at start, with where it is imported and the mend, rather
// than by the first job's failure. It starts an interpreter, so it does not hold up the start.
func (s *Server) checkImports() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.stopWatch:
			cancel()
		case <-ctx.Done():
		}
	}()
	for _, p := range s.Plugins() {
		// At a low priority: the interpreters it starts took the cores from the first requests.
		// In the sandbox of the plugin's sessions: it runs their interpreter and environment.
		opts := pyimports.Options{Background: true, Sandbox: s.node.Sandbox(p.Dir), TempDir: s.node.TempDir()}
		if _, problem, err := pyimports.Check(ctx, p, opts); problem != nil && ctx.Err() == nil {
			s.say("warning: %s: its jobs will fail; %s", problem, problem.Mend())
		} else if err != nil && ctx.Err() == nil {
			s.log.Warn("cannot check the harnesses' imports", "plugin", p.Manifest.Name, "err", err)
		}
	}
}

// recheckSandbox builds a sandbox of the tier that the start took from memory, as the start would
// have (sandbox.ResolveRemembered). A tier that no longer works (a setting changed since it was
// seen to work) is forgotten and said: its jobs fail, and the next start checks it again.
func (s *Server) recheckSandbox() {
	if err := sandbox.Check(s.tier); err != nil {
		if s.stopping() {
			return // a sandbox built while the server stops says nothing of the machine
		}
		sandbox.Forget(s.tier)
		s.say("warning: %v, though it did earlier since this machine started: jobs will fail; restart oz0 dev, which checks the tier again", err)
		return
	}
	s.log.Debug("sandbox: checked again: the tier works", "tier", s.tier)
}

// newServer fills in the defaults of cfg.
func newServer(cfg Config) *Server {
	if cfg.Started.IsZero() {
		cfg.Started = time.Now()
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Poll == 0 {
		cfg.Poll = 300 * time.Millisecond
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if len(cfg.PluginDirs) == 0 {
		cfg.PluginDirs = []string{"."}
	}
	if cfg.LogHandler == nil {
		cfg.LogHandler = slog.NewTextHandler(cfg.Log, nil)
	}
	cfg.limits = cfg.limits.withDefaults()
	return &Server{cfg: cfg, out: cfg.Out, log: slog.New(cfg.LogHandler), stopWatch: make(chan struct{}), watchDone: make(chan struct{}), warming: make(chan struct{}), tierCh: make(chan resolvedTier, 1), reapCh: make(chan reaped, 1)}
}

type resolvedTier struct {
	tier       sandbox.Tier
	warning    string
	remembered bool
	err        error
}

type reaped struct {
	leftovers supervisor.Leftovers
	err       error
}

// resolveSandbox settles the sessions' sandbox tier, and cleans up what the sessions of an oz0
// that crashed left behind (processes, directories).
func (s *Server) resolveSandbox() error {
	if r := <-s.reapCh; r.err != nil {
		s.log.Warn("cannot look for the sessions a crashed oz0 left", "err", r.err)
	} else {
		s.leftovers = r.leftovers
	}
	r := <-s.tierCh
	if r.err != nil {
		msg := r.err.Error()
		var u *sandbox.Unavailable
		if errors.As(r.err, &u) && u.Mend != "" {
			msg += "; " + u.Mend
		}
		return fmt.Errorf("--sandbox %s: %s", s.cfg.Sandbox, msg)
	}
	s.tier, s.tierRemembered = r.tier, r.remembered
	if r.remembered {
		s.log.Debug("sandbox: the tier was seen to work since this machine started; it is checked again once the API has answered", "tier", s.tier)
	}
	if r.warning != "" {
		s.say("warning: %s", r.warning)
	}
	if w := s.tier.Policy().Warning; w != "" {
		s.say("warning: %s", w)
	}
	return nil
}

// askAhead asks, in the background, what the first session of each of ps's harnesses would ask
// as it starts (which interpreter a Python wrapper on PATH runs), so that no session waits for it
// and a herd of them asks it once; and makes the sessions the node keeps ahead of their jobs.
func (s *Server) askAhead(ps []*plugin.Plugin) {
	sandbox.KeepSpare(s.tier, !s.allForked(s.Plugins()))
	for _, p := range ps {
		for _, h := range p.Manifest.Harnesses {
			supervisor.AskAhead(supervisor.Spec{Command: h.Command, PluginDir: p.Dir, Sandbox: supervisor.Sandbox{Tier: s.tier}})
		}
	}
	s.node.MakeAhead(ps)
}

// allForked says whether every harness's sessions are forked from a fork server (oz0 dev's
// default for a Python harness): then no session takes the tier's init started ahead, and the
// tier keeps none (sandbox.KeepSpare).
func (s *Server) allForked(ps []*plugin.Plugin) bool {
	for _, p := range ps {
		for _, h := range p.Manifest.Harnesses {
			if !s.node.Ahead().Forks(h.Command) {
				return false
			}
		}
	}
	return true
}

// loadPlugins loads and lints the plugins first: one that does not lint is refused before
// anything is made.
func (s *Server) loadPlugins() error {
	var loaded []*plugin.Plugin
	for _, dir := range s.cfg.PluginDirs {
		p, _, err := lint.Load(dir)
		var re *diag.ReportError
		if errors.As(err, &re) {
			return err // its findings are the reason; oz0 dev starts once it lints clean
		}
		if err != nil {
			return err // it says which directory, and why it cannot be read
		}
		loaded = append(loaded, p)
	}
	if err := checkAgentNames(loaded); err != nil {
		return err
	}
	s.plugins.Store(&loaded)
	return nil
}

// lintBesideState loads (lints) the plugins and opens the state directory at the same time. The
// state opens beside the lint only where it cannot change what the lint sees: its default
// directory is in the first plugin's, which must exist already (else the lint says so, and the
// state is not opened).
func (s *Server) lintBesideState() error {
	if s.cfg.StateDir == "" && !s.cfg.Ephemeral {
		if st, err := os.Stat(s.cfg.PluginDirs[0]); err != nil || !st.IsDir() {
			s.reapBeside()
			if err := s.loadPlugins(); err != nil {
				return err
			}
			return s.openState()
		}
	}
	// The state's open, the longer of the two (SQLite's first use in the process), runs here,
	// at once; the lint waits for a core in a goroutine of its own. Started the other way round,
	// the open was often not taken up by the other core until the lint had ended: the first
	// 200 came 0.3–0.5 ms later after main (medians of 20 starts, four rounds alternated).
	linted := make(chan error, 1)
	go func() { linted <- s.loadPlugins() }()
	s.reapBeside()
	stateErr := s.openState()
	lintErr := <-linted // before any return: both are done when Start unwinds
	if lintErr != nil {
		return lintErr
	}
	return stateErr
}

// reapBeside cleans up, in the background, what the sessions of an oz0 that crashed left
// (processes, directories); resolveSandbox waits for it, before the node starts.
func (s *Server) reapBeside() {
	go func() {
		var r reaped
		r.leftovers, r.err = supervisor.ReapStale("")
		s.reapCh <- r
	}()
}

// openState opens the state directory: the job store, the secrets, the approvals inbox. What
// was live when oz0 dev last stopped is marked interrupted.
func (s *Server) openState() error {
	s.StateDir = s.cfg.StateDir
	switch {
	case s.cfg.Ephemeral:
		dir, err := os.MkdirTemp("", "oz0-dev-")
		if err != nil {
			return err
		}
		s.StateDir = dir
		s.undo = append(s.undo, func() error { return os.RemoveAll(dir) })
	case s.StateDir == "":
		// The first plugin's directory, as lint.Load makes it absolute.
		dir, err := filepath.Abs(s.cfg.PluginDirs[0])
		if err != nil {
			return err
		}
		s.StateDir = discovery.StateDir(dir)
	default:
		// Absolute, for the banner and so the plugin watcher can tell it apart from the plugin.
		abs, err := filepath.Abs(s.StateDir)
		if err != nil {
			return fmt.Errorf("--state-dir %s: %w", s.cfg.StateDir, err)
		}
		s.StateDir = abs
	}
	made := firstMissing(s.StateDir)
	if err := os.MkdirAll(s.StateDir, 0o700); err != nil {
		return fmt.Errorf("cannot make the state directory %s: %w; choose another with --state-dir", s.StateDir, err)
	}
	s.madeState = made
	if !s.cfg.Ephemeral {
		s.kept = discovery.LoadKept(s.StateDir)
	}
	var err error
	// Said from the store's writer, which must not wait for the terminal.
	opts := store.Options{NoSync: s.cfg.Ephemeral, OnDiskFull: func(full error) {
		if full != nil {
			go s.say("warning: %s; meanwhile a job whose events cannot be recorded fails, and new jobs are refused", full)
		} else {
			go s.say("the disk that holds the state directory has room again: jobs run again")
		}
	}}
	if s.store, err = store.OpenWith(s.StateDir, opts); err != nil {
		return err
	}
	s.undo = append(s.undo, s.store.Close)
	if s.secrets, err = secrets.Open(s.StateDir); err != nil {
		return err
	}
	for _, w := range s.secrets.Warnings() {
		s.say("warning: %s", w)
	}
	s.store.SetMasker(s.secrets.Masker())
	if s.interrupted, err = s.store.MarkInterrupted("oz0 dev stopped (or crashed) while the job was live"); err != nil {
		return err
	}
	s.inbox = approvals.New(s.store)
	_, err = s.inbox.Interrupt("oz0 dev stopped while it waited; its job was interrupted")
	return err
}

// firstMissing is the outermost directory of dir's path that does not exist, which making dir
// makes; "" when dir exists.
func firstMissing(dir string) string {
	missing := ""
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return missing
		}
		missing = p
		if filepath.Dir(p) == p {
			return missing
		}
	}
}

// loadHooks loads the tenant's hooks: --hooks, else hooks.yaml in the state directory if there
// is one.
func (s *Server) loadHooks() error {
	s.hooksFile = s.cfg.HooksFile
	if s.hooksFile == "" {
		s.hooksFile = filepath.Join(s.StateDir, tenanthooks.FileName)
	} else if _, err := os.Stat(s.hooksFile); err != nil {
		return fmt.Errorf("cannot read --hooks %s: %w", s.hooksFile, err)
	}
	set, err := s.readHooks()
	if err != nil {
		return err // findings (oz0 dev starts once they are fixed), or why the file cannot be read
	}
	s.hooks = newLiveHooks(set)
	s.undo = append(s.undo, s.hooks.Close)
	return nil
}

// readHooks loads the hooks file, its plugins' log lines going to the dev server's log.
func (s *Server) readHooks() (*tenanthooks.Set, error) {
	return tenanthooks.Load(s.hooksFile, tenanthooks.WithLog(func(hook, line string) { s.log.Info("hook", "hook", hook, "line", line) }))
}

// listen takes the loopback port; everything is served on it.
func (s *Server) listen() error {
	var ln net.Listener
	var err error
	if s.cfg.StablePort {
		ln, err = s.listenStable()
	} else if ln, err = net.Listen("tcp", s.cfg.Addr); err != nil {
		err = fmt.Errorf("cannot listen on %s: %w; choose another with --addr 127.0.0.1:PORT", s.cfg.Addr, err)
	}
	if err != nil {
		return err
	}
	if a, ok := ln.Addr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
		ln.Close()
		return fmt.Errorf("the dev server listens on loopback only, not on %s; use --addr 127.0.0.1:PORT", ln.Addr())
	}
	s.listener = ln
	s.undo = append(s.undo, func() error { ln.Close(); return nil }) // closed already once served
	s.URL = "http://" + ln.Addr().String()
	s.self = newSelfListener(ln.Addr())
	s.undo = append(s.undo, s.self.Close)
	return nil
}

// listenStable listens on the first free port of discovery.Ports: the same one at each restart of
// the same plugin, as long as nothing else took it meanwhile.
func (s *Server) listenStable() (net.Listener, error) {
	var first error
	for _, port := range discovery.Ports(s.Plugins()[0].Dir, s.kept.Port) {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			switch {
			case port == discovery.DefaultPort:
			case port == s.kept.Port:
				s.portNote = "this plugin's port since its last start"
			default:
				s.portNote = fmt.Sprintf("%d is taken: this plugin's own port", discovery.DefaultPort)
			}
			return ln, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, fmt.Errorf("cannot listen on 127.0.0.1:%d nor on any port from %d to %d (%w); choose one with --addr 127.0.0.1:PORT",
		discovery.DefaultPort, discovery.FallbackFirst, discovery.FallbackFirst+discovery.FallbackCount-1, first)
}

// advertise writes the file by which commands run in the plugin find this server (removed when
// it stops), and keeps its port and token for the next start on this state directory.
func (s *Server) advertise() error {
	if !s.cfg.Ephemeral {
		kept := discovery.Kept{Port: s.kept.Port, Token: s.Token}
		if s.cfg.StablePort {
			kept.Port = s.listener.Addr().(*net.TCPAddr).Port
		}
		// A restart on the same port and token (most) has nothing new to keep: a file written
		// and renamed is a good part of a millisecond.
		if kept != s.kept {
			if err := discovery.SaveKept(s.StateDir, kept); err != nil {
				return fmt.Errorf("cannot write %s: %w", filepath.Join(s.StateDir, discovery.KeptFile), err)
			}
		}
	}
	if err := discovery.WriteRunning(s.StateDir, s.Context()); err != nil {
		return fmt.Errorf("cannot write %s: %w", filepath.Join(s.StateDir, discovery.RunningFile), err)
	}
	s.undo = append(s.undo, func() error { discovery.RemoveRunning(s.StateDir); return nil })
	return nil
}

// startGateway makes the model gateway, with the tenant's provider records and the fake model
// behind them.
func (s *Server) startGateway() error {
	// A restarted server keeps its token, so that what was connected to it goes on.
	if s.Token = s.kept.Token; s.Token == "" {
		s.Token = apiv1.NewToken()
	}
	// The fake model answers only the gateway, which holds its key as the fake record's secret.
	fakeKey := "oz0f_" + strings.TrimPrefix(apiv1.NewToken(), apiv1.TokenPrefix)
	s.fake = &fakeModel{key: fakeKey, script: s.cfg.FakeScript}

	s.records = newRecords(s.StateDir, s.secrets, s.URL+"/fake", s.cfg.Getenv)
	s.keys = gateway.NewMemResolver()
	s.inflight = newInflight(s.keys)
	transport := gateway.NewTransport()
	transport.DialContext = s.self.dialSelf(transport.DialContext) // the fake, in memory
	var err error
	s.gw, err = gateway.New(gateway.Config{
		Resolver:  s.inflight,
		Secrets:   gateway.SecretsFunc(s.records.secret(fakeKey)),
		Meter:     (*meter)(s),
		Logger:    s.log.With("part", "gateway"),
		Transport: transport,
		// The tenant's other secrets too, in what the gateway logs and meters of a request.
		Mask: s.secrets.Masker(),
		// Model calls are metered in batches, a commit for all those that end within 10 ms (a
		// job that ends hurries it: BeforeEnd).
		MeterLinger:     10 * time.Millisecond,
		BodyReadTimeout: s.cfg.limits.bodyTimeout,
	})
	if err != nil {
		return err
	}
	// Undone after the API has stopped serving (so no call is left to end) and before the store
	// closes: what is still queued for the meter is written.
	s.undo = append(s.undo, s.gw.Close)
	return nil
}

// startNode makes the node that runs the jobs; Close drains it before anything else goes.
func (s *Server) startNode() error {
	// A strict session's network has the gateway and nothing else of the dev server.
	gatewayOnly := http.NewServeMux()
	gatewayOnly.Handle("/gateway/", s.gatewayFace())
	gatewayOnly.Handle("/gateway"+telemetry.ReceiverPath, api.Guard("", s.spans))
	s.node = node.New(node.Config{
		Store: s.store, Keys: s.keys, Gateway: s.gw, Plugins: s, Records: s.records, Refresh: s.refreshBeforeJob,
		GatewayURL: s.URL + "/gateway", Mask: s.secrets.Masker(), Logger: s.log.With("part", "node"),
		SayStream: func() node.TextStream { return s.secrets.Stream() },
		BeforeEnd: func(job string) {
			// The session has ended: nobody reads the streams it left, which the gateway reads
			// for their usage meanwhile.
			s.gw.StopDraining(job)
			s.gw.Hurry()
			s.inflight.wait(job, 5*time.Second)
			s.inbox.EndJob(job)
			s.recorded.forget(job)
		},
		AfterEnd:     s.jobEnded,
		ReceiveSpans: true,
		Decider:      &decider{hooks: s.hooks, inbox: s.inbox},
		Record:       s.cfg.Record,
		MaxSessions:  s.cfg.MaxSessions,
		Ahead:        s.cfg.Ahead,
		// The node's state (the store, secrets, provider records) and the files that hold the
		// token may sit in the plugin, which sessions see: they must not see them.
		Sandbox: supervisor.Sandbox{Tier: s.tier, Hide: append([]string{s.StateDir}, s.cfg.TokenFiles...), Gateway: gatewayOnly},
	})
	return nil
}

// serveAPI serves the control API, the dev UI, the gateway and the fake model on the port.
func (s *Server) serveAPI() error {
	mux := http.NewServeMux()
	// Feeds follow changes until the client goes: they end when the server stops instead.
	stopping := make(chan struct{})
	mux.Handle("/api/", logRequests(s.log, api.Handler(&api.Backend{
		Token: s.Token, Store: s.store, Node: s.node, Secrets: noticedSecrets{s}, Info: s.info, Logger: s.log, Inbox: s.inbox, Stopping: stopping,
		Recorder: s, Evals: evals{s}, UILogin: s.UILoginURL, Tenant: (*tenantAdmin)(s), TenantAdmin: (*tenantAdmin)(s),
	})))
	// The UI has the API's calls but the secrets', behind a login cookie instead of the token.
	_, port, _ := net.SplitHostPort(s.listener.Addr().String())
	s.ui = ui.New(ui.Config{
		API: api.Routes(&api.Backend{Store: s.store, Node: s.node, Info: s.info, Logger: s.log, Inbox: s.inbox, Stopping: stopping,
			Recorder: s, Evals: evals{s}, Tenant: (*tenantAdmin)(s)}),
		Port:    port,
		OnLogin: func() { s.say("ui: a browser logged in; the next login link is %s", s.UILoginURL()) },
	})
	mux.Handle("/ui/", logRequests(s.log, s.ui.Handler()))
	mux.Handle("/gateway/", s.gatewayFace())
	mux.Handle("/gateway"+telemetry.ReceiverPath, api.Guard("", s.spans))
	fake := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.fake.server().ServeHTTP(w, r) })
	mux.Handle("/fake/", api.Guard("", http.StripPrefix("/fake", fake)))
	mux.Handle("/", api.Guard(s.Token, http.NotFoundHandler()))
	// Bodies must come in time; answers are not limited (limits.go).
	handler := afterFirstAnswer(api.BodyDeadline(s.cfg.limits.bodyTimeout, mux), s.warmUp)
	errorLog := slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)
	s.conns = newCountedListener(s.listener, s.log, s.cfg.limits)
	s.http = &http.Server{Handler: handler, ReadHeaderTimeout: s.cfg.limits.headerTimeout, IdleTimeout: idleTimeout,
		ConnState: s.conns.connState, ErrorLog: errorLog}
	s.selfHTTP = &http.Server{Handler: handler, ReadHeaderTimeout: s.cfg.limits.headerTimeout, IdleTimeout: idleTimeout, ErrorLog: errorLog}
	for srv, ln := range map[*http.Server]net.Listener{s.http: s.conns, s.selfHTTP: s.self} {
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("serve", "err", err)
			}
		}()
	}
	s.undo = append(s.undo, func() error {
		close(stopping)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		for _, srv := range []*http.Server{s.http, s.selfHTTP} {
			if err := srv.Shutdown(ctx); err != nil {
				srv.Close()
			}
		}
		return nil
	})
	// Undone before the API stops: a run in progress is stopped, and kept, while its calls work.
	s.startEvalRuns()
	return nil
}

// startWatch starts the watcher that reloads a plugin when its files change.
func (s *Server) startWatch() {
	if s.cfg.Poll > 0 {
		s.notePlugins()
		go s.watch()
	} else {
		close(s.watchDone)
	}
}

// UILoginURL makes a link that logs one browser in to the dev UI, once.
func (s *Server) UILoginURL() string { return s.URL + s.ui.LoginPath() }

// Context is the value of OZ0_CONTEXT for this server.
func (s *Server) Context() apiv1.Context { return apiv1.Context{URL: s.URL, Token: s.Token} }

// Plugins are the plugins as loaded now.
func (s *Server) Plugins() []*plugin.Plugin { return *s.plugins.Load() }

// Close stops the server. First it drains: the watcher stops and the node interrupts the running
// jobs, whose end reaches their live streams while the API still serves them. Then what Start's
// steps made is undone in reverse: the API stops, the hooks and the store close, an ephemeral
// state directory goes.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.stopWarmUps()
		<-s.watchDone
		// The jobs are interrupted: so are the approvals they wait for, as after a crash.
		s.inbox.Stop("oz0 dev stopped while it waited; its job was interrupted")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s.closeErr = errors.Join(s.node.Close(ctx), s.unwind())
	})
	return s.closeErr
}

// Hurry makes a Close under way quick: the running sessions are killed at once rather than
// given their grace period; their jobs are still recorded as interrupted.
func (s *Server) Hurry() {
	if s.node != nil {
		s.node.KillSessions()
	}
}

// unwind undoes what Start's steps made, last first.
func (s *Server) unwind() error {
	var errs []error
	for i := len(s.undo) - 1; i >= 0; i-- {
		errs = append(errs, s.undo[i]())
	}
	s.undo = nil
	return errors.Join(errs...)
}

func (s *Server) say(format string, args ...any) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	fmt.Fprintf(s.out, format+"\n", args...)
}

// meter records the gateway's calls as model_call events of their jobs. The gateway calls it
// from its meter goroutine, after the clients have their answers, with a job's calls in order.
type meter Server

// Record records one call.
func (m *meter) Record(c gateway.Call) { m.RecordBatch([]gateway.Call{c}) }

// RecordBatch records the calls that ended together: one AppendBatch a job, the jobs' batches
// in flight together so that the store commits them at once. A job's calls stay in order.
func (m *meter) RecordBatch(calls []gateway.Call) {
	s := (*Server)(m)
	var jobs []string
	byJob := map[string][]store.NewEvent{}
	exchanges := map[string][]json.RawMessage{}
	for _, c := range calls {
		if c.Job == "" {
			continue // a call with no valid key: no job to record it under
		}
		b, err := modelCallData(c)
		if err != nil {
			s.log.Warn("model call not recorded", "job", c.Job, "err", err)
			continue
		}
		if _, ok := byJob[c.Job]; !ok {
			jobs = append(jobs, c.Job)
		}
		var ex json.RawMessage
		if c.Exchange != nil {
			ex = s.exchangeData(c.Job, c.Exchange)
		}
		byJob[c.Job] = append(byJob[c.Job], store.NewEvent{Type: store.EventModelCall, Data: b})
		exchanges[c.Job] = append(exchanges[c.Job], ex)
	}
	write := func(job string) {
		evs := byJob[job]
		if _, err := s.store.AppendBatchWithExchanges(job, evs, exchanges[job]); err != nil && !errors.Is(err, store.ErrClosed) {
			s.log.Warn("model calls not recorded", "job", job, "calls", len(evs), "err", err)
			if !errors.Is(err, store.ErrJobEnded) {
				// The job's record would miss them: it fails, as when its session's events
				// cannot be recorded.
				size := 0
				for _, e := range evs {
					size += len(e.Data)
				}
				s.node.Lost(job, len(evs), size, err)
			}
		}
	}
	if len(jobs) == 1 {
		write(jobs[0])
	} else {
		var wg sync.WaitGroup
		for _, job := range jobs {
			wg.Go(func() { write(job) })
		}
		wg.Wait()
	}
	// Only now, with the events committed, may the jobs end.
	for _, c := range calls {
		if c.Job != "" {
			s.inflight.done(c.Job)
		}
	}
}

// modelCall is the data of a model_call event. Its fields are in the order of their names, as
// the map this was before encoded them.
type modelCall struct {
	Aborted             string           `json:"aborted,omitempty"`
	CacheCreationTokens int64            `json:"cache_creation_input_tokens"`
	CacheReadTokens     int64            `json:"cache_read_input_tokens"`
	CostUSD             *float64         `json:"cost_usd,omitempty"` // priced records only, 0 included
	Endpoint            gateway.Endpoint `json:"endpoint"`
	Error               string           `json:"error,omitempty"`
	Format              gateway.Format   `json:"format"`
	InputTokens         int64            `json:"input_tokens"`
	LatencyMS           float64          `json:"latency_ms"`
	Model               string           `json:"model"`
	OutputTokens        int64            `json:"output_tokens"`
	Record              string           `json:"record"`
	Refused             string           `json:"refused,omitempty"`
	Replayed            bool             `json:"replayed,omitempty"`
	StartedAt           time.Time        `json:"started_at,omitzero"` // the event's time is when it was metered, after the answer
	Status              int              `json:"status"`
	Step                int              `json:"step"`
	Streamed            bool             `json:"streamed"`
	TTFBMS              float64          `json:"ttfb_ms"`
}

// modelCallData is the data of a call's model_call event.
func modelCallData(c gateway.Call) ([]byte, error) {
	d := modelCall{
		Record: c.Record, Format: c.Format, Endpoint: c.Endpoint, Model: c.Model, Status: c.Status,
		InputTokens: c.Usage.InputTokens, OutputTokens: c.Usage.OutputTokens,
		CacheReadTokens: c.Usage.CacheReadTokens, CacheCreationTokens: c.Usage.CacheCreationTokens,
		LatencyMS: float64(c.Latency.Microseconds()) / 1000, TTFBMS: float64(c.TTFB.Microseconds()) / 1000,
		Streamed: c.Streamed, Step: c.Step, Refused: c.Refused, Error: c.Error, Replayed: c.Replayed,
		StartedAt: c.Start.UTC(),
	}
	if c.Priced {
		d.CostUSD = &c.CostUSD
	}
	if c.Aborted {
		d.Aborted = c.AbortReason
	}
	return jsonutil.Marshal(d)
}

// gatewayFace is the gateway as sessions reach it: no dev-server token, the key is the session's.
func (s *Server) gatewayFace() http.Handler {
	return api.Guard("", http.StripPrefix("/gateway", s.gw))
}

// info describes the server for `oz0 run` and the banner.
func (s *Server) info() apiv1.Info {
	i := apiv1.Info{Version: s.cfg.Version, StateDir: s.StateDir, Sandbox: string(s.tier), SessionsAhead: s.node.SessionsAhead()}
	recs := s.records.Records()
	for _, p := range s.Plugins() {
		for _, a := range p.Agents {
			ai := apiv1.AgentInfo{Name: a.Name, Plugin: p.Manifest.Name, Harness: a.HarnessName(), Input: a.Input.Kind}
			var formats []gateway.Format
			if h := p.Harness(a.HarnessName()); h != nil {
				for _, f := range h.Formats {
					formats = append(formats, gateway.Format(f))
					ai.Formats = append(ai.Formats, f)
				}
			}
			if rec, _, err := gateway.ResolveModel(recs, a.Model.Use, formats); err == nil {
				ai.Record, ai.Model = rec.Name, rec.Model
				if a.Model.Name != "" {
					ai.Model = a.Model.Name
				}
			} else {
				ai.Record = "none: " + err.Error()
			}
			ai.Note = s.recordNote(ai, recs)
			for _, t := range a.Harness.Tools {
				ti := apiv1.ToolInfo{Name: t, RequiresApproval: slices.Contains(a.Harness.RequiresApproval, t)}
				for _, m := range s.hooks.Set().Marks(a.Name, a.HarnessName(), t) {
					ti.Rules = append(ti.Rules, apiv1.ToolRule{Hook: m.Hook, Decision: string(m.Decision), Reason: m.Reason, Conditional: m.Conditional})
				}
				ai.Tools = append(ai.Tools, ti)
			}
			ai.Stale = s.staleNote(p.Dir)
			i.Agents = append(i.Agents, ai)
		}
	}
	return i
}

func (s *Server) banner() {
	var names []string
	for _, p := range s.Plugins() {
		names = append(names, fmt.Sprintf("%s (%s)", p.Manifest.Name, p.Dir))
	}
	s.say("oz0 dev: a dev server and a node with %s", strings.Join(names, ", "))
	s.say("  version %s", s.cfg.Version)
	if s.portNote != "" {
		s.say("  api     %s (%s)", s.URL, s.portNote)
	} else {
		s.say("  api     %s", s.URL)
	}
	s.say("  ui      %s (logs one browser in, once)", s.UILoginURL())
	state := s.StateDir
	if s.cfg.Ephemeral {
		state += " (ephemeral: removed when oz0 dev stops)"
	}
	s.say("  state   %s", state)
	s.say("  sandbox %s: %s", s.tier, s.tier.Policy().Summary)
	if most, cores := s.node.MaxSessions(), s.node.Cores(); most > cores {
		s.say("  sessions at most %d at once (--max-sessions), past %d (the cores) only while a core is free; more jobs wait, queued", most, cores)
	} else {
		s.say("  sessions at most %d at once (--max-sessions); more jobs wait, queued", most)
	}
	s.say("  start   %s", s.node.Ahead())
	if s.cfg.Record {
		s.say("  calls   kept: each model call's request and answer, masked (oz0 job show JOB --calls, the UI's job page; --no-record keeps none)")
	} else {
		s.say("  calls   not kept (--no-record): a job's model calls show their tokens, not what was sent")
	}
	for _, a := range s.info().Agents {
		s.say("  agent   %s → model record %s (%s)%s", a.Name, a.Record, a.Model, a.Note)
	}
	if note := s.otlpNote(); note != "" {
		s.say("  otlp    %s", note)
	}
	s.tenantBanner()
	if set := s.hooks.Set(); set.Len() > 0 {
		s.say("  hooks   %d from %s: %s", set.Len(), s.hooksFile, strings.Join(set.Names(), ", "))
	}
	if len(s.interrupted) > 0 {
		were := "were"
		if len(s.interrupted) == 1 {
			were = "was"
		}
		s.say("  marked %s interrupted that %s live when oz0 dev last stopped", count(len(s.interrupted), "job", "jobs"), were)
	}
	if s.leftovers.Sessions > 0 {
		s.say("  cleaned up after an oz0 that crashed: %s removed, %s killed",
			count(s.leftovers.Sessions, "session directory", "session directories"), count(s.leftovers.Killed, "process", "processes"))
	}
	s.say("export %s=%s", apiv1.ContextEnv, s.Context())
	s.say("ready in %d ms", time.Since(s.cfg.Started).Milliseconds())
}

func checkAgentNames(ps []*plugin.Plugin) error {
	seen := map[string]string{}
	for _, p := range ps {
		for _, a := range p.Agents {
			if other, ok := seen[a.Name]; ok {
				return fmt.Errorf("agent %s is in both %s and %s; %w", a.Name, other, p.Manifest.Name, ErrAgentConflict)
			}
			seen[a.Name] = p.Manifest.Name
		}
	}
	return nil
}
