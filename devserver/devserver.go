// Package devserver is `oz0 dev`: one process with the control API, the durable job store, a node
// that runs sessions, the model gateway and the fake model, all on one loopback port.
package devserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orchestrator-zero/oz0/devserver/api"
	"github.com/orchestrator-zero/oz0/devserver/approvals"
	"github.com/orchestrator-zero/oz0/devserver/client"
	"github.com/orchestrator-zero/oz0/devserver/fakemodel"
	"github.com/orchestrator-zero/oz0/devserver/gateway"
	"github.com/orchestrator-zero/oz0/devserver/hooks"
	"github.com/orchestrator-zero/oz0/devserver/node"
	"github.com/orchestrator-zero/oz0/devserver/secrets"
	"github.com/orchestrator-zero/oz0/devserver/store"
	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/harnesskit/sandbox"
	"github.com/orchestrator-zero/oz0/lint"
	"github.com/orchestrator-zero/oz0/lint/diag"
	"github.com/orchestrator-zero/oz0/plugin"
)

// Config says what to serve.
type Config struct {
	PluginDirs []string // at least one
	Addr       string   // loopback host:port; "" is 127.0.0.1:0 (a free port)
	StateDir   string   // "" is <first plugin>/.oz0/dev
	Ephemeral  bool     // state in a temporary directory, removed on Close
	Version    string
	// FakeScript is the fake model's script; nil is the built-in one.
	FakeScript *fakemodel.Script
	// Out gets the banner and reload notes; Log gets the server's log lines.
	Out io.Writer
	Log io.Writer
	// Poll is how often plugin files are checked for changes; 0 is 300 ms, < 0 is never.
	Poll time.Duration
	// HooksFile is the tenant's hooks; "" is hooks.yaml in the state directory, if it exists.
	HooksFile string
	// Getenv reads oz0 dev's environment: OZ0_ANTHROPIC_BASE_URL and OZ0_OPENAI_BASE_URL give the
	// providers' upstreams when their keys are set without --base-url. nil reads nothing.
	Getenv func(string) string
	// Started is when the command started, for "ready in N ms"; zero is Start's start.
	Started time.Time
	// Sandbox is the node's sandbox tier; "" is the default: standard where this machine allows
	// it, else none with a warning (sandbox.Resolve). A tier asked for that cannot work here is a
	// StartError saying why.
	Sandbox sandbox.Tier
}

// Server is a running dev server.
type Server struct {
	cfg      Config
	URL      string
	Token    string
	StateDir string

	store     *store.Store
	secrets   *secrets.Store
	gw        *gateway.Gateway
	keys      *gateway.MemResolver
	inflight  *inflight
	inbox     *approvals.Inbox
	hooks     Hooks
	hookSet   *hooks.Set
	hooksFile string
	node      *node.Node
	http      *http.Server
	listener  net.Listener
	plugins   atomic.Pointer[[]*plugin.Plugin]
	records   *records
	tier      sandbox.Tier
	log       *slog.Logger
	out       io.Writer
	outMu     sync.Mutex

	stopWatch chan struct{}
	watchDone chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// StartError is a dev server that cannot start, for a reason the user can mend.
type StartError struct{ Msg string }

func (e *StartError) Error() string { return e.Msg }

// Start starts a dev server. On error nothing is left running.
func Start(ctx context.Context, cfg Config) (_ *Server, err error) {
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
	if len(cfg.PluginDirs) == 0 {
		cfg.PluginDirs = []string{"."}
	}
	addr, err := loopbackAddr(cfg.Addr)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, out: cfg.Out, log: slog.New(slog.NewTextHandler(cfg.Log, nil)), stopWatch: make(chan struct{}), watchDone: make(chan struct{})}
	var cleanups []func()
	defer func() {
		if err != nil {
			for i := len(cleanups) - 1; i >= 0; i-- {
				cleanups[i]()
			}
		}
	}()

	// Whether the sandbox's tier works here is learnt by building one (milliseconds): meanwhile
	// the rest starts.
	type resolved struct {
		tier    sandbox.Tier
		warning string
		err     error
	}
	tierCh := make(chan resolved, 1)
	go func() {
		tier, warning, err := sandbox.Resolve(cfg.Sandbox)
		tierCh <- resolved{tier, warning, err}
	}()

	// The plugins first: a plugin that does not lint is refused before anything is made.
	var loaded []*plugin.Plugin
	for _, dir := range cfg.PluginDirs {
		p, _, err := lint.Load(dir)
		var re *diag.ReportError
		if errors.As(err, &re) {
			return nil, err // its findings are the reason; oz0 dev starts once it lints clean
		}
		if err != nil {
			return nil, &StartError{Msg: fmt.Sprintf("cannot load the plugin in %s: %v", dir, err)}
		}
		loaded = append(loaded, p)
	}
	if err := checkAgentNames(loaded); err != nil {
		return nil, err
	}
	s.plugins.Store(&loaded)

	s.StateDir = cfg.StateDir
	switch {
	case cfg.Ephemeral:
		dir, err := os.MkdirTemp("", "oz0-dev-")
		if err != nil {
			return nil, err
		}
		s.StateDir = dir
		cleanups = append(cleanups, func() { os.RemoveAll(dir) })
	case s.StateDir == "":
		s.StateDir = filepath.Join(loaded[0].Dir, ".oz0", "dev")
	default:
		// Absolute, for the banner and so the plugin watcher can tell it apart from the plugin.
		if s.StateDir, err = filepath.Abs(s.StateDir); err != nil {
			return nil, &StartError{Msg: fmt.Sprintf("--state-dir %s: %v", cfg.StateDir, err)}
		}
	}
	if err := os.MkdirAll(s.StateDir, 0o700); err != nil {
		return nil, &StartError{Msg: fmt.Sprintf("cannot make the state directory %s: %v; choose another with --state-dir", s.StateDir, err)}
	}
	if s.store, err = store.Open(s.StateDir); err != nil {
		return nil, &StartError{Msg: err.Error()}
	}
	cleanups = append(cleanups, func() { s.store.Close() })
	if s.secrets, err = secrets.Open(s.StateDir); err != nil {
		return nil, &StartError{Msg: err.Error()}
	}
	for _, w := range s.secrets.Warnings() {
		s.say("warning: %s", w)
	}
	s.store.SetMasker(s.secrets.Masker())
	interrupted, err := s.store.MarkInterrupted("oz0 dev stopped (or crashed) while the job was live")
	if err != nil {
		return nil, err
	}
	// What the sessions of an oz0 that crashed left behind (processes, directories) goes now.
	leftovers, err := harnesskit.ReapStale("")
	if err != nil {
		s.log.Warn("cannot look for the sessions a crashed oz0 left", "err", err)
	}
	r := <-tierCh
	s.tier, err = r.tier, r.err
	if err != nil {
		msg := err.Error()
		var u *sandbox.Unavailable
		if errors.As(err, &u) && u.Mend != "" {
			msg += "; " + u.Mend
		}
		return nil, &StartError{Msg: "--sandbox " + string(cfg.Sandbox) + ": " + msg}
	}
	if r.warning != "" {
		s.say("warning: %s", r.warning)
	}
	hooksFile := cfg.HooksFile
	if hooksFile == "" {
		hooksFile = filepath.Join(s.StateDir, hooks.FileName)
	} else if _, err := os.Stat(hooksFile); err != nil {
		return nil, &StartError{Msg: fmt.Sprintf("--hooks %s: %v", hooksFile, err)}
	}
	set, err := hooks.Load(hooksFile, hooks.WithLog(func(hook, line string) { s.log.Info("hook", "hook", hook, "line", line) }))
	var re *diag.ReportError
	if errors.As(err, &re) {
		return nil, err // its findings are the reason; oz0 dev starts once they are fixed
	}
	if err != nil {
		return nil, &StartError{Msg: fmt.Sprintf("cannot load the hooks in %s: %v", hooksFile, err)}
	}
	cleanups = append(cleanups, func() { set.Close() })
	s.hookSet, s.hooksFile = set, hooksFile
	if set.Len() > 0 {
		s.hooks = hookSet{set}
	}
	s.inbox = approvals.New(s.store)
	if _, err := s.inbox.Interrupt("oz0 dev stopped while it waited; its job was interrupted"); err != nil {
		return nil, err
	}

	s.Token = client.NewToken()
	fakeKey := "oz0f_" + strings.TrimPrefix(client.NewToken(), client.TokenPrefix)
	script := cfg.FakeScript
	if script == nil {
		script = fakemodel.DefaultScript()
	}
	scriptCopy := *script
	scriptCopy.RequireKey = fakeKey
	fake := fakemodel.New(&scriptCopy)

	s.listener, err = net.Listen("tcp", addr)
	if err != nil {
		return nil, &StartError{Msg: fmt.Sprintf("cannot listen on %s: %v; choose another with --addr 127.0.0.1:PORT", addr, err)}
	}
	cleanups = append(cleanups, func() { s.listener.Close() })
	s.URL = "http://" + s.listener.Addr().String()

	s.records = newRecords(s.StateDir, s.secrets, s.URL+"/fake", cfg.Getenv)
	s.keys = gateway.NewMemResolver()
	s.inflight = newInflight(s.keys)
	s.gw, err = gateway.New(gateway.Config{
		Resolver: s.inflight,
		Secrets:  gateway.SecretsFunc(s.records.secret(fakeKey)),
		Meter:    gateway.MeterFunc(s.meter),
		Logger:   s.log.With("part", "gateway"),
	})
	if err != nil {
		return nil, err
	}
	gatewayFace := api.Guard("", http.StripPrefix("/gateway", s.gw))
	// A strict session's network has the gateway and nothing else of the dev server.
	gatewayOnly := http.NewServeMux()
	gatewayOnly.Handle("/gateway/", gatewayFace)
	s.node = node.New(node.Config{
		Store: s.store, Keys: s.keys, Gateway: s.gw, Plugins: s, Records: s.records,
		GatewayURL: s.URL + "/gateway", Mask: s.secrets.Masker(), Logger: s.log.With("part", "node"),
		BeforeEnd: func(job string) { s.inflight.wait(job, 5*time.Second); s.inbox.EndJob(job) },
		Decider:   &decider{hooks: s.hooks, inbox: s.inbox},
		// The node's state (the store, secrets, provider records) may sit in the plugin, which
		// sessions see: they must not see it.
		Sandbox: harnesskit.Sandbox{Tier: s.tier, Hide: []string{s.StateDir}, Gateway: gatewayOnly},
	})
	mux := http.NewServeMux()
	mux.Handle("/api/", api.Handler(&api.Backend{
		Token: s.Token, Store: s.store, Node: s.node, Secrets: s.records, Info: s.info, Logger: s.log, Inbox: s.inbox,
	}))
	mux.Handle("/gateway/", gatewayFace)
	mux.Handle("/fake/", api.Guard("", http.StripPrefix("/fake", fake)))
	mux.Handle("/", api.Guard(s.Token, http.NotFoundHandler()))
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	go func() {
		if err := s.http.Serve(s.listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("serve", "err", err)
		}
	}()
	if cfg.Poll > 0 {
		go s.watch()
	} else {
		close(s.watchDone)
	}
	s.banner(loaded, interrupted, leftovers)
	return s, nil
}

// Context is the value of OZ0_CONTEXT for this server.
func (s *Server) Context() client.Context { return client.Context{URL: s.URL, Token: s.Token} }

// Plugins are the plugins as loaded now.
func (s *Server) Plugins() []*plugin.Plugin { return *s.plugins.Load() }

// Close stops the server: running jobs are interrupted, the store is closed.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.stopWatch)
		<-s.watchDone
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		nodeErr := s.node.Close(ctx)
		s.hookSet.Close()
		shutCtx, cancel2 := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel2()
		if err := s.http.Shutdown(shutCtx); err != nil {
			s.http.Close()
		}
		s.closeErr = errors.Join(nodeErr, s.store.Close())
		if s.cfg.Ephemeral {
			os.RemoveAll(s.StateDir)
		}
	})
	return s.closeErr
}

func (s *Server) say(format string, args ...any) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	fmt.Fprintf(s.out, format+"\n", args...)
}

// meter records the gateway's calls as model_call events of their jobs.
func (s *Server) meter(c gateway.Call) {
	if c.Job == "" {
		return // a call with no valid key: no job to record it under
	}
	defer s.inflight.done(c.Job)
	d := map[string]any{
		"record": c.Record, "format": c.Format, "endpoint": c.Endpoint, "model": c.Model,
		"status": c.Status, "input_tokens": c.Usage.InputTokens, "output_tokens": c.Usage.OutputTokens,
		"cache_read_input_tokens": c.Usage.CacheReadTokens, "cache_creation_input_tokens": c.Usage.CacheCreationTokens,
		"latency_ms": float64(c.Latency.Microseconds()) / 1000, "ttfb_ms": float64(c.TTFB.Microseconds()) / 1000,
		"streamed": c.Streamed, "step": c.Step,
	}
	if c.Priced {
		d["cost_usd"] = c.CostUSD
	}
	if c.Aborted {
		d["aborted"] = c.AbortReason
	}
	if c.Refused != "" {
		d["refused"] = c.Refused
	}
	if c.Error != "" {
		d["error"] = c.Error
	}
	b, err := jsonMarshal(d)
	if err == nil {
		_, err = s.store.Append(c.Job, store.EventModelCall, b)
	}
	if err != nil && !errors.Is(err, store.ErrClosed) {
		s.log.Warn("model call not recorded", "job", c.Job, "err", err)
	}
}

// info describes the server for `oz0 run` and the banner.
func (s *Server) info() client.Info {
	i := client.Info{Version: s.cfg.Version, StateDir: s.StateDir, Sandbox: string(s.tier)}
	recs := s.records.Records()
	for _, p := range s.Plugins() {
		for _, a := range p.Agents {
			ai := client.AgentInfo{Name: a.Name, Plugin: p.Manifest.Name, Harness: a.HarnessName(), Input: a.Input.Kind}
			var formats []gateway.Format
			if h := p.Harness(a.HarnessName()); h != nil {
				for _, f := range h.Formats {
					formats = append(formats, gateway.Format(f))
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
			i.Agents = append(i.Agents, ai)
		}
	}
	return i
}

func (s *Server) banner(loaded []*plugin.Plugin, interrupted []string, leftovers harnesskit.Leftovers) {
	var names []string
	for _, p := range loaded {
		names = append(names, fmt.Sprintf("%s (%s)", p.Manifest.Name, p.Dir))
	}
	s.say("oz0 dev: a dev server and a node with %s", strings.Join(names, ", "))
	s.say("  version %s", s.cfg.Version)
	s.say("  api     %s", s.URL)
	state := s.StateDir
	if s.cfg.Ephemeral {
		state += " (ephemeral: removed when oz0 dev stops)"
	}
	s.say("  state   %s", state)
	s.say("  sandbox %s: %s", s.tier, s.tier.Describe())
	for _, a := range s.info().Agents {
		note := ""
		if a.Record == "fake" {
			note = ": the fake model, as no provider key is set (oz0 secret set ANTHROPIC_API_KEY)"
		}
		s.say("  agent   %s → model record %s (%s)%s", a.Name, a.Record, a.Model, note)
	}
	if n := s.hookSet.Len(); n > 0 {
		s.say("  hooks   %d from %s: %s", n, s.hooksFile, strings.Join(s.hookSet.Names(), ", "))
	}
	if len(interrupted) > 0 {
		s.say("  marked %d job(s) interrupted that were live when oz0 dev last stopped", len(interrupted))
	}
	if leftovers.Sessions > 0 {
		s.say("  cleaned up after an oz0 that crashed: %d session directory(ies) removed, %d process(es) killed", leftovers.Sessions, leftovers.Killed)
	}
	s.say("export %s=%s", client.ContextEnv, s.Context())
	s.say("ready in %d ms", time.Since(s.cfg.Started).Milliseconds())
}

// loopbackAddr checks that addr is a loopback address and fills in the defaults.
func loopbackAddr(addr string) (string, error) {
	if addr == "" {
		return "127.0.0.1:0", nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", &StartError{Msg: fmt.Sprintf("--addr %q is not host:port; use 127.0.0.1:PORT", addr)}
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if !client.IsLoopbackHost(host) {
		return "", &StartError{Msg: fmt.Sprintf("--addr %q is not a loopback address: the dev server listens on loopback only; use 127.0.0.1:PORT", addr)}
	}
	return net.JoinHostPort(host, port), nil
}

func checkAgentNames(ps []*plugin.Plugin) error {
	seen := map[string]string{}
	for _, p := range ps {
		for _, a := range p.Agents {
			if other, ok := seen[a.Name]; ok {
				return &StartError{Msg: fmt.Sprintf("agent %s is in both %s and %s; an agent name must be unique across the plugins oz0 dev serves", a.Name, other, p.Manifest.Name)}
			}
			seen[a.Name] = p.Manifest.Name
		}
	}
	return nil
}
