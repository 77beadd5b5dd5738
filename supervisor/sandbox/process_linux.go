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

	"github.com/orchestrator-zero/oz0/supervisor/internal/execerr"
	"github.com/orchestrator-zero/oz0/supervisor/internal/fds"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox/internal/initproc"
)

// Process is a session's init, which runs the harness in the sandbox. The node starts it in
// new user, mount, PID, IPC and UTS namespaces (and network, for Strict) as PID 1, in a process
// group of its own, killed by the kernel if the node dies; the init builds the session's root,
// starts the harness, reaps, passes SIGTERM on to every process of the session, and exits when
// the harness has, which ends the namespace and everything left in it.
//
// An init is started before it is needed: starting it (the namespaces, oz0's exec, Go's runtime)
// is most of what a sandbox costs a session, so each tier keeps one started ahead, waiting for
// its session's config; when a session that took it ends, the next one starts.
type Process struct {
	tier     Tier
	cmd      *exec.Cmd
	cfg      initproc.Config
	stdio    []*os.File // the harness's stdin, stdout and stderr, sent to the init with its config
	ctl      *net.UnixConn
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

// Prepare makes the sandbox that runs cmd, the harness as the node would start it (Path and Args
// resolved on the host, Env, Dir, and its stdin, stdout and stderr as *os.File; cmd is not
// started), as c says. Process.Start starts it; Process.Cmd is the init's command, whose Wait
// waits for every process of the session.
func Prepare(cmd *exec.Cmd, c Config) (*Process, error) {
	pol := c.Tier.Policy()
	if !pol.Namespaces {
		return nil, fmt.Errorf("sandbox: tier %q runs no sandbox", c.Tier)
	}
	ops, err := c.plan()
	if err != nil {
		return nil, &SetupError{Msg: err.Error()}
	}
	cfg := initproc.Config{Env: cmd.Env, Dir: cmd.Dir, Root: c.Root, Ops: ops, UID: -1, GID: -1}
	if len(cmd.Args) > 0 {
		cfg.Argv = append([]string{cmd.Path}, cmd.Args[1:]...)
	}
	if pol.OwnNetwork {
		cfg.Net, cfg.Listen = true, c.Listen
	}
	if ids := idsOf(); ids.harnessUID >= 0 {
		cfg.UID, cfg.GID = ids.harnessUID, ids.harnessGID
	}
	var stdio []*os.File
	for _, f := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		if f, ok := f.(*os.File); ok && f != nil {
			stdio = append(stdio, f)
		}
	}
	if len(stdio) != 0 && len(stdio) != 3 {
		return nil, errors.New("sandbox: the harness's stdin, stdout and stderr must all be files, or none")
	}
	p, err := take(c.Tier)
	if err != nil {
		return nil, err
	}
	p.cfg, p.stdio = cfg, stdio
	return p, nil
}

// Cmd is the init's command, started: its Wait waits for the init (and so for every process of
// the session), its ProcessState is the init's, its process group the one to signal.
func (p *Process) Cmd() *exec.Cmd { return p.cmd }

var warm sync.Map // Tier → chan *Process: the init started ahead for the tier's next session

// take returns the tier's init started ahead, or starts one.
func take(tier Tier) (*Process, error) {
	ch, _ := warm.LoadOrStore(tier, make(chan *Process, 1))
	select {
	case p := <-ch.(chan *Process):
		return p, nil
	default:
		return spawn(tier)
	}
}

var (
	spareMu sync.Mutex        // a spare's keeping (noSpare) and its offer, as one
	noSpare = map[Tier]bool{} // the tiers that keep no init ahead (KeepSpare)
)

// keepSpare is KeepSpare.
func keepSpare(tier Tier, keep bool) {
	spareMu.Lock()
	defer spareMu.Unlock()
	noSpare[tier] = !keep
	if keep {
		return
	}
	if ch, ok := warm.Load(tier); ok {
		select {
		case p := <-ch.(chan *Process):
			p.discard()
		default:
		}
	}
}

// warmUp starts the tier's next init ahead, unless one is waiting or the tier keeps none.
func warmUp(tier Tier) {
	spareMu.Lock()
	no := noSpare[tier]
	spareMu.Unlock()
	if no {
		return
	}
	if ch, ok := warm.Load(tier); ok && len(ch.(chan *Process)) > 0 {
		return // one waits (another could come between this and the send: it is discarded)
	}
	p, err := spawn(tier)
	if err != nil {
		return
	}
	spareMu.Lock()
	defer spareMu.Unlock()
	ch, _ := warm.LoadOrStore(tier, make(chan *Process, 1))
	if noSpare[tier] {
		p.discard() // told meanwhile to keep none
		return
	}
	select {
	case ch.(chan *Process) <- p:
	default:
		p.discard()
	}
}

// spawn starts an init of tier, which waits for its config on its control socket.
func spawn(tier Tier) (*Process, error) { return spawnMarking(tier, fds.CloseOnExecFrom) }

// spawnMarking is spawn, with mark marking the node's descriptors close-on-exec before the init
// starts (a test passes one that does nothing, to see the init do the same on its own).
func spawnMarking(tier Tier, mark func(first int) error) (*Process, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	node := os.NewFile(uintptr(pair[0]), "sandbox-control")
	c, err := net.FileConn(node)
	node.Close()
	child := os.NewFile(uintptr(pair[1]), "sandbox-control")
	defer child.Close()
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS)
	if tier.Policy().OwnNetwork {
		flags |= unix.CLONE_NEWNET
	}
	ids := idsOf()
	p := &Process{tier: tier, ctl: c.(*net.UnixConn), done: make(chan struct{})}
	p.cmd = &exec.Cmd{
		Path:       "/proc/self/exe", // this very binary, even if its file was replaced since
		Args:       []string{initproc.Arg0},
		Env:        []string{},
		Dir:        "/",
		ExtraFiles: []*os.File{child},
		SysProcAttr: &syscall.SysProcAttr{
			// A session of its own: no controlling terminal for the session (TIOCSTI).
			Setsid:                     true,
			Pdeathsig:                  syscall.SIGKILL,
			Cloneflags:                 flags,
			UidMappings:                ids.uids,
			GidMappings:                ids.gids,
			GidMappingsEnableSetgroups: ids.setgroups,
			AmbientCaps:                ids.ambient,
		},
	}
	_ = mark(3) // the init gets its control socket, and nothing the node inherited (it checks again)
	if err := p.cmd.Start(); err != nil {
		p.ctl.Close()
		return nil, &SetupError{Msg: fmt.Sprintf("cannot start the session's sandbox: %v", explainClone(err))}
	}
	return p, nil
}

// discard ends an init that will run nothing.
func (p *Process) discard() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
	p.ctl.Close()
}

// Start sends the init its config and waits until the harness runs in the sandbox. On error
// nothing runs. An init started ahead that died meanwhile is replaced once.
func (p *Process) Start() error {
	err := p.configure()
	var gone *initGone
	if errors.As(err, &gone) {
		fresh, serr := spawn(p.tier)
		if serr != nil {
			return serr
		}
		p.cmd, p.ctl = fresh.cmd, fresh.ctl
		err = p.configure()
	}
	return err
}

// initGone is an init that ended before it read its config.
type initGone struct{ err error }

func (e *initGone) Error() string { return "the sandbox's init is gone: " + e.err.Error() }

// configure sends the config (with the harness's stdin, stdout and stderr) and reads the init's
// answer.
func (p *Process) configure() error {
	fail := func(msg string) error {
		p.discard()
		return &SetupError{Msg: msg}
	}
	b, _ := json.Marshal(p.cfg)
	var oob []byte
	if len(p.stdio) > 0 {
		oob = unix.UnixRights(int(p.stdio[0].Fd()), int(p.stdio[1].Fd()), int(p.stdio[2].Fd()))
	}
	if _, _, err := p.ctl.WriteMsgUnix(b, oob, nil); err != nil {
		p.discard()
		return &initGone{err}
	}
	_ = p.ctl.SetReadDeadline(time.Now().Add(setupTimeout))
	buf := make([]byte, initproc.MaxMessage)
	oob = make([]byte, unix.CmsgSpace(4*max(len(p.cfg.Listen), 1)))
	n, oobn, _, _, err := p.ctl.ReadMsgUnix(buf, oob)
	if err != nil {
		return fail(fmt.Sprintf("the session's sandbox did not start: %v", err))
	}
	_ = p.ctl.SetReadDeadline(time.Time{})
	fds, _ := unixRights(oob[:oobn])
	var r initproc.Reply
	if err := json.Unmarshal(buf[:n], &r); err != nil || !r.Ready {
		closeFDs(fds)
		if r.Denied && len(p.cfg.Argv) > 0 {
			uid, gid := p.cfg.UID, p.cfg.GID
			if uid < 0 { // the init's: the node's own
				uid, gid = os.Getuid(), os.Getgid()
			}
			return fail(execerr.Denied(p.cfg.Argv[0], uid, gid))
		}
		if r.Exec {
			return fail(r.Error)
		}
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
	go p.readExit()
	return nil
}

// readExit takes the harness's exit status when the init sends it; the control socket ends when
// the init exits.
func (p *Process) readExit() {
	defer close(p.done)
	defer p.ctl.Close()
	// The session is over: the tier's next init starts now, not while this one's harness started
	// (the two would share the CPU), nor when the next session asks.
	defer func() {
		if !p.cfg.Probe {
			go warmUp(p.tier)
		}
	}()
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
	if !t.Policy().Namespaces {
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
