//go:build linux

package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

// ForkServers says whether this platform has fork servers (see Zygote).
const ForkServers = true

// Zygote is a harness's fork server: a process made as a session made ahead is (Make: its
// sandbox, its directories, its loader, which loads the harness's dependencies), which then forks
// one session for each job instead of taking one. A forked session shares with the server the
// pages of what was loaded (copy on write) and nothing else: in a sandboxed tier it has user,
// mount, PID, IPC and UTS namespaces of its own (and a network one in strict), nested in the
// server's; its own directories, made by the node in the server's sessions' directory, which
// shows it no other's; a fresh /tmp and /dev/shm; its job's environment and key. (The server's
// loader says how: supervisor/ahead's zygote.py.)
//
// The server's stdin is its control socket: a request (JSON) a session, with the session's
// stdin, stdout and stderr and a report socket (SCM_RIGHTS); on the report socket the session's
// first process (PID 1 of its namespaces; in tier none its keeper) says it started (with a pidfd
// of that process, and in strict the listening sockets of its network, which the node serves the
// gateway on), then how the harness exited.
type Zygote struct {
	made     *Made
	ctl      *net.UnixConn
	sessions string // where its sessions' directories are made; shown read-write to it alone
	close    sync.Once
}

// MakeZygote starts spec's fork server: spec as Make takes it, its Command the loader's in fork
// mode. Its sessions' directories are made in a directory of its own under spec.TempDir.
func MakeZygote(spec Spec) (*Zygote, error) {
	sessions, err := os.MkdirTemp(spec.TempDir, "oz0-fork-")
	if err != nil {
		return nil, fmt.Errorf("cannot make the fork server's directory: %w", err)
	}
	// The sessions run as the harness's user: they must reach their directories.
	if err := os.Chmod(sessions, 0o711); err != nil {
		os.RemoveAll(sessions)
		return nil, err
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		os.RemoveAll(sessions)
		return nil, fmt.Errorf("cannot make the fork server's control socket: %w", err)
	}
	nodeEnd := os.NewFile(uintptr(pair[0]), "fork-control")
	serverEnd := os.NewFile(uintptr(pair[1]), "fork-control")
	c, err := net.FileConn(nodeEnd)
	nodeEnd.Close()
	if err != nil {
		serverEnd.Close()
		os.RemoveAll(sessions)
		return nil, err
	}
	spec.TempDir = sessions
	m, err := makeWith(spec, launchOpts{stdin: serverEnd, writable: []string{sessions}})
	serverEnd.Close()
	if err != nil {
		c.Close()
		os.RemoveAll(sessions)
		return nil, err
	}
	return &Zygote{made: m, ctl: c.(*net.UnixConn), sessions: sessions}, nil
}

// Loaded is closed once the server has said it is ready, or can no longer say it.
func (z *Zygote) Loaded() <-chan struct{} { return z.made.Loaded() }

// Exited is closed when the server has exited.
func (z *Zygote) Exited() <-chan struct{} { return z.made.Exited() }

// Report is the server's loader line, once it has come.
func (z *Zygote) Report() json.RawMessage { return z.made.Report() }

// MadeAt is when the server was started.
func (z *Zygote) MadeAt() time.Time { return z.made.MadeAt() }

// Forks says whether the server forks sessions: it is ready, and its loader found nothing that
// a fork would break (a library's thread). False for one that is not ready yet.
func (z *Zygote) Forks() bool {
	if !z.made.Ready() {
		return false
	}
	var r struct {
		Fork bool `json:"fork"`
	}
	return json.Unmarshal(z.made.Report(), &r) == nil && r.Fork
}

// Fork starts spec's session, a job's, as a fork of the server: spec is the session as Start
// takes it. It waits for the server to be ready. ErrGone: the server cannot fork it (it exited,
// or forks nothing); start the job's session otherwise.
func (z *Zygote) Fork(ctx context.Context, spec Spec) (*Session, error) {
	s, p, err := z.forkSession(ctx, spec, false)
	if err != nil {
		return nil, err
	}
	s.madeAt = z.made.MadeAt()
	if err := s.beginWithRequest(ctx, p); err != nil {
		return nil, err
	}
	return s, nil
}

// Make forks a session ahead of its job: spec is the session as Make (the package's) takes it,
// without a job, key or trace context. The forked harness process, in its sandbox, its
// directories made, says it is ready as a loader does and waits for its bind line: Bind gives it
// its job. It waits for the server to be ready; ErrGone as Fork.
func (z *Zygote) Make(ctx context.Context, spec Spec) (*Made, error) {
	if err := nothingOfAJob(spec); err != nil {
		return nil, err
	}
	s, p, err := z.forkSession(ctx, spec, true)
	if err != nil {
		return nil, err
	}
	m := &Made{s: s, p: p, loaded: make(chan struct{})}
	go m.readLoaded()
	return m, nil
}

// forkSession has the server fork spec's session: its directories, environment and pipes made,
// its start read. ahead: the session is made before its job (its environment without
// the plugin's import path, as Make's; its harness waits for a bind line).
func (z *Zygote) forkSession(ctx context.Context, spec Spec, ahead bool) (_ *Session, _ *pipes, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	select {
	case <-z.made.Loaded():
	case <-z.made.Exited():
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("not starting the session: %w", ctx.Err())
	}
	if !z.Forks() {
		return nil, nil, ErrGone
	}
	server := z.made.s
	spec.Command, spec.PluginDir, spec.Sandbox = server.spec.Command, server.spec.PluginDir, server.spec.Sandbox
	spec.TempDir = z.sessions
	s := newSession(spec)
	s.pluginDir = server.pluginDir
	s.program = server.program
	var p *pipes
	var report *net.UnixConn
	defer func() {
		if err != nil {
			p.closeAll()
			if report != nil {
				report.Close()
			}
			removeAll(s.root)
		}
	}()
	dirs, err := s.makeDirs()
	if err != nil {
		return nil, nil, err
	}
	// Its first process, the server's user, shows the session its own directories from here.
	if err = os.Chmod(s.root, 0o711); err != nil {
		return nil, nil, err
	}
	_, env, err := resolveCommand(spec.Command, s.pluginDir, s.stateDir, spec.Env, &s.req)
	if err != nil {
		return nil, nil, err
	}
	if ahead {
		env = withoutPluginPath(env)
	}
	s.env = env
	pol := cmpOr(spec.Sandbox.Tier, sandbox.None).Policy()
	if err = giveDirs(dirs, pol); err != nil {
		return nil, nil, err
	}
	req := forkRequest{Tier: string(pol.Tier), Sessions: z.sessions, Root: s.root, Dir: s.workdir, State: s.stateDir, Env: env, Ahead: ahead}
	if pol.OwnNetwork {
		if spec.Sandbox.Gateway == nil {
			return nil, nil, errors.New("a strict sandbox needs the gateway's handler (Sandbox.Gateway)")
		}
		if req.Listen, err = sandbox.ListenAddrs(spec.Env.AnthropicBaseURL, spec.Env.OpenAIBaseURL); err != nil {
			return nil, nil, err
		}
	}
	if p, err = openPipes(); err != nil {
		return nil, nil, err
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot make the session's report socket: %w", err)
	}
	sessionEnd := os.NewFile(uintptr(pair[1]), "fork-report")
	defer sessionEnd.Close()
	nodeEnd := os.NewFile(uintptr(pair[0]), "fork-report")
	c, err := net.FileConn(nodeEnd)
	nodeEnd.Close()
	if err != nil {
		return nil, nil, err
	}
	report = c.(*net.UnixConn)
	data, err := json.Marshal(req)
	if err != nil {
		return nil, nil, err
	}
	rights := unix.UnixRights(int(p.inR.Fd()), int(p.outW.Fd()), int(p.errW.Fd()), int(sessionEnd.Fd()))
	s.start = time.Now()
	if _, _, err := z.ctl.WriteMsgUnix(data, rights, nil); err != nil {
		return nil, nil, ErrGone
	}
	// The child's ends are the session's now.
	for _, f := range []**os.File{&p.inR, &p.outW, &p.errW} {
		(*f).Close()
		*f = nil
	}
	sessionEnd.Close()
	fk, lns, err := startedFork(report, pol)
	if err != nil {
		return nil, nil, err
	}
	s.fork, s.pid = fk, fk.pid
	if len(lns) > 0 {
		s.serveOn(lns)
	}
	go func() {
		fk.await()
		close(s.exited)
	}()
	return s, p, nil
}

// Close ends the server; the sessions it forked end with it.
func (z *Zygote) Close() {
	z.close.Do(func() {
		z.ctl.Close()
		z.made.Discard()
		os.RemoveAll(z.sessions)
	})
}

// forkRequest is a fork server's request for one session.
type forkRequest struct {
	Tier     string   `json:"tier"`
	Sessions string   `json:"sessions"`
	Root     string   `json:"root"`
	Dir      string   `json:"dir"`
	State    string   `json:"state"`
	Env      []string `json:"env"`
	Listen   []string `json:"listen,omitempty"`
	Ahead    bool     `json:"ahead,omitempty"` // made before its job: the harness waits for a bind line
}

// forked is a session a fork server forked, as its first process reports it.
type forked struct {
	report    *net.UnixConn
	pidfd     int
	pid       int  // the session's first process, in the node's PID namespace
	sandboxed bool // it has namespaces of its own: signals go to its init, which passes them on
	mu        sync.Mutex
	ws        syscall.WaitStatus
	done      bool
}

// startedFork reads the session's first report: the session started (a pidfd of its first
// process, and its network's listeners), or why it did not.
func startedFork(report *net.UnixConn, pol sandbox.Policy) (*forked, []net.Listener, error) {
	_ = report.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(8*4))
	n, oobn, _, _, err := report.ReadMsgUnix(buf, oob)
	_ = report.SetReadDeadline(time.Time{})
	if err != nil || n == 0 {
		return nil, nil, ErrGone
	}
	var first struct {
		Started bool   `json:"started"`
		Error   string `json:"error"`
	}
	fds := parseRights(oob[:oobn])
	closeAll := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	if err := json.Unmarshal(buf[:n], &first); err != nil || !first.Started || len(fds) == 0 {
		closeAll()
		if first.Error != "" {
			return nil, nil, &sandbox.SetupError{Msg: first.Error}
		}
		return nil, nil, ErrGone
	}
	pid, err := pidOfPidfd(fds[0])
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	fk := &forked{report: report, pidfd: fds[0], pid: pid, sandboxed: pol.Namespaces}
	var lns []net.Listener
	for _, fd := range fds[1:] {
		f := os.NewFile(uintptr(fd), "gateway-listener")
		ln, err := net.FileListener(f)
		f.Close()
		if err == nil {
			lns = append(lns, ln)
		}
	}
	return fk, lns, nil
}

func parseRights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for i := range msgs {
		if r, err := unix.ParseUnixRights(&msgs[i]); err == nil {
			fds = append(fds, r...)
		}
	}
	return fds
}

// pidOfPidfd is the process a pidfd refers to, in this process's PID namespace (its fdinfo's
// Pid line).
func pidOfPidfd(fd int) (int, error) {
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Pid:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, errors.New("the forked session's pidfd names no process")
}

// signal sends sig to the session: to its init, which passes it on (and SIGKILL ends the whole
// namespace), or, unsandboxed, to its process group.
func (f *forked) signal(sig syscall.Signal) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return
	}
	if f.sandboxed {
		_ = unix.PidfdSendSignal(f.pidfd, sig, nil, 0)
		return
	}
	_ = syscall.Kill(-f.pid, sig)
}

// await reads the session's reports until one says how it exited, or the reporter goes (then it
// is taken as killed).
func (f *forked) await() {
	ws := syscall.WaitStatus(uint32(syscall.SIGKILL)) // gone without a word: killed
	buf := make([]byte, 4096)
	for {
		n, err := f.report.Read(buf)
		if err != nil || n == 0 {
			break
		}
		var r struct {
			Exit *uint32 `json:"exit"`
		}
		if json.Unmarshal(bytes.TrimSpace(buf[:n]), &r) == nil && r.Exit != nil {
			ws = syscall.WaitStatus(*r.Exit)
			break
		}
	}
	f.mu.Lock()
	f.ws, f.done = ws, true
	unix.Close(f.pidfd)
	f.mu.Unlock()
	f.report.Close()
}

func (f *forked) status() syscall.WaitStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ws
}
