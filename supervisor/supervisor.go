package supervisor

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
	"github.com/orchestrator-zero/oz0/internal/textclip"
	"github.com/orchestrator-zero/oz0/supervisor/internal/execerr"
	"github.com/orchestrator-zero/oz0/supervisor/internal/fds"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
	"golang.org/x/sync/semaphore"
	"golang.org/x/sys/unix"
)

// Spec says what session to run and how.
type Spec struct {
	// Command is the harness's argv, as the manifest's harness command. See Start for how its
	// first word is resolved.
	Command []string
	// PluginDir is the plugin's directory: relative commands resolve against it, and a Python
	// harness runs from its .venv or with its src/ on PYTHONPATH.
	PluginDir string
	// Request is the session request. The supervisor sets its Protocol (when 0, to Protocol),
	// Workdir and StateDir (the session's own directories) and Limits.TimeoutS (from
	// Limits.Timeout); everything else is sent as it is. Request.Tools is the list of tools the
	// agent may call: a request for any other is denied by the supervisor (rule 1).
	Request harnesskit.SessionRequest
	// Env is the gateway's URLs and the session's key: see Env for the whole environment.
	Env Env
	// Limits bound the session's time.
	Limits Limits
	// Decider decides the permission requests of listed tools; nil denies them all.
	Decider Decider
	// Sink gets the session's events, one call at a time, in order, the last an EventEnd; all
	// calls are made before Wait returns. A slow Sink slows the harness down (its writes block),
	// it does not lose events. nil drops them.
	Sink func(harnesskit.Event)
	// TempDir is where the session's directories are made; "" is os.TempDir().
	TempDir string
	// Sandbox is how the session is isolated; the zero value is tier none.
	Sandbox Sandbox
	// LongLines, shared by a node's sessions, bounds the long stdout lines they handle at once;
	// nil is no bound. See LongLines.
	LongLines *LongLines
}

// LongLines bounds how many long stdout lines (longer than the read buffer, 64 KiB) a node's
// sessions handle at once, together: such a line is read whole (up to 8 MiB), decoded, and handed
// to the Sink, which may hold it until it is stored; a permission answer that carries long
// arguments is made and handed on the same way. A session whose harness writes one waits for a
// place before it reads the line (its harness waits on its write meanwhile), and gives the place
// back once the Sink has returned. So the memory long lines take in a node does not grow with
// its sessions. Says and logs read in pieces take no place.
type LongLines struct{ sem *semaphore.Weighted }

// longArguments is the size past which a permission answer's arguments make it a long line: the
// read buffer's (a request that long was one).
const longArguments = 64 << 10

// NewLongLines returns a bound of n long lines at once.
func NewLongLines(n int) *LongLines { return &LongLines{sem: semaphore.NewWeighted(int64(max(n, 1)))} }

// hold waits for a place for a long line, and returns the function that gives it back; with no
// bound (nil), it does nothing.
func (l *LongLines) hold() (release func()) {
	if l == nil {
		return func() {}
	}
	_ = l.sem.Acquire(context.Background(), 1) // never fails: the context is never done
	return func() { l.sem.Release(1) }
}

// Sandbox says how a session is isolated from the machine: docs/sandbox.md.
type Sandbox struct {
	// Tier is the sandbox's tier; "" is sandbox.None. A tier the machine cannot give fails Start
	// (sandbox.Check says beforehand).
	Tier sandbox.Tier
	// Hide are paths a sandboxed session must not see even where a directory it sees holds them:
	// the node's state directory, other plugins.
	Hide []string
	// Gateway serves the gateway in a Strict session's network, at the loopback address of Env's
	// base URLs (the session reaches nothing else); required for Strict.
	Gateway http.Handler
}

// Limits bound a session's time.
type Limits struct {
	// Timeout is the most active time the session may take (time a Decider holds while waiting
	// for a person does not count); 0 is no limit.
	Timeout time.Duration
	// Grace is how long the process gets to exit after its last line (with stdin closed), or
	// after SIGTERM, before its process group is killed. 0 is DefaultGrace.
	Grace time.Duration
	// EventBytes is the most bytes the harness may write on stdout in all (its lines: says,
	// logs, tool results, stray output); past it the session fails. 0 is DefaultEventBytes.
	EventBytes int64
	// EventBytesPerSecond is the most bytes the harness may write on stdout a second, over any
	// second (a second's worth may come at once); past it the session fails. 0 is
	// DefaultEventBytesPerSecond.
	EventBytesPerSecond int64
}

// The default budgets of a session's events: far above what an agent says, logs and gets from
// its tools, low enough that a harness that floods cannot fill the node's memory or store.
const (
	DefaultEventBytes          = 48 << 20
	DefaultEventBytesPerSecond = 16 << 20
)

// DefaultGrace is the grace period when Limits.Grace is 0. It is longer than the Python
// template's 2 s for its exit handlers.
const DefaultGrace = 5 * time.Second

// MaxOpenPermissions is the most permission requests that may wait for a decision at once; one
// more is a protocol violation.
const MaxOpenPermissions = 256

// Session is a running harness process and its session.
type Session struct {
	spec     Spec
	req      harnesskit.SessionRequest
	grace    time.Duration
	cmd      *exec.Cmd
	program  string // argv[0] as run: the command's first word resolved
	pid      int
	root     string
	workdir  string
	stateDir string
	start    time.Time

	stdin  *stdinWriter
	stdout *pipeReader
	stderr *pipeReader
	errlog *stderrLog
	clock  *activeClock

	sinkMu sync.Mutex
	seq    int64

	mu       sync.Mutex
	last     bool // the end is decided: every later line is recorded and ignored
	end      harnesskit.End
	ended    chan struct{} // closed when the end is decided
	kill     chan struct{} // closed by Kill: no grace period
	killOnce sync.Once
	calls    map[string]call // every permission request of the session, by its id
	open     int             // the requests waiting for a decision

	dctx     context.Context // Decide's context, done when the end is decided (its cause an *EndError)
	dcancel  context.CancelCauseFunc
	deciders sync.WaitGroup

	box     *sandbox.Process // the session's init, in a sandboxed tier
	gateway *http.Server     // the gateway inside a Strict session's network

	stdoutEOF chan struct{}
	stderrEOF chan struct{}
	exited    chan struct{} // closed when the process (the sandbox's init, in a sandbox) has exited
	done      chan struct{}
	final     harnesskit.End

	pluginDir string
	fork      *forked   // the session forked by a harness's fork server, nil for any other
	env       []string  // the environment the process started with
	madeAt    time.Time // when a session made ahead started its process; zero for one started at its job
}

// Run runs a session to its end: Start, then Wait.
func Run(ctx context.Context, spec Spec) (harnesskit.End, error) {
	s, err := Start(ctx, spec)
	if err != nil {
		return harnesskit.End{}, err
	}
	return s.Wait(), nil
}

// Start starts a session: it makes the session's working directory and state directory (0700,
// removed when the session ends, on every path), starts the harness in a process group of its
// own with the environment of rule 6 (see Env), writes the session request to its stdin, and
// supervises it until Wait says how it ended. When ctx is done the session is cancelled.
//
// The command's first word resolves as a plugin author expects: python or python3 is the
// plugin's .venv/bin/python when there is one, else python3 on the session's PATH, with the
// plugin's src/ on PYTHONPATH; a path with a slash is relative to PluginDir; a bare name is
// looked up on the session's PATH.
//
// An error means that nothing was started and nothing is left behind. Its text is written for
// the harness's author (a node shows it as the job's reason): what is wrong, and how to mend it.
func Start(ctx context.Context, spec Spec) (_ *Session, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("not starting the session: %w", err)
	}
	s, p, err := launchSession(spec, func(s *Session, env []string) []string { return env }, launchOpts{})
	if err != nil {
		return nil, err
	}
	if err := s.beginWithRequest(ctx, p); err != nil {
		return nil, err
	}
	return s, nil
}

// beginWithRequest begins a launched session with its request as the first line; a session whose
// request cannot be made is abandoned.
func (s *Session) beginWithRequest(ctx context.Context, p *pipes) error {
	first, err := s.request()
	if err != nil {
		s.abandon(p)
		return err
	}
	s.begin(ctx, p, first)
	return nil
}

// launchSession makes a session's directories and starts its harness process, in its sandbox,
// with the environment that envFor makes of rule 6's (the whole of it for a session started at
// its job; less for one made ahead): nothing is written to it yet. On error nothing is left
// behind.
func launchSession(spec Spec, envFor func(s *Session, env []string) []string, opts launchOpts) (_ *Session, _ *pipes, err error) {
	if len(spec.Command) == 0 || spec.Command[0] == "" {
		return nil, nil, errors.New("the harness has no command")
	}
	pluginDir, err := filepath.Abs(cmpOr(spec.PluginDir, "."))
	if err != nil {
		return nil, nil, fmt.Errorf("plugin directory: %w", err)
	}
	s := newSession(spec)
	s.pluginDir = pluginDir
	var p *pipes
	defer func() {
		if err != nil {
			p.closeAll()
			if s.root != "" {
				removeAll(s.root)
			}
		}
	}()

	dirs, err := s.makeDirs()
	if err != nil {
		return nil, nil, err
	}
	if len(opts.writable) > 0 {
		// A fork server's sandbox shows the directory that holds this one: its user (nobody,
		// for a root node) must pass through it to its own.
		if err = os.Chmod(s.root, 0o711); err != nil {
			return nil, nil, err
		}
	}
	argv, env, err := resolveCommand(spec.Command, pluginDir, s.stateDir, spec.Env, &s.req)
	if err != nil {
		return nil, nil, err
	}
	s.env = envFor(s, env)
	pol := cmpOr(spec.Sandbox.Tier, sandbox.None).Policy()
	if err = s.resolveInterpreter(argv, s.env, pluginDir, pol); err != nil {
		return nil, nil, err
	}
	s.program = argv[0]
	if err = giveDirs(dirs, pol); err != nil {
		return nil, nil, err
	}
	if p, err = openPipes(); err != nil {
		return nil, nil, err
	}
	if opts.stdin != nil {
		// Its stdin is what the caller gave (a fork server's control socket), not a pipe.
		p.inR.Close()
		p.inW.Close()
		p.inR, p.inW = opts.stdin, nil
	}
	s.cmd = s.command(argv, s.env, p)
	if opts.dir != "" {
		s.cmd.Dir = opts.dir
	}
	if pol.Namespaces {
		if err = s.sandbox(pol, pluginDir, opts.writable); err != nil {
			return nil, nil, err
		}
	}
	if err = s.launch(argv[0]); err != nil {
		return nil, nil, err
	}
	s.writeRecord(string(pol.Tier))
	// The child's ends are the child's alone now.
	p.inR.Close()
	p.outW.Close()
	p.errW.Close()
	p.inR, p.outW, p.errW = nil, nil, nil
	go func() {
		_ = s.cmd.Wait() // the status is in s.cmd.ProcessState
		close(s.exited)
	}()
	return s, p, nil
}

// launchOpts are what a process made ahead may have that a session's has not.
type launchOpts struct {
	stdin    *os.File // its stdin, instead of a pipe the node writes
	writable []string // more paths its sandbox shows read-write
	dir      string   // where it starts, instead of the session's working directory
}

// abandon ends a launched session that will not begin: its process group is killed, its pipes
// and directories given back.
func (s *Session) abandon(p *pipes) {
	s.signal(syscall.SIGKILL)
	<-s.exited
	if s.gateway != nil {
		s.gateway.Close()
	}
	p.closeAll()
	removeAll(s.root)
}

func newSession(spec Spec) *Session {
	return &Session{
		spec:      spec,
		req:       spec.Request,
		grace:     cmpOr(spec.Limits.Grace, DefaultGrace),
		calls:     map[string]call{},
		ended:     make(chan struct{}),
		kill:      make(chan struct{}),
		stdoutEOF: make(chan struct{}),
		stderrEOF: make(chan struct{}),
		exited:    make(chan struct{}),
		done:      make(chan struct{}),
	}
}

// makeDirs makes the session's directory (s.root, which Start removes if it fails) and the
// working and state directories in it, and returns those that are the harness's.
func (s *Session) makeDirs() (dirs []string, err error) {
	s.root, err = os.MkdirTemp(s.spec.TempDir, sessionDirPattern())
	if err != nil {
		return nil, fmt.Errorf("cannot make the session's directories: %w", err)
	}
	s.workdir = filepath.Join(s.root, "work")
	s.stateDir = filepath.Join(s.root, "state")
	dirs = []string{s.workdir, s.stateDir, filepath.Join(s.stateDir, "tmp")}
	for _, d := range dirs {
		if err = os.Mkdir(d, 0o700); err != nil {
			return nil, fmt.Errorf("cannot make the session's directories: %w", err)
		}
	}
	return dirs, nil
}

// request completes the session request with what the node decided (the protocol, the
// directories, the timeout) and encodes it as the first line of the harness's stdin.
func (s *Session) request() ([]byte, error) {
	if s.req.Protocol == 0 {
		s.req.Protocol = harnesskit.Protocol
	}
	s.req.Workdir, s.req.StateDir = s.workdir, s.stateDir
	s.req.Limits.TimeoutS = s.spec.Limits.Timeout.Seconds()
	s.req.Tools = slices.Clone(s.req.Tools)
	first, err := encodeLine(s.req)
	if err != nil {
		return nil, fmt.Errorf("the session request: %w", err)
	}
	return first, nil
}

// resolveInterpreter makes argv[0] the interpreter that a Python command's program runs.
func (s *Session) resolveInterpreter(argv, env []string, pluginDir string, pol sandbox.Policy) error {
	if !runsInterpreter(s.spec.Command) {
		return nil
	}
	// A python3 on PATH may be a wrapper (pyenv's shim) that needs the user's home, which a
	// sandbox hides, and that costs every session a bash and `pyenv exec` (~150 ms) before
	// Python starts: every tier runs the interpreter it runs, resolved once.
	exe, err := sandbox.PythonInterpreter(argv[0], env, s.workdir, pluginDir)
	switch {
	case err == nil:
		argv[0] = exe
	case pol.Namespaces:
		return err
	}
	// Tier none hides nothing: the wrapper itself runs, as it does in the user's shell.
	return nil
}

// giveDirs gives the session's directories to the user its sandbox runs the harness as.
func giveDirs(dirs []string, pol sandbox.Policy) error {
	if !pol.Namespaces {
		return nil
	}
	uid, gid, chown := sandbox.HarnessOwner(pol.Tier)
	if !chown {
		return nil
	}
	for _, d := range dirs {
		if err := os.Chown(d, uid, gid); err != nil {
			return fmt.Errorf("cannot give the session's directories to its sandbox's user: %w", err)
		}
	}
	return nil
}

// pipes are the harness's stdin, stdout and stderr. The supervisor owns them (os.Pipe, passed
// to the child as files), so exec.Cmd copies nothing and Wait never waits for I/O: a grandchild
// that holds stdout cannot block Wait. After the process exits, the readers drain what is left
// with a bound (pipeReader.drain).
type pipes struct{ inR, inW, outR, outW, errR, errW *os.File }

func openPipes() (*pipes, error) {
	p := &pipes{}
	for _, ends := range []struct{ r, w **os.File }{{&p.inR, &p.inW}, {&p.outR, &p.outW}, {&p.errR, &p.errW}} {
		r, w, err := os.Pipe()
		if err != nil {
			p.closeAll()
			return nil, fmt.Errorf("cannot make the harness's pipes: %w", err)
		}
		*ends.r, *ends.w = r, w
	}
	return p, nil
}

// closeAll closes every end that is open; p may be nil.
func (p *pipes) closeAll() {
	if p == nil {
		return
	}
	for _, f := range []*os.File{p.inR, p.inW, p.outR, p.outW, p.errR, p.errW} {
		if f != nil {
			f.Close()
		}
	}
}

// command is the harness's command, as it runs without a sandbox: in a process group of its own
// (procAttr), in the session's working directory, with the child's ends of the pipes.
func (s *Session) command(argv, env []string, p *pipes) *exec.Cmd {
	return &exec.Cmd{
		Path:        argv[0],
		Args:        argv,
		Env:         env,
		Dir:         s.workdir,
		Stdin:       p.inR,
		Stdout:      p.outW,
		Stderr:      p.errW,
		SysProcAttr: procAttr(),
		// A guard only: with *os.File pipes exec starts no copying goroutines, so there is no
		// I/O for Wait to wait on.
		WaitDelay: s.grace,
	}
}

// launch starts the harness: in its sandbox's init when it has one (and the gateway inside a
// network of its own), else as s.cmd.
func (s *Session) launch(program string) error {
	// What this process inherited from whatever started it is not the harness's to have. (Where
	// that cannot be done, a sandbox's init refuses to start the session; tier none promises no
	// isolation.)
	_ = fds.CloseOnExecFrom(3)
	s.start = time.Now()
	if s.box != nil {
		if err := s.box.Start(); err != nil {
			return err
		}
		s.serveGateway()
	} else if err := s.cmd.Start(); err != nil {
		return execerr.Explain(program, "on this machine", err)
	}
	s.pid = s.cmd.Process.Pid
	return nil
}

// begin writes the first lines (the session request) and starts the goroutines that write stdin,
// read stdout and stderr, and supervise the session.
func (s *Session) begin(ctx context.Context, p *pipes, first ...[]byte) {
	s.clock = newActiveClock(s.spec.Limits.Timeout)
	s.dctx, s.dcancel = context.WithCancelCause(context.WithoutCancel(ctx))
	s.stdin = newStdinWriter(p.inW)
	s.stdout = &pipeReader{f: p.outR}
	s.stderr = &pipeReader{f: p.errR}
	s.errlog = newStderrLog(s.emit)

	for _, line := range first {
		s.stdin.sendLine(line)
	}
	go s.stdin.run()
	go s.readStdout()
	go s.readStderr()
	go s.supervise(ctx)
}

// sandbox prepares the session's sandbox, which runs s.cmd, and makes s.cmd its init's; writable
// are more paths it shows read-write than the session's directories.
func (s *Session) sandbox(pol sandbox.Policy, pluginDir string, writable []string) error {
	box := filepath.Join(s.root, "sandbox")
	if err := os.Mkdir(box, 0o700); err != nil {
		return fmt.Errorf("cannot make the session's directories: %w", err)
	}
	cfg := sandbox.Config{
		Tier: pol.Tier, Argv: s.cmd.Args, Env: s.cmd.Env, Dir: s.cmd.Dir, PluginDir: pluginDir,
		Writable: append([]string{s.workdir, s.stateDir}, writable...), Hide: s.spec.Sandbox.Hide, Root: box,
	}
	if pol.OwnNetwork {
		if s.spec.Sandbox.Gateway == nil {
			return errors.New("a strict sandbox needs the gateway's handler (Sandbox.Gateway)")
		}
		var err error
		if cfg.Listen, err = sandbox.ListenAddrs(s.spec.Env.AnthropicBaseURL, s.spec.Env.OpenAIBaseURL); err != nil {
			return err
		}
	}
	var err error
	if s.box, err = sandbox.Prepare(s.cmd, cfg); err != nil {
		return err
	}
	s.cmd = s.box.Cmd() // the init, started: Wait waits for every process of the session
	return nil
}

// serveGateway serves the gateway on the sockets a Strict session's network listens on.
func (s *Session) serveGateway() { s.serveOn(s.box.Listeners()) }

// serveOn serves the gateway on lns, listening sockets in the session's network.
func (s *Session) serveOn(lns []net.Listener) {
	if len(lns) == 0 {
		return
	}
	s.gateway = &http.Server{Handler: s.spec.Sandbox.Gateway, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	for _, l := range lns {
		go s.gateway.Serve(l)
	}
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Wait waits for the session's end: the process has exited, its process group is gone, the
// session's directories are removed, every event has been delivered and every Decide call has
// returned.
func (s *Session) Wait() harnesskit.End {
	<-s.done
	return s.final
}

// Done is closed when the session has ended (Wait would return).
func (s *Session) Done() <-chan struct{} { return s.done }

// Cancel cancels the session: its end is decided before Cancel returns, so any line the harness
// writes that has not been read yet (a result too) comes after its last; then SIGTERM to its
// process group, the grace period, and SIGKILL. It does nothing once the session's end is decided.
// It may be called from the Sink.
func (s *Session) Cancel() {
	s.decideEnd(harnesskit.End{Status: harnesskit.Cancelled, Reason: "the session was cancelled"})
}

// Kill ends the session as Cancel does, without the grace period: SIGKILL to its process group
// at once. A node that must stop now (a second Ctrl-C) calls it.
func (s *Session) Kill() {
	s.decideEnd(harnesskit.End{Status: harnesskit.Cancelled, Reason: "the session was cancelled"})
	s.killOnce.Do(func() { close(s.kill) })
}

// Hold stops the session's timeout clock until release is called, like Ask.Hold.
func (s *Session) Hold() (release func()) { return s.clock.hold() }

// PID is the id of the process group the node signals: the harness's, or in a sandbox, its
// init's (which passes signals on to every process of the session).
func (s *Session) PID() int { return s.pid }

// Program is the program the session runs: its command's first word as resolved (a Python
// program's interpreter, see Start).
func (s *Session) Program() string { return s.program }

// Workdir is the session's working directory (removed at the end).
func (s *Session) Workdir() string { return s.workdir }

// StateDir is the session's state directory, its HOME (removed at the end).
func (s *Session) StateDir() string { return s.stateDir }

// Request is the session request as it was sent.
func (s *Session) Request() harnesskit.SessionRequest { return s.req }

// StderrTail returns the last StderrTailSize bytes of the harness's stderr so far.
func (s *Session) StderrTail() []byte {
	tail, _ := s.errlog.tail()
	return tail
}

// emit delivers an event to the sink, one at a time.
func (s *Session) emit(ev harnesskit.Event) {
	if s.spec.Sink == nil {
		return
	}
	s.sinkMu.Lock()
	defer s.sinkMu.Unlock()
	s.seq++
	ev.Seq = s.seq
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	s.spec.Sink(ev)
}

// decideEnd sets the session's end unless it is set; it reports whether it set it.
func (s *Session) decideEnd(e harnesskit.End) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last {
		return false
	}
	s.last, s.end = true, e
	close(s.ended)
	s.dcancel(&harnesskit.EndError{End: e})
	return true
}

func (s *Session) isLast() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// violate ends the session for stdout line n, which broke rule: the end's reason is the rule
// and reason, and a violation event in its place in the trace shows the line (nil: a line over
// the limit, not kept). After the session's last line, the line is recorded and ignored, with
// what was wrong with it. It reports whether the violation decided the end.
func (s *Session) violate(n int64, line []byte, rule harnesskit.ViolatedRule, reason string) bool {
	full := fmt.Sprintf("protocol violation (%s): %s", rule, reason)
	if !s.decideEnd(harnesskit.End{Status: harnesskit.ProtocolViolation, Rule: rule, Reason: full}) {
		text, _ := textclip.Bytes(line, harnesskit.MaxEventText)
		s.emitLine(n, line, harnesskit.Event{Kind: harnesskit.EventIgnored, Text: strings.ToValidUTF8(text, "\uFFFD"), Note: afterLast + ", and a " + full})
		return false
	}
	text, _ := textclip.Bytes(line, harnesskit.MaxEventText) // a long line is not copied whole
	s.emitLine(n, line, harnesskit.Event{Kind: harnesskit.EventViolation, Text: strings.ToValidUTF8(text, "\uFFFD"), Note: full, Rule: rule})
	return true
}

// ---- stdout -----------------------------------------------------------------------------------

func (s *Session) readStdout() {
	defer close(s.stdoutEOF)
	r := harnesskit.NewReader(s.stdout)
	budget := newEventBudget(s.spec.Limits)
	for {
		long := r.PeekLong() // a line that fits the read buffer (nearly every one) is read at once
		if long && !s.isLast() {
			if h, text := r.PeekLongText(); text {
				if !s.streamLine(r, budget, h) {
					return
				}
				continue
			}
		}
		release := func() {}
		if long { // read whole: it waits for its place among the node's long lines
			release = s.spec.LongLines.hold()
		}
		more := s.readLine(r, budget, long)
		release()
		if !more {
			return
		}
	}
}

// readLine reads the next line whole and handles it; it reports whether to go on reading stdout.
// A long line is read into a buffer of its own, which the session takes from the reader: its
// message keeps slices of it rather than copies, and the reader does not hold it meanwhile.
func (s *Session) readLine(r *harnesskit.Reader, budget *eventBudget, long bool) bool {
	line, err := r.ReadLine()
	if long {
		r.Keep()
	}
	n := r.Lines()
	size := int64(len(line)) + 1
	var tooLong *harnesskit.LineTooLongError
	if errors.As(err, &tooLong) {
		size = tooLong.Size
	}
	if err == nil || errors.Is(err, harnesskit.ErrInvalidUTF8) || tooLong != nil {
		if over := budget.take(size, time.Now()); over != "" {
			// The line is not decoded, nor anything after it: the rest of stdout is read
			// and dropped, so the harness is not blocked on its writes while it is stopped.
			if s.decideEnd(harnesskit.End{Status: harnesskit.Failed, Reason: over}) {
				s.emit(harnesskit.Event{Kind: harnesskit.EventIgnored, Line: n, Note: fmt.Sprintf("line %d and the rest of stdout were not read: %s", n, over)})
			}
			r.Discard()
			return false
		}
	}
	switch {
	case err == nil:
		s.handleLine(n, line, long)
	case errors.Is(err, harnesskit.ErrInvalidUTF8):
		s.stray(n, line, "not valid UTF-8")
	case errors.Is(err, harnesskit.ErrLineTooLong):
		s.violate(n, nil, harnesskit.RuleLineTooLong, fmt.Sprintf("line %d of stdout: %v", n, err))
	default:
		if s.stdout.heldOpen.Load() {
			s.emit(harnesskit.Event{Kind: harnesskit.EventIgnored, Note: "the harness has exited, but a process outside its process group still holds its stdout open; stopped reading"})
		}
		return false
	}
	return true
}

// eventBudget counts the bytes of a session's stdout against its limits: in all, and a second (a
// token bucket holding one second's worth, refilled as time passes).
type eventBudget struct {
	total, perSecond int64
	used             int64
	tokens           float64
	last             time.Time
}

func newEventBudget(l Limits) *eventBudget {
	b := &eventBudget{total: cmp.Or(l.EventBytes, DefaultEventBytes), perSecond: cmp.Or(l.EventBytesPerSecond, DefaultEventBytesPerSecond)}
	b.tokens = float64(b.perSecond)
	return b
}

// take counts n bytes read at now; past a budget it says which, as the session's failure.
func (b *eventBudget) take(n int64, now time.Time) string {
	b.used += n
	if b.used > b.total {
		return fmt.Sprintf("the harness wrote events past its limits.max_event_bytes of %s on stdout (%d bytes and more; set a larger limit in the agent's limits if it needs to)", textclip.SizeName(b.total), b.used)
	}
	if !b.last.IsZero() {
		b.tokens = min(float64(b.perSecond), b.tokens+now.Sub(b.last).Seconds()*float64(b.perSecond))
	}
	b.last = now
	b.tokens -= float64(n)
	if b.tokens < 0 {
		return fmt.Sprintf("the harness wrote events faster than its limits.max_event_bytes_per_second of %s a second on stdout (set a larger limit in the agent's limits if it needs to)", textclip.SizeName(b.perSecond))
	}
	return ""
}

// awaitStderr waits, before the session's last event, for stderr to end (the harness exits after
// its last line), at most the grace period: what the harness wrote there first (a traceback, then
// its error) is read by another goroutine, and comes first in the trace.
func (s *Session) awaitStderr() {
	t := time.NewTimer(s.grace)
	defer t.Stop()
	select {
	case <-s.stderrEOF:
	case <-t.C:
	}
}

// emitLine delivers an event from stdout line n. Its Raw is the reader's buffer, not a copy: a
// line of megabytes is not held twice more for a Sink that does not look at it.
func (s *Session) emitLine(n int64, line []byte, ev harnesskit.Event) {
	ev.Line, ev.Raw = n, line
	s.emit(ev)
}

func (s *Session) stray(n int64, line []byte, note string) {
	text, cut := textclip.Bytes(line, harnesskit.MaxEventText) // a long line is not copied whole
	text = strings.ToValidUTF8(text, "\uFFFD")
	if cut {
		note += fmt.Sprintf(" (%d bytes, cut)", len(line))
	}
	kind := harnesskit.EventStray
	if s.isLast() {
		kind, note = harnesskit.EventIgnored, "after the session's last line (rule 2); "+note
	}
	s.emitLine(n, line, harnesskit.Event{Kind: kind, Text: text, Note: note})
}

func (s *Session) ignored(n int64, line []byte, m harnesskit.Message, note string) {
	text, _ := textclip.Bytes(line, harnesskit.MaxEventText)
	s.emitLine(n, line, harnesskit.Event{Kind: harnesskit.EventIgnored, Message: m, Text: text, Note: note})
}

const afterLast = "after the session's last line (rule 2)"

// handleLine handles stdout line n; given, it is the session's (a long line: Reader.Keep).
func (s *Session) handleLine(n int64, line []byte, given bool) {
	if len(bytes.TrimSpace(line)) == 0 {
		return // blank lines are no message and no stray output
	}
	decode := harnesskit.DecodeHarnessMessage
	if given {
		decode = harnesskit.DecodeHarnessLine
	}
	m, err := decode(line)
	if err != nil {
		var de *harnesskit.DecodeError
		errors.As(err, &de)
		switch {
		case de != nil && de.Err == harnesskit.ErrDuplicateKey:
			// Which message it is depends on which of the two a parser takes: it is acted on as
			// neither.
			s.violate(n, line, harnesskit.RuleKeys, fmt.Sprintf("line %d of stdout is %v; JSON parsers differ on which of the two counts, so the node takes it as no message: write each key once", n, err))
		case de == nil || de.Err != harnesskit.ErrInvalidMessage:
			s.stray(n, line, err.Error())
		case s.isLast():
			s.ignored(n, line, nil, afterLast+"; "+err.Error())
		case de.Type == harnesskit.TypeSay || de.Type == harnesskit.TypeLog || de.Type == harnesskit.TypeToolResult:
			s.ignored(n, line, nil, err.Error())
		default: // permission_request, result, error: the session cannot go on without them
			s.violate(n, line, harnesskit.RuleMessages, fmt.Sprintf("line %d of stdout is %v", n, err))
		}
		return
	}
	switch m := m.(type) {
	case harnesskit.Result:
		if s.decideEnd(harnesskit.End{Status: harnesskit.Completed, Output: m.Output}) {
			s.awaitStderr()
			s.emitLine(n, line, harnesskit.Event{Kind: harnesskit.EventResult, Message: m})
		} else {
			s.ignored(n, line, m, afterLast)
		}
		return
	case harnesskit.ErrorMessage:
		if s.decideEnd(harnesskit.End{Status: harnesskit.Failed, Message: m.Message, Reason: "the harness failed: " + m.Message}) {
			s.awaitStderr()
			s.emitLine(n, line, harnesskit.Event{Kind: harnesskit.EventError, Message: m})
		} else {
			s.ignored(n, line, m, afterLast)
		}
		return
	case harnesskit.PermissionRequest:
		s.permissionRequest(n, line, m)
		return
	}
	if s.isLast() {
		s.ignored(n, line, m, afterLast)
		return
	}
	switch m := m.(type) {
	case harnesskit.Say:
		s.emitLine(n, line, harnesskit.Event{Kind: harnesskit.EventSay, Message: m})
	case harnesskit.Log:
		s.emitLine(n, line, harnesskit.Event{Kind: harnesskit.EventLog, Message: m})
	case harnesskit.ToolResult:
		if wrong := s.unasked(m); wrong != "" {
			s.violate(n, line, harnesskit.RuleResults, fmt.Sprintf("line %d of stdout is a tool_result for %s; a tool_result reports a call the job allowed, with its request's id and tool", n, wrong))
			return
		}
		s.emitLine(n, line, harnesskit.Event{Kind: harnesskit.EventToolResult, Message: m})
	case harnesskit.Unknown:
		note := fmt.Sprintf("unknown type %q (rule 3)", m.Type)
		if m.Type == "" {
			note = `an object without a string "type" (rule 3)`
		}
		s.ignored(n, line, nil, note)
	}
}

// ---- permissions ------------------------------------------------------------------------------

// call is a permission request of the session: its tool, and where its decision stands.
type call struct {
	tool  string
	state callState
}

type callState uint8

const (
	callAsked   callState = iota // waiting for its decision
	callAllowed                  // allowed: its tool_result may come
	callDenied                   // denied, by the node or the decider: its tool must not run
)

// unasked says what is wrong with a tool_result that is not for an allowed call of its tool ("" when
// it is): an id never asked, a call denied or not decided yet, another tool.
func (s *Session) unasked(m harnesskit.ToolResult) string {
	s.mu.Lock()
	c, ok := s.calls[m.ID]
	s.mu.Unlock()
	switch {
	case !ok:
		return fmt.Sprintf("the id %q, which no permission_request of this session asked", m.ID)
	case c.state == callDenied:
		return fmt.Sprintf("%s, a call of %s the node denied: the harness ran it anyway", m.ID, c.tool)
	case c.state == callAsked:
		return fmt.Sprintf("%s, a call of %s not allowed yet: the harness ran it before the job decided", m.ID, c.tool)
	case m.Tool != "" && m.Tool != c.tool:
		return fmt.Sprintf("%s naming the tool %q, but %s asked for %s", m.ID, m.Tool, m.ID, c.tool)
	}
	return ""
}

func (s *Session) permissionRequest(n int64, line []byte, m harnesskit.PermissionRequest) {
	// Arguments with a key twice are refused before anyone decides on them: the decider (hooks,
	// a person) reads one value and the tool's parser may take the other.
	dupKey, dupAt, dup := jsonutil.DuplicateKey(m.Arguments)
	s.mu.Lock()
	_, used := s.calls[m.ID]
	switch {
	case s.last:
		s.mu.Unlock()
		s.ignored(n, line, m, afterLast)
		return
	case used:
		s.mu.Unlock()
		s.violate(n, line, harnesskit.RuleIDs, fmt.Sprintf("line %d of stdout is a permission_request with the id %q, which this session has already used; ids are unique per session", n, m.ID))
		return
	}
	listed := slices.Contains(s.req.Tools, m.Tool)
	if listed && !dup && s.open >= MaxOpenPermissions {
		s.mu.Unlock()
		s.violate(n, line, harnesskit.RuleMessages, fmt.Sprintf("line %d of stdout is a permission_request while %d are waiting for a decision, the most a session may have open", n, MaxOpenPermissions))
		return
	}
	if listed && !dup {
		s.calls[m.ID] = call{tool: m.Tool, state: callAsked}
		s.open++
		s.deciders.Add(1)
	} else { // refused by the node, below
		s.calls[m.ID] = call{tool: m.Tool, state: callDenied}
	}
	s.mu.Unlock()

	s.emitLine(n, line, harnesskit.Event{Kind: harnesskit.EventPermissionRequest, Message: m})
	if !listed {
		allowed := "it lists no tools"
		if len(s.req.Tools) > 0 {
			allowed = "it lists " + strings.Join(s.req.Tools, ", ")
		}
		p := harnesskit.Permission{ID: m.ID, Reason: fmt.Sprintf("tool `%s` is not in the agent's harness.tools (%s)", m.Tool, allowed)}
		s.emit(harnesskit.Event{Kind: harnesskit.EventPermission, Message: p, By: harnesskit.BySupervisor, Note: "rule 1"})
		s.stdin.send(p)
		return
	}
	if dup {
		where := "arguments"
		if dupAt != "" {
			where = "arguments" + dupAt
		}
		p := harnesskit.Permission{ID: m.ID, Reason: fmt.Sprintf("the call of `%s` is refused: %s has the key %q twice, and a tool's JSON parser may take either value; send each key once", m.Tool, where, dupKey)}
		s.emit(harnesskit.Event{Kind: harnesskit.EventPermission, Message: p, By: harnesskit.BySupervisor, Note: "duplicate key"})
		s.stdin.send(p)
		return
	}
	go s.ask(m)
}

func (s *Session) ask(m harnesskit.PermissionRequest) {
	defer s.deciders.Done()
	a := &Ask{
		ID: m.ID, Tool: m.Tool, Arguments: m.Arguments,
		Job: s.req.Job, Agent: s.req.Agent, Harness: s.req.Harness,
		Time: time.Now(), clock: s.clock,
	}
	d, note := s.callDecider(a)
	a.releaseAll()

	p := harnesskit.Permission{ID: m.ID, Allow: d.Allow, Reason: d.Reason}
	if d.Allow {
		p.Arguments = d.Arguments
		if p.Arguments == nil {
			p.Arguments = m.Arguments
		}
		if !jsonutil.IsObject(p.Arguments) || !json.Valid(p.Arguments) {
			p = harnesskit.Permission{ID: m.ID, Reason: fmt.Sprintf("the node could not send its decision on `%s`: the allowed arguments are not a JSON object", m.Tool)}
			note = "the decider allowed arguments that are not a JSON object"
		}
	} else if p.Reason == "" {
		p.Reason = fmt.Sprintf("the job denied `%s`", m.Tool)
	}
	if p.Allow && len(p.Arguments) > longArguments {
		// The answer carries the arguments back, and its event records them: a long line's
		// worth, made and handed on in its place among the node's long lines.
		release := s.spec.LongLines.hold()
		defer release()
	}
	var line []byte
	var err error
	if p.Allow {
		line, err = allowLine(p.ID, p.Arguments)
	} else {
		line, err = encodeLine(p)
	}
	if err != nil {
		p = harnesskit.Permission{ID: m.ID, Reason: fmt.Sprintf("the node could not send its decision on `%s`: %v", m.Tool, err)}
		note = err.Error()
		line, _ = encodeLine(p)
	}

	s.mu.Lock()
	if s.last { // the session has ended: the answer is moot
		s.mu.Unlock()
		return
	}
	s.open--
	// Before the harness can read the answer: a tool_result for a call is checked against it.
	state := callDenied
	if p.Allow {
		state = callAllowed
	}
	s.calls[m.ID] = call{tool: m.Tool, state: state}
	s.mu.Unlock()
	s.emit(harnesskit.Event{Kind: harnesskit.EventPermission, Message: p, By: harnesskit.ByDecider, Note: note})
	s.stdin.sendLine(line)
}

// callDecider calls the Decider, turning a panic into a denial.
func (s *Session) callDecider(a *Ask) (d Decision, note string) {
	if s.spec.Decider == nil {
		return Deny("this node has no decider: it allows no tool calls"), ""
	}
	defer func() {
		if r := recover(); r != nil {
			d = Deny(fmt.Sprintf("the node failed to decide on `%s`", a.Tool))
			note = fmt.Sprintf("the decider panicked: %v", r)
		}
	}()
	return s.spec.Decider.Decide(s.dctx, a), ""
}

// ---- stderr -----------------------------------------------------------------------------------

func (s *Session) readStderr() {
	defer close(s.stderrEOF)
	buf := make([]byte, 32<<10)
	for {
		n, err := s.stderr.Read(buf)
		if n > 0 {
			s.errlog.write(buf[:n])
		}
		if err != nil {
			s.errlog.finish()
			return
		}
	}
}

// ---- the process ------------------------------------------------------------------------------

// signal sends sig to the session's process group.
func (s *Session) signal(sig syscall.Signal) {
	if s.fork != nil {
		s.fork.signal(sig)
		return
	}
	_ = syscall.Kill(-s.pid, sig)
}

func (s *Session) supervise(ctx context.Context) {
	killed, termed := s.await(ctx, s.exited)
	held := s.afterExit()
	exit := s.exitEnd()
	s.release()
	s.finish(exit, held, killed, termed)
}

// await decides the end on the first of the timeout, cancellation, stdout closed for the grace
// period, or the harness's own last line, asks the harness to stop (SIGTERM, then SIGKILL after
// the grace period), and returns when the process has exited: whether it was killed, and whether
// it had been asked to stop with SIGTERM.
func (s *Session) await(ctx context.Context, exited <-chan struct{}) (killed, termed bool) {
	var (
		ended     = s.ended
		kill      = s.kill
		stdoutEOF = s.stdoutEOF
		timeout   = s.clock.C()
		ctxDone   = ctx.Done()
		killC     <-chan time.Time
		eofC      <-chan time.Time
		timers    []*time.Timer
	)
	after := func(d time.Duration) <-chan time.Time {
		t := time.NewTimer(d)
		timers = append(timers, t)
		return t.C
	}
	for running := true; running; {
		select {
		case <-exited:
			running = false
		case <-timeout:
			timeout = nil
			s.decideEnd(harnesskit.End{Status: harnesskit.TimedOut, Reason: fmt.Sprintf("the session ran for its limits.timeout of %s without an answer (time waiting for a person does not count)", s.spec.Limits.Timeout)})
		case <-ctxDone:
			ctxDone = nil
			s.decideEnd(harnesskit.End{Status: harnesskit.Cancelled, Reason: fmt.Sprintf("the session was cancelled: %v", context.Cause(ctx))})
		case <-stdoutEOF:
			stdoutEOF = nil
			if !s.isLast() {
				eofC = after(s.grace)
			}
		case <-eofC:
			eofC = nil
			s.decideEnd(harnesskit.End{Status: harnesskit.Failed, Reason: fmt.Sprintf("the harness closed its stdout without a result or an error (rule 2) and did not exit within %s", s.grace)})
		case <-ended:
			ended = nil
			s.clock.stop()
			s.stdin.close()
			s.mu.Lock()
			byHarness := s.end.Status == harnesskit.Completed || (s.end.Status == harnesskit.Failed && s.end.Message != "")
			s.mu.Unlock()
			if !byHarness { // cancel, timeout, violation: ask it to stop now
				s.signal(syscall.SIGTERM)
				termed = true
			}
			killC = after(s.grace)
		case <-killC:
			killC = nil
			s.signal(syscall.SIGKILL)
			killed = true
		case <-kill:
			kill, killC = nil, nil
			s.signal(syscall.SIGKILL)
			killed = true
		}
	}
	for _, t := range timers {
		t.Stop()
	}
	return killed, termed
}

// afterExit runs once the process has exited. Whatever is left of its group goes now, and
// (without a sandbox, whose init has ended every process of the session) whatever else still
// holds its pipes; then the readers take what is left in them, for at most a bound, within
// limits.timeout. It returns how long the session was held (time waiting for a person).
func (s *Session) afterExit() (held time.Duration) {
	bound, timeoutBound := 10*s.grace, false
	if left, ok := s.clock.remaining(); ok && left < bound && !s.isLast() {
		bound, timeoutBound = left, true
	}
	held = s.clock.stop()
	s.signal(syscall.SIGKILL)
	if s.gateway != nil {
		s.gateway.Close()
	}
	if s.box == nil && (s.fork == nil || !s.fork.sandboxed) {
		s.killPipeHolders()
	}
	s.stdout.drain(s.grace, bound)
	s.stderr.drain(s.grace, bound)
	<-s.stdoutEOF
	<-s.stderrEOF
	if timeoutBound && (s.stdout.bounded.Load() || s.stderr.bounded.Load()) {
		s.decideEnd(harnesskit.End{Status: harnesskit.TimedOut, Reason: fmt.Sprintf("the session ran for its limits.timeout of %s without an answer (time waiting for a person does not count); the harness had exited, and a process that left its process group still wrote to its output", s.spec.Limits.Timeout)})
	}
	return held
}

// exit is how the harness's process ended, and what it left on stderr.
type exit struct {
	code  int
	sig   string
	tail  []byte // stderr's tail
	total int64  // stderr's bytes
}

// exitEnd reads how the harness exited (in a sandbox, as its init reports it) and decides the
// end by it, if nothing decided it before: an exit without a result or an error fails.
func (s *Session) exitEnd() exit {
	var x exit
	x.tail, x.total = s.errlog.tail()
	if s.fork != nil {
		x.code, x.sig = waitStatus(s.fork.status())
	} else {
		x.code, x.sig = exitStatus(s.cmd.ProcessState)
	}
	if s.box != nil {
		if ws, ok := s.box.HarnessStatus(); ok {
			x.code, x.sig = waitStatus(ws)
		}
	}
	if x.sig == "" {
		s.decideEnd(harnesskit.End{Status: harnesskit.Failed, Reason: fmt.Sprintf("the harness exited with status %d without a result or an error (rule 2)%s", x.code, stderrSummary(x.tail))})
	} else {
		s.decideEnd(harnesskit.End{Status: harnesskit.Failed, Reason: fmt.Sprintf("the harness was killed by %s without a result or an error (rule 2)%s", x.sig, stderrSummary(x.tail))})
	}
	return x
}

// release waits for every Decide call and the stdin writer, and gives back the session's pipes
// and directories.
func (s *Session) release() {
	s.dcancel(nil) // the end is decided by now: its cause stands
	s.deciders.Wait()
	s.stdin.close()
	<-s.stdin.done
	s.stdout.f.Close()
	s.stderr.f.Close()
	removeAll(s.root)
}

// finish completes the decided end with how the process exited and sends it, the last event.
func (s *Session) finish(x exit, held time.Duration, killed, termed bool) {
	s.mu.Lock()
	e := s.end
	s.mu.Unlock()
	e.ExitCode, e.Signal, e.Killed = x.code, x.sig, killed
	e.StderrTail = strings.ToValidUTF8(string(x.tail), "\uFFFD")
	e.StderrBytes, e.StderrDropped = x.total, s.errlog.dropAll
	e.Elapsed, e.Held = time.Since(s.start), held
	killedNow := false
	select {
	case <-s.kill:
		killedNow = true
	default:
	}
	if killed && e.Status != harnesskit.Completed {
		switch {
		case killedNow:
			e.Reason += "; its process group was killed at once"
		case termed:
			e.Reason += fmt.Sprintf("; it did not exit within %s of SIGTERM and its process group was killed", s.grace)
		default:
			e.Reason += fmt.Sprintf("; it did not exit within %s of its last line and its process group was killed", s.grace)
		}
	}
	s.final = e
	s.emit(harnesskit.Event{Kind: harnesskit.EventEnd, End: &e})
	close(s.done)
}

// killPipeHolders kills what still holds the session's stdout or stderr once its process group
// is gone: descendants that left the group (setsid), which a node without a sandbox cannot
// otherwise tell from its other processes. It looks only if the pipes do not close at once.
func (s *Session) killPipeHolders() {
	eof := time.NewTimer(50 * time.Millisecond)
	defer eof.Stop()
	for stdout, stderr := s.stdoutEOF, s.stderrEOF; stdout != nil || stderr != nil; {
		select {
		case <-stdout:
			stdout = nil
		case <-stderr:
			stderr = nil
		case <-eof.C:
			for _, pid := range pipeHolders(s.stdout.f, s.stderr.f) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return
		}
	}
}

// stderrSummary is the end of stderr for a reason.
func stderrSummary(tail []byte) string {
	last := textclip.LastLines(strings.ToValidUTF8(string(tail), "\uFFFD"), 10, 2<<10)
	if strings.TrimSpace(last) == "" {
		return "; its stderr is empty"
	}
	return "; the end of its stderr:\n" + last
}

func exitStatus(ps *os.ProcessState) (code int, sig string) {
	if ps == nil {
		return -1, ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, signalName(ws.Signal())
	}
	return ps.ExitCode(), ""
}

func waitStatus(ws syscall.WaitStatus) (code int, sig string) {
	if ws.Signaled() {
		return -1, signalName(ws.Signal())
	}
	return ws.ExitStatus(), ""
}

func signalName(sig syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM", syscall.SIGSEGV: "SIGSEGV",
		syscall.SIGABRT: "SIGABRT", syscall.SIGINT: "SIGINT", syscall.SIGHUP: "SIGHUP",
		syscall.SIGPIPE: "SIGPIPE", syscall.SIGBUS: "SIGBUS", syscall.SIGILL: "SIGILL",
		syscall.SIGFPE: "SIGFPE", syscall.SIGQUIT: "SIGQUIT", syscall.SIGUSR1: "SIGUSR1",
		syscall.SIGUSR2: "SIGUSR2", syscall.SIGXCPU: "SIGXCPU",
	}
	if n, ok := names[sig]; ok {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}

// encodeLine is a message's line, "\n" included, within MaxLine.
func encodeLine(m harnesskit.Message) ([]byte, error) {
	b, err := jsonutil.Marshal(m)
	if err != nil {
		return nil, err
	}
	if len(b)+1 > harnesskit.MaxLine {
		return nil, &harnesskit.LineTooLongError{Size: int64(len(b) + 1), Limit: harnesskit.MaxLine}
	}
	return append(b, '\n'), nil
}

// allowLine is the line of a permission that allows call id with args (a JSON object), as
// encodeLine writes it, made in one buffer of its size: a call's arguments may be megabytes,
// which encodeLine compacted three times over, growing a buffer each time.
func allowLine(id string, args json.RawMessage) ([]byte, error) {
	qid, err := jsonutil.Marshal(id)
	if err != nil {
		return nil, err
	}
	const head, mid, tail = `{"type":"permission","id":`, `,"decision":"allow","arguments":`, "}\n"
	var buf bytes.Buffer
	buf.Grow(len(head) + len(qid) + len(mid) + len(args) + len(tail))
	buf.WriteString(head)
	buf.Write(qid)
	buf.WriteString(mid)
	if err := json.Compact(&buf, args); err != nil {
		return nil, err
	}
	buf.WriteString(tail)
	if buf.Len() > harnesskit.MaxLine {
		return nil, &harnesskit.LineTooLongError{Size: int64(buf.Len()), Limit: harnesskit.MaxLine}
	}
	return buf.Bytes(), nil
}

// ---- pipes ------------------------------------------------------------------------------------

// pipeReader reads the parent's end of a pipe. Once drain is called (the process has exited and
// its group is killed) a read that waits longer than the idle time, or reading past the bound,
// ends the stream: only a process that left the group can still hold the other end.
type pipeReader struct {
	f        *os.File
	draining atomic.Bool
	idle     time.Duration
	until    time.Time
	heldOpen atomic.Bool
	bounded  atomic.Bool // the bound ended it, not idleness
	// lastReads counts what lastRead gave; only the reading goroutine uses it.
	lastReads int
}

func (p *pipeReader) drain(idle, bound time.Duration) {
	p.idle = idle
	p.until = time.Now().Add(bound)
	p.draining.Store(true)
	_ = p.f.SetReadDeadline(time.Now().Add(min(idle, bound)))
}

func (p *pipeReader) Read(b []byte) (int, error) {
	if p.draining.Load() {
		if time.Now().After(p.until) {
			return p.lastRead(b, true)
		}
		deadline := time.Now().Add(p.idle)
		if p.until.Before(deadline) {
			deadline = p.until
		}
		_ = p.f.SetReadDeadline(deadline)
	}
	n, err := p.f.Read(b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		if n > 0 {
			return n, nil
		}
		return p.lastRead(b, !time.Now().Before(p.until))
	}
	return n, err
}

// maxLastReads is the most a pipe gives past its bound: what it can hold (a pipe's buffer is 64
// KiB by default, 1 MiB at most unprivileged), not what a writer keeps adding.
const maxLastReads = 1 << 20

// lastRead reads, without waiting, what the pipe holds once the wait for more is over, and then
// ends the stream: a reader that comes late (a loaded machine: its goroutine not run for the
// idle time, or past the bound) still gets what the harness wrote before it exited. A deadline
// that has passed fails a read before it looks at the pipe, so the deadline is cleared first.
func (p *pipeReader) lastRead(b []byte, bounded bool) (int, error) {
	if p.lastReads < maxLastReads {
		n, closed := p.readNow(b[:min(len(b), maxLastReads-p.lastReads)])
		if n > 0 {
			p.lastReads += n
			return n, nil
		}
		if closed {
			return 0, io.EOF // every writer is gone after all
		}
	}
	p.heldOpen.Store(true)
	if bounded {
		p.bounded.Store(true)
	}
	return 0, io.EOF
}

// readNow is one read of what the pipe holds: 0 when it holds nothing (or cannot be read without
// waiting), and closed when every writer is gone.
func (p *pipeReader) readNow(b []byte) (n int, closed bool) {
	_ = p.f.SetReadDeadline(time.Time{})
	rc, err := p.f.SyscallConn()
	if err != nil {
		return 0, false
	}
	_ = rc.Read(func(fd uintptr) bool {
		if fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0); err == nil && fl&unix.O_NONBLOCK != 0 {
			var rerr error
			n, rerr = syscall.Read(int(fd), b)
			closed = n == 0 && rerr == nil && len(b) > 0
		}
		return true // never wait
	})
	return max(n, 0), closed
}

// stdinWriter writes the node's lines to the harness's stdin from a goroutine of its own, so that
// a harness that does not read its stdin blocks nothing but that goroutine.
type stdinWriter struct {
	f      *os.File
	mu     sync.Mutex
	queue  [][]byte
	closed bool
	wake   chan struct{}
	done   chan struct{}
}

func newStdinWriter(f *os.File) *stdinWriter {
	return &stdinWriter{f: f, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (w *stdinWriter) send(m harnesskit.Message) {
	if line, err := encodeLine(m); err == nil {
		w.sendLine(line)
	}
}

func (w *stdinWriter) sendLine(line []byte) {
	w.mu.Lock()
	if !w.closed {
		w.queue = append(w.queue, line)
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// close closes stdin: a write in progress fails, queued lines are dropped.
func (w *stdinWriter) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.queue = nil
	w.mu.Unlock()
	w.f.Close()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *stdinWriter) run() {
	defer close(w.done)
	broken := false
	for range w.wake {
		w.mu.Lock()
		queue, closed := w.queue, w.closed
		w.queue = nil
		w.mu.Unlock()
		if closed {
			return
		}
		for _, line := range queue {
			if !broken {
				// A harness that has exited or closed its stdin cannot take answers: drop them.
				_, err := w.f.Write(line)
				broken = err != nil
			}
		}
	}
}

// streamLine reads a long say or log line in pieces (h is its head, not read yet), delivering
// each piece as an event of the line as soon as the next one is decoded (the last, More unset,
// once the line's end is known); it reports whether to go on reading stdout.
func (s *Session) streamLine(r *harnesskit.Reader, budget *eventBudget, h harnesskit.LongText) bool {
	n := r.Lines() + 1
	var (
		held string // the last full piece, delivered when the next one comes or the line ends
		have bool
		late bool // the session's end came while the line was read: the rest is not kept
		what = "say"
	)
	if h.Type() == harnesskit.TypeLog {
		what = "log"
	}
	deliver := func(text string, more bool, raw []byte) {
		if late {
			return
		}
		if s.isLast() {
			late = true
			s.emit(harnesskit.Event{Kind: harnesskit.EventIgnored, Line: n, Note: fmt.Sprintf("%s: the rest of a long %s, read in pieces, was not kept", afterLast, what)})
			return
		}
		ev := harnesskit.Event{Kind: harnesskit.EventSay, Message: harnesskit.Say{Text: text}, Line: n, Raw: raw, More: more}
		if h.Type() == harnesskit.TypeLog {
			ev.Kind, ev.Message = harnesskit.EventLog, harnesskit.Log{Level: h.Level(), Message: text}
		}
		s.emit(ev)
	}
	read := r.ReadLongText(h, func(k int64) string { return budget.take(k, time.Now()) }, func(text []byte) {
		if have {
			deliver(held, true, nil)
		}
		held, have = string(text), true
	})
	final := func(raw []byte) { // what is left of the text, the line's last piece
		if len(read.Rest) > 0 {
			if have {
				deliver(held, true, nil)
			}
			held, have = string(read.Rest), true
		}
		if have || raw != nil {
			deliver(held, false, raw)
		}
		held, have, read.Rest = "", false, nil
	}

	var tooLong *harnesskit.LineTooLongError
	switch err := read.Err; {
	case errors.As(err, &tooLong):
		final(nil)
		s.violate(n, nil, harnesskit.RuleLineTooLong, fmt.Sprintf("line %d of stdout: %v", n, tooLong))
		return true
	case err == harnesskit.ErrTextStopped:
		// As for a line read whole: the rest is not decoded, nor anything after it; the text
		// before the budget was past has gone on already.
		final(nil)
		if s.decideEnd(harnesskit.End{Status: harnesskit.Failed, Reason: read.Over}) {
			s.emit(harnesskit.Event{Kind: harnesskit.EventIgnored, Line: n, Note: fmt.Sprintf("the rest of line %d and of stdout were not read: %s", n, read.Over)})
		}
		r.Discard()
		return false
	case read.Syntax != nil:
		final(nil)
		note := "not JSON: " + read.Syntax.Detail
		if read.Syntax.UTF8 {
			note = read.Syntax.Detail
		}
		text, cut := textclip.Bytes(read.Tail, harnesskit.MaxEventText)
		rest := fmt.Sprintf("%d bytes", len(read.Tail))
		if cut {
			rest += ", cut"
		}
		note += fmt.Sprintf(" (line %d was read in pieces: the text before that went on as a %s; the rest of the line, %s, is here)", n, what, rest)
		kind := harnesskit.EventStray
		if s.isLast() {
			kind, note = harnesskit.EventIgnored, afterLast+"; "+note
		}
		// Raw is what is left of the line, so that a check of the lines (oz0 plugin test's) finds
		// it is not a message.
		s.emit(harnesskit.Event{Kind: kind, Line: n, Raw: read.Tail, Text: strings.ToValidUTF8(text, "\uFFFD"), Note: note})
		return r.Err() == nil
	case err != nil:
		final(nil)
		if s.stdout.heldOpen.Load() {
			s.emit(harnesskit.Event{Kind: harnesskit.EventIgnored, Note: "the harness has exited, but a process outside its process group still holds its stdout open; stopped reading"})
		}
		return false
	}
	if t := bytes.Trim(read.Tail, " \t\r\n"); len(t) == 1 && t[0] == '}' {
		final(nil)
		return true
	}
	// The line goes on after its text: it is the say or log it began as only if it decodes as
	// one with the text left out (unknown members are ignored, as in any line).
	m, derr := harnesskit.DecodeHarnessMessage(read.Synth)
	if derr == nil && (m == harnesskit.Say{} && h.Type() == harnesskit.TypeSay || m == harnesskit.Log{Level: h.Level()} && h.Type() == harnesskit.TypeLog) {
		final(read.Synth)
		return true
	}
	final(nil)
	var de *harnesskit.DecodeError
	if errors.As(derr, &de) && de.Err == harnesskit.ErrDuplicateKey {
		s.violate(n, read.Synth, harnesskit.RuleKeys, fmt.Sprintf("line %d of stdout is %v; JSON parsers differ on which of the two counts, so the node takes it as no message (its text, read in pieces, went on as a %s before the second key came): write each key once", n, derr, what))
		return true
	}
	note := fmt.Sprintf("line %d began as a %s, whose text went on as one, but the line is not one: ", n, what)
	if derr != nil {
		note += derr.Error()
	} else {
		note += fmt.Sprintf("it goes on as %s %s message", harnesskit.Article(m.MessageType()), m.MessageType())
	}
	text, _ := textclip.Bytes(read.Synth, harnesskit.MaxEventText)
	s.emitLine(n, read.Synth, harnesskit.Event{Kind: harnesskit.EventIgnored, Text: strings.ToValidUTF8(text, "\uFFFD"), Note: note})
	return true
}
