package initproc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/orchestrator-zero/oz0/supervisor/internal/execerr" // these two: the standard library's basic packages only
	"github.com/orchestrator-zero/oz0/supervisor/internal/fds"
)

// The init runs from this package's init function rather than from main, and imports only the
// standard library's basic packages: Go initialises a program's packages in import-path order
// once their imports are done, so this one runs right after those few, before oz0's heavy ones
// (the JSON Schema compiler, protobuf, SQLite) would cost every session's start milliseconds.
// (A package that sorts late, such as path/filepath or net/netip, would hold it back until
// then: hence the small path and address helpers below.) A binary that links this package is
// its own init: oz0, and the test binaries.
func init() {
	if len(os.Args) == 0 || os.Args[0] != Arg0 {
		return
	}
	// Every step that sets what the harness inherits (no new privileges, no capabilities) is
	// per thread, and the harness is forked from the thread that starts it: keep to one.
	runtime.LockOSThread()
	// The raw exit: nothing to flush, and a binary built with the race detector would otherwise
	// sleep a second at exit (GORACE's atexit_sleep_ms), holding up the session's end.
	syscall.Exit(initMain())
}

// prctl's options that package syscall does not name.
const (
	prSetDumpable          = 4
	prSetNoNewPrivs        = 38
	prCapAmbient           = 47
	prCapAmbientClearAll   = 4
	stRelatime             = 0x1000 // statfs's f_flags
	stNoatime, stNodiratim = 0x400, 0x800
)

func reply(r Reply, fds ...int) error {
	b, _ := json.Marshal(r)
	var oob []byte
	if len(fds) > 0 {
		oob = syscall.UnixRights(fds...)
	}
	return syscall.Sendmsg(ControlFD, b, oob, nil, 0)
}

// initMain builds the sandbox as the node's config says, starts the harness in it, and stays
// PID 1: it reaps, passes SIGTERM on to every process of the session, and exits when the
// harness does, which ends every other process of the namespace with it.
func initMain() int {
	syscall.CloseOnExec(ControlFD)
	buf := make([]byte, MaxMessage)
	oob := make([]byte, syscall.CmsgSpace(3*4))
	n, oobn, _, _, err := syscall.Recvmsg(ControlFD, buf, oob, 0)
	if err != nil || n <= 0 {
		fmt.Fprintln(os.Stderr, "oz0-sandbox-init: this is the init of oz0's session sandbox, run by the node, not a command")
		return 2
	}
	// The harness's stdin, stdout and stderr come with the config (the init was started before
	// its session): they become the init's own, which the harness inherits.
	if msgs, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for i := range msgs {
			fds, err := syscall.ParseUnixRights(&msgs[i])
			if err != nil || len(fds) != 3 {
				continue
			}
			for i, fd := range fds {
				syscall.Dup3(fd, i, 0)
				syscall.Close(fd)
			}
		}
	}
	var cfg Config
	if err := json.Unmarshal(buf[:n], &cfg); err != nil {
		reply(Reply{Error: "the sandbox's init got a config it cannot read: " + err.Error()})
		return 2
	}
	// Signals first, so that a SIGTERM from the node during the setup is not lost.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)

	listeners, err := setup(&cfg)
	if err != nil {
		reply(Reply{Error: err.Error()})
		return 1
	}
	if cfg.Probe {
		reply(Reply{Ready: true})
		return 0
	}
	// A session of its own (the node's SIGTERM reaches the session once, from here), with no
	// controlling terminal, as the init has none.
	sys := &syscall.SysProcAttr{Setsid: true}
	if cfg.UID >= 0 {
		sys.Credential = &syscall.Credential{Uid: uint32(cfg.UID), Gid: uint32(cfg.GID), Groups: []uint32{}}
	}
	// The harness gets its stdin, stdout and stderr and nothing else the init holds.
	if err := fds.CloseOnExecFrom(3); err != nil {
		reply(Reply{Error: "the sandbox's init cannot close the descriptors it inherited, which the harness would get: " + err.Error()})
		return 1
	}
	proc, err := os.StartProcess(cfg.Argv[0], cfg.Argv, &os.ProcAttr{
		Dir: cfg.Dir, Env: cfg.Env, Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}, Sys: sys,
	})
	if err != nil {
		reply(Reply{Error: execerr.Explain(cfg.Argv[0], "in the sandbox", err).Error(), Exec: true, Denied: errors.Is(err, syscall.EACCES)})
		return 1
	}
	harness := proc.Pid
	// The harness has its pipes; the init keeps none, so that the node sees them close when the
	// session's processes do.
	if null, err := syscall.Open("/dev/null", syscall.O_RDWR|syscall.O_CLOEXEC, 0); err == nil {
		for fd := 0; fd <= 2; fd++ {
			syscall.Dup3(null, fd, 0)
		}
		syscall.Close(null)
	}
	if err := reply(Reply{Ready: true, PID: harness}, listeners...); err != nil {
		return 1
	}
	for _, fd := range listeners {
		syscall.Close(fd)
	}

	go func() {
		for sig := range sigs {
			syscall.Kill(-1, sig.(syscall.Signal)) // every process of the namespace but this one
		}
	}()
	go func() {
		// The node holds the other end until it has the harness's exit: end of file means it
		// died (SIGKILL), and the session goes with it.
		b := make([]byte, 1)
		for {
			if n, err := syscall.Read(ControlFD, b); n <= 0 && err != syscall.EINTR {
				syscall.Exit(3)
			}
		}
	}()

	var status syscall.WaitStatus
	done := false
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil { // ECHILD: every process of the session is gone
			break
		}
		if pid == harness && !done {
			done, status = true, ws
			syscall.Kill(-1, syscall.SIGKILL) // what the harness left goes with it
		}
	}
	st := uint32(status)
	reply(Reply{Exit: &st})
	return 0
}

// setup builds the session's root and network and drops what the harness must not inherit; it
// returns the listening sockets of cfg.Listen.
func setup(cfg *Config) ([]int, error) {
	// Not dumpable: the harness, the same user, cannot trace the init (which can mount) nor
	// open its files in /proc.
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetDumpable, 0, 0, 0, 0, 0); errno != 0 {
		return nil, fmt.Errorf("cannot make the sandbox's init undumpable: %w", errno)
	}
	// Nothing mounted here reaches the host, and nothing the host mounts later reaches here.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return nil, fmt.Errorf("cannot make the session's mounts private: %w", err)
	}
	root := cfg.Root
	if err := syscall.Mount("oz0-session", root, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0755,size=1m"); err != nil {
		return nil, fmt.Errorf("cannot mount the session's root: %w", err)
	}
	targets := map[string]bool{}
	for _, o := range cfg.Ops {
		if err := apply(root, o); err != nil {
			return nil, err
		}
		targets[o.Dst] = true
	}
	if err := lockSubmounts(root, cfg.Ops, targets); err != nil {
		return nil, err
	}
	if err := syscall.Mount("", root, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV, ""); err != nil {
		return nil, fmt.Errorf("cannot make the session's root read-only: %w", err)
	}
	// pivot_root(".", ".") stacks the old root on the new one, and detaching it leaves nothing of
	// the host's tree in the session's mount namespace (see pivot_root(2)).
	if err := syscall.Chdir(root); err != nil {
		return nil, err
	}
	if err := syscall.PivotRoot(".", "."); err != nil {
		return nil, fmt.Errorf("cannot change the session's root: %w", err)
	}
	if err := syscall.Unmount(".", syscall.MNT_DETACH); err != nil {
		return nil, fmt.Errorf("cannot detach the host's root: %w", err)
	}
	if err := syscall.Chdir("/"); err != nil {
		return nil, err
	}
	_ = syscall.Sethostname([]byte("oz0-session"))

	var fds []int
	if cfg.Net {
		if err := loopbackUp(); err != nil {
			return nil, fmt.Errorf("cannot bring up the session's loopback: %w", err)
		}
		for _, addr := range cfg.Listen {
			fd, err := listen(addr)
			if err != nil {
				if strings.HasPrefix(addr, "[::1]") {
					continue // a kernel without IPv6: the session reaches the gateway on 127.0.0.1
				}
				for _, fd := range fds {
					syscall.Close(fd)
				}
				return nil, fmt.Errorf("cannot listen on %s for the gateway in the session's network: %w", addr, err)
			}
			fds = append(fds, fd)
		}
	}
	if err := dropPrivileges(); err != nil {
		return nil, err
	}
	return fds, nil
}

// apply does one step of building the root at root.
func apply(root string, o Op) error {
	dst := root + o.Dst // both absolute and clean: the node planned them
	fail := func(what string, err error) error {
		return fmt.Errorf("cannot %s %s in the sandbox: %w", what, o.Dst, err)
	}
	switch o.Kind {
	case OpSymlink:
		if err := os.MkdirAll(parentDir(dst), 0o755); err != nil {
			return fail("make", err)
		}
		if err := os.Symlink(o.Src, dst); err != nil && !errors.Is(err, os.ErrExist) {
			return fail("link", err)
		}
	case OpTmpfs, OpDevfs:
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return fail("make", err)
		}
		mode := "mode=1777"
		if o.Kind == OpDevfs {
			mode = "mode=0755"
		}
		if err := syscall.Mount("tmpfs", dst, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, mode); err != nil {
			return fail("mount a tmpfs on", err)
		}
	case OpProc:
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return fail("make", err)
		}
		if err := syscall.Mount("proc", dst, "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
			return fail("mount the session's /proc on", err)
		}
	case OpHide:
		fi, err := os.Lstat(dst)
		if err != nil {
			return fail("hide", err)
		}
		if fi.IsDir() {
			err = syscall.Mount("tmpfs", dst, "tmpfs", syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "mode=0000,size=4k")
		} else {
			err = bind("/dev/null", dst, syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC)
		}
		if err != nil {
			return fail("hide", err)
		}
	case OpRO, OpRW, OpDevice:
		fi, err := os.Stat(o.Src)
		if err != nil {
			if o.Optional {
				return nil
			}
			return fail("show", err)
		}
		if err := mountPoint(dst, fi.IsDir()); err != nil {
			return fail("make", err)
		}
		if err := bind(o.Src, dst, opFlags(o.Kind)); err != nil {
			return fail("bind", err)
		}
	default:
		return fmt.Errorf("the sandbox's init does not know the step %q", o.Kind)
	}
	return nil
}

// opFlags are the flags a bound path of kind gets, beyond those its host mount has.
func opFlags(kind string) uintptr {
	switch kind {
	case OpRO:
		return syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV
	case OpDevice:
		return syscall.MS_NOSUID | syscall.MS_NOEXEC
	}
	return syscall.MS_NOSUID | syscall.MS_NODEV
}

// mountPoint makes dst, a directory or an empty file, unless it is there.
func mountPoint(dst string, dir bool) error {
	if _, err := os.Lstat(dst); err == nil {
		return nil
	}
	if dir {
		return os.MkdirAll(dst, 0o755)
	}
	if err := os.MkdirAll(parentDir(dst), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// bind binds src (with what is mounted under it) on dst, then remounts dst with flags.
func bind(src, dst string, flags uintptr) error {
	if err := syscall.Mount(src, dst, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return err
	}
	return remount(dst, flags)
}

// remount adds flags to the mount on dst. In a user namespace a remount must keep what the host's
// mount locked (read-only, nosuid, nodev, noexec, the atime flags), so those are passed on.
func remount(dst string, flags uintptr) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dst, &st); err != nil {
		return err
	}
	keep := uintptr(st.Flags) & (syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC | stNoatime | stNodiratim | stRelatime)
	if keep&(stNoatime|stRelatime) == 0 {
		keep |= syscall.MS_STRICTATIME
	}
	return syscall.Mount("", dst, "", syscall.MS_BIND|syscall.MS_REMOUNT|flags|keep, "")
}

// lockSubmounts remounts what a bind brought along from under its source (a recursive bind is
// needed where the host has mounts below: /etc/resolv.conf in a container) with the flags of the
// step that brought it, so that nothing shown read-only has a writable part.
func lockSubmounts(root string, ops []Op, targets map[string]bool) error {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("cannot read the session's mounts: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMountPath(f[4])
		rel, ok := strings.CutPrefix(mp, root+"/")
		if !ok {
			continue
		}
		inside := "/" + rel
		if targets[inside] {
			continue // a step's own mount: already done
		}
		var owner *Op
		for i := range ops {
			o := &ops[i]
			if (o.Kind == OpRO || o.Kind == OpRW || o.Kind == OpDevice) && strings.HasPrefix(inside, o.Dst+"/") && (owner == nil || len(o.Dst) > len(owner.Dst)) {
				owner = o
			}
		}
		if owner == nil {
			continue
		}
		if err := remount(mp, opFlags(owner.Kind)); err != nil {
			return fmt.Errorf("cannot remount %s in the sandbox: %w", inside, err)
		}
	}
	return nil
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ifreq is struct ifreq for SIOCGIFFLAGS and SIOCSIFFLAGS: a name and the flags.
type ifreq struct {
	name  [syscall.IFNAMSIZ]byte
	flags uint16
	_     [22]byte
}

// loopbackUp brings up lo, down in a new network namespace.
func loopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	var ifr ifreq
	copy(ifr.name[:], "lo")
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCGIFFLAGS, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
		return errno
	}
	ifr.flags |= syscall.IFF_UP
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
		return errno
	}
	return nil
}

// listen returns a listening TCP socket on addr, close-on-exec, for the node to accept on: a
// loopback address as sandbox.ListenAddrs writes them, 127.x.y.z:port or [::1]:port.
func listen(addr string) (int, error) {
	family, sa, err := loopbackSockaddr(addr)
	if err != nil {
		return -1, err
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err == nil {
		if err = syscall.Bind(fd, sa); err == nil {
			if err = syscall.Listen(fd, syscall.SOMAXCONN); err == nil {
				return fd, nil
			}
		}
	}
	syscall.Close(fd)
	return -1, err
}

// dropPrivileges makes sure the harness, started from this thread, has no capability and cannot
// gain one: no new privileges (setuid files and file capabilities do nothing), an empty bounding
// set (a harness that runs as root in the namespace gets no capability at exec) and no ambient
// capabilities (those the init was given to build the sandbox).
func dropPrivileges() error {
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); errno != 0 {
		return fmt.Errorf("cannot set no_new_privs: %w", errno)
	}
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prCapAmbient, prCapAmbientClearAll, 0, 0, 0, 0); errno != 0 && errno != syscall.EINVAL {
		return fmt.Errorf("cannot clear the ambient capabilities: %w", errno)
	}
	for c := uintptr(0); ; c++ {
		if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, syscall.PR_CAPBSET_DROP, c, 0, 0, 0, 0); errno != 0 {
			if errno == syscall.EINVAL {
				break // past the last capability this kernel knows
			}
			return fmt.Errorf("cannot drop capability %d: %w", c, errno)
		}
	}
	return nil
}

// loopbackSockaddr reads 127.x.y.z:port or [::1]:port.
func loopbackSockaddr(addr string) (int, syscall.Sockaddr, error) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return 0, nil, fmt.Errorf("%q is not host:port", addr)
	}
	port, err := strconv.ParseUint(addr[i+1:], 10, 16)
	if err != nil {
		return 0, nil, fmt.Errorf("%q has no port", addr)
	}
	host := addr[:i]
	if host == "[::1]" {
		sa := &syscall.SockaddrInet6{Port: int(port)}
		sa.Addr[15] = 1
		return syscall.AF_INET6, sa, nil
	}
	parts := strings.Split(host, ".")
	sa := &syscall.SockaddrInet4{Port: int(port)}
	if len(parts) != 4 || parts[0] != "127" {
		return 0, nil, fmt.Errorf("%q is not a loopback address", addr)
	}
	for j, p := range parts {
		n, err := strconv.ParseUint(p, 10, 8)
		if err != nil {
			return 0, nil, fmt.Errorf("%q is not an IPv4 address", addr)
		}
		sa.Addr[j] = byte(n)
	}
	return syscall.AF_INET, sa, nil
}

// parentDir is the directory that holds the clean absolute path p.
func parentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}
