//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/orchestrator-zero/oz0/harnesskit/sandbox/internal/initproc"
)

// Process is a session's init, which runs the harness in the sandbox. The node starts it in
// new user, mount, PID, IPC and UTS namespaces (and network, for Strict) as PID 1, in a process
// group of its own, killed by the kernel if the node dies; the init builds the session's root,
// starts the harness, reaps, passes SIGTERM on to every process of the session, and exits when
// the harness has, which ends the namespace and everything left in it.
type Process struct {
	cmd      *exec.Cmd
	cfg      initproc.Config
	child    *os.File // the init's end of the control socket, until it starts
	ctl      *net.UnixConn
	listen   []string
	harness  int
	lns      []net.Listener
	done     chan struct{}
	mu       sync.Mutex
	status   syscall.WaitStatus
	statusOK bool
}

// SetupError is a sandbox that could not be built for a session: nothing runs.
type SetupError struct{ Msg string }

func (e *SetupError) Error() string { return e.Msg }

// setupTimeout bounds how long the init may take to build the sandbox and start the harness.
const setupTimeout = 30 * time.Second

// Prepare turns cmd, the harness as the node would start it (Path and Args resolved on the host,
// Env, Dir, and its stdin, stdout and stderr as *os.File), into the command of the session's init,
// which runs it as c says. Start it with Process.Start, not cmd.Start; cmd.Wait waits for the
// init, and so for every process of the session.
func Prepare(cmd *exec.Cmd, c Config) (*Process, error) {
	if !c.Tier.Isolated() {
		return nil, fmt.Errorf("sandbox: tier %q runs no sandbox", c.Tier)
	}
	ops, err := c.plan()
	if err != nil {
		return nil, &SetupError{Msg: err.Error()}
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	p.cfg = initproc.Config{
		Argv: cmd.Args, Env: cmd.Env, Dir: cmd.Dir, Root: c.Root, Ops: ops,
		UID: -1, GID: -1,
	}
	if len(p.cfg.Argv) > 0 {
		p.cfg.Argv = append([]string{cmd.Path}, cmd.Args[1:]...)
	}
	if c.Tier == Strict {
		p.cfg.Net, p.cfg.Listen = true, c.Listen
	}
	ids := idsOf()
	if ids.harnessUID >= 0 {
		p.cfg.UID, p.cfg.GID = ids.harnessUID, ids.harnessGID
	}
	if err := p.attach(ids, c.Tier); err != nil {
		return nil, err
	}
	return p, nil
}

// attach makes cmd the init's: its program, its namespaces and ids, its control socket.
func (p *Process) attach(ids ids, tier Tier) error {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	node := os.NewFile(uintptr(pair[0]), "sandbox-control")
	c, err := net.FileConn(node)
	node.Close()
	if err != nil {
		unix.Close(pair[1])
		return fmt.Errorf("sandbox: %w", err)
	}
	p.ctl = c.(*net.UnixConn)
	p.child = os.NewFile(uintptr(pair[1]), "sandbox-control")

	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS)
	if tier == Strict {
		flags |= unix.CLONE_NEWNET
	}
	p.cmd.Path = "/proc/self/exe" // this very binary, even if its file was replaced since
	p.cmd.Args = []string{initproc.Arg0}
	p.cmd.Env = []string{}
	p.cmd.Dir = "/"
	p.cmd.ExtraFiles = []*os.File{p.child}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:                    true,
		Pdeathsig:                  syscall.SIGKILL,
		Cloneflags:                 flags,
		UidMappings:                ids.uids,
		GidMappings:                ids.gids,
		GidMappingsEnableSetgroups: ids.setgroups,
		AmbientCaps:                ids.ambient,
	}
	return nil
}

// Start starts the init and waits until the harness runs in the sandbox. On error nothing runs.
func (p *Process) Start() error {
	err := p.cmd.Start()
	p.child.Close()
	if err != nil {
		p.ctl.Close()
		return &SetupError{Msg: fmt.Sprintf("cannot start the session's sandbox: %v", explainClone(err))}
	}
	fail := func(msg string) error {
		p.cmd.Process.Kill()
		p.cmd.Wait()
		p.ctl.Close()
		return &SetupError{Msg: msg}
	}
	b, _ := json.Marshal(p.cfg)
	if _, err := p.ctl.Write(b); err != nil {
		return fail(fmt.Sprintf("cannot configure the session's sandbox: %v", err))
	}
	_ = p.ctl.SetReadDeadline(time.Now().Add(setupTimeout))
	buf := make([]byte, initproc.MaxMessage)
	oob := make([]byte, unix.CmsgSpace(4*max(len(p.cfg.Listen), 1)))
	n, oobn, _, _, err := p.ctl.ReadMsgUnix(buf, oob)
	if err != nil {
		return fail(fmt.Sprintf("the session's sandbox did not start: %v", err))
	}
	_ = p.ctl.SetReadDeadline(time.Time{})
	fds, _ := unixRights(oob[:oobn])
	var r initproc.Reply
	if err := json.Unmarshal(buf[:n], &r); err != nil || !r.Ready {
		closeFDs(fds)
		if r.Error != "" {
			return fail("the session's sandbox could not be set up: " + r.Error)
		}
		return fail(fmt.Sprintf("the session's sandbox answered %q", buf[:n]))
	}
	for _, fd := range fds {
		f := os.NewFile(uintptr(fd), "gateway")
		l, err := net.FileListener(f)
		f.Close()
		if err != nil {
			p.closeListeners()
			return fail(fmt.Sprintf("cannot take the session's gateway socket: %v", err))
		}
		p.lns = append(p.lns, l)
	}
	p.harness = r.PID
	go p.readExit()
	return nil
}

// readExit takes the harness's exit status when the init sends it; the control socket ends when
// the init exits.
func (p *Process) readExit() {
	defer close(p.done)
	defer p.ctl.Close()
	buf := make([]byte, initproc.MaxMessage)
	for {
		n, err := p.ctl.Read(buf)
		if err != nil {
			return
		}
		var r initproc.Reply
		if json.Unmarshal(buf[:n], &r) == nil && r.Exit != nil {
			p.mu.Lock()
			p.status, p.statusOK = syscall.WaitStatus(*r.Exit), true
			p.mu.Unlock()
		}
	}
}

// Listeners are the sockets a Strict session reaches the gateway on, listening inside its
// network: the node serves the gateway there, and closes them.
func (p *Process) Listeners() []net.Listener { return p.lns }

// HarnessPID is the harness's process id inside the sandbox.
func (p *Process) HarnessPID() int { return p.harness }

// HarnessStatus is how the harness exited, once cmd.Wait has returned; ok is false when the init
// could not say (it was killed first).
func (p *Process) HarnessStatus() (syscall.WaitStatus, bool) {
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status, p.statusOK
}

func (p *Process) closeListeners() {
	for _, l := range p.lns {
		l.Close()
	}
	p.lns = nil
}

func unixRights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for i := range msgs {
		got, err := unix.ParseUnixRights(&msgs[i])
		if err == nil {
			fds = append(fds, got...)
		}
	}
	return fds, nil
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// ids are the sandbox's user and group id maps, and the harness's ids in it.
type ids struct {
	uids, gids             []syscall.SysProcIDMap
	setgroups              bool
	ambient                []uintptr
	harnessUID, harnessGID int // -1: the init's
}

var (
	idsOnce   sync.Once
	idsCached ids
)

// idsOf maps the node's own ids into the sandbox, so that what the harness writes is the user's.
// The node's user is the harness's, with one exception: a node that is root on the host runs the
// harness as nobody (65534), as root's own files (/etc/shadow, host keys) would be open to it.
// An unprivileged init gets the capabilities it needs to build the sandbox as ambient ones; it
// drops them before the harness starts.
func idsOf() ids {
	idsOnce.Do(func() {
		uid, gid := os.Geteuid(), os.Getegid()
		if uid == 0 && initialUserNamespace() {
			m := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: Nobody, HostID: Nobody, Size: 1}}
			idsCached = ids{uids: m, gids: m, setgroups: true, harnessUID: Nobody, harnessGID: Nobody}
			return
		}
		idsCached = ids{
			uids:       []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			gids:       []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
			harnessUID: -1, harnessGID: -1,
		}
		if uid != 0 {
			idsCached.ambient = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP}
		}
	})
	return idsCached
}

// Nobody is the id a root node's harness runs as.
const Nobody = 65534

// HarnessOwner says whom the session's directories must belong to for the harness to write them:
// chown is false when they are the node's own.
func HarnessOwner(t Tier) (uid, gid int, chown bool) {
	if !t.Isolated() {
		return 0, 0, false
	}
	i := idsOf()
	if i.harnessUID < 0 {
		return 0, 0, false
	}
	return i.harnessUID, i.harnessGID, true
}

// initialUserNamespace reports whether this process is in the host's user namespace, where every
// id is mapped.
func initialUserNamespace() bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295"
}

// explainClone turns the kernel's refusal of the namespaces into what to do.
func explainClone(err error) error {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return err
	}
	if r := userNamespaceRefusal(); r != nil {
		return fmt.Errorf("%v: %s", err, r.Reason)
	}
	return err
}
