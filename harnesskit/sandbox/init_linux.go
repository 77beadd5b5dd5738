//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The init is oz0 itself, re-executed by the node in the session's new namespaces (see
// Process). It runs from this package's init function rather than from main: Go initialises a
// program's packages in import-path order once their imports are done, so this one, which
// imports only the standard library and x/sys, runs before the heavy ones of oz0 (the JSON
// Schema compiler, protobuf, SQLite), which would cost every session's start some milliseconds.
// A binary that links this package is its own init: oz0, and the test binaries.
func init() {
	if len(os.Args) == 0 || os.Args[0] != initArg0 {
		return
	}
	// Every step that sets what the harness inherits (no new privileges, no capabilities) is
	// per thread, and the harness is forked from the thread that starts it: keep to one.
	runtime.LockOSThread()
	os.Exit(initMain())
}

// initMain builds the sandbox as the node's config says, starts the harness in it, and stays
// PID 1: it reaps, passes SIGTERM on to every process of the session, and exits when the
// harness does, which ends every other process of the namespace with it.
func initMain() int {
	f := os.NewFile(3, "control")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "oz0-sandbox-init: this is the init of oz0's session sandbox, run by the node, not a command")
		return 2
	}
	ctl := c.(*net.UnixConn)
	reply := func(r initReply, fds ...int) error {
		b, _ := json.Marshal(r)
		var oob []byte
		if len(fds) > 0 {
			oob = unix.UnixRights(fds...)
		}
		_, _, err := ctl.WriteMsgUnix(b, oob, nil)
		return err
	}
	buf := make([]byte, maxMessage)
	n, err := ctl.Read(buf)
	if err != nil {
		return 2
	}
	var cfg initConfig
	if err := json.Unmarshal(buf[:n], &cfg); err != nil {
		reply(initReply{Error: "the sandbox's init got a config it cannot read: " + err.Error()})
		return 2
	}
	// Signals first, so that a SIGTERM from the node during the setup is not lost.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)

	listeners, err := setup(&cfg)
	if err != nil {
		reply(initReply{Error: err.Error()})
		return 1
	}
	if cfg.Probe {
		reply(initReply{Ready: true})
		return 0
	}
	cmd := &exec.Cmd{
		Path: cfg.Argv[0], Args: cfg.Argv, Env: cfg.Env, Dir: cfg.Dir,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		// A process group of its own, so that the node's SIGTERM to the init's group reaches the
		// session's processes once, from here.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if cfg.UID >= 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(cfg.UID), Gid: uint32(cfg.GID), Groups: []uint32{}}
	}
	if err := cmd.Start(); err != nil {
		reply(initReply{Error: fmt.Sprintf("cannot start the harness %s in the sandbox: %v", cfg.Argv[0], err)})
		return 1
	}
	harness := cmd.Process.Pid
	// The harness has its pipes; the init keeps none, so that the node sees them close when the
	// session's processes do.
	if null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0); err == nil {
		for fd := 0; fd <= 2; fd++ {
			unix.Dup3(null, fd, 0)
		}
		unix.Close(null)
	}
	var fds []int
	for _, l := range listeners {
		fds = append(fds, l)
	}
	if err := reply(initReply{Ready: true, PID: harness}, fds...); err != nil {
		return 1
	}
	for _, fd := range fds {
		unix.Close(fd)
	}

	go func() {
		for sig := range sigs {
			unix.Kill(-1, sig.(syscall.Signal)) // every process of the namespace but this one
		}
	}()
	go func() {
		// The node holds the other end until it has the harness's exit: end of file means it
		// died (SIGKILL), and the session goes with it.
		b := make([]byte, 1)
		for {
			if _, err := ctl.Read(b); err != nil {
				os.Exit(3)
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
			unix.Kill(-1, syscall.SIGKILL) // what the harness left goes with it
		}
	}
	st := uint32(status)
	reply(initReply{Exit: &st})
	return 0
}

// setup builds the session's root and network and drops what the harness must not inherit; it
// returns the listening sockets of cfg.Listen.
func setup(cfg *initConfig) ([]int, error) {
	// Nothing mounted here reaches the host, and nothing the host mounts later reaches here.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, fmt.Errorf("cannot make the session's mounts private: %w", err)
	}
	root := cfg.Root
	if err := unix.Mount("oz0-session", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m"); err != nil {
		return nil, fmt.Errorf("cannot mount the session's root: %w", err)
	}
	targets := map[string]op{}
	for _, o := range cfg.Ops {
		if err := apply(root, o); err != nil {
			return nil, err
		}
		targets[o.Dst] = o
	}
	if err := lockSubmounts(root, cfg.Ops, targets); err != nil {
		return nil, err
	}
	if err := unix.Mount("", root, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return nil, fmt.Errorf("cannot make the session's root read-only: %w", err)
	}
	// pivot_root(".", ".") stacks the old root on the new one, and detaching it leaves nothing of
	// the host's tree in the session's mount namespace (see pivot_root(2)).
	if err := unix.Chdir(root); err != nil {
		return nil, err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return nil, fmt.Errorf("cannot change the session's root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return nil, fmt.Errorf("cannot detach the host's root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return nil, err
	}
	_ = unix.Sethostname([]byte("oz0-session"))

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
func apply(root string, o op) error {
	dst := filepath.Join(root, o.Dst)
	fail := func(what string, err error) error {
		return fmt.Errorf("cannot %s %s in the sandbox: %w", what, o.Dst, err)
	}
	switch o.Kind {
	case opDir:
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return fail("make", err)
		}
	case opSymlink:
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fail("make", err)
		}
		if err := os.Symlink(o.Src, dst); err != nil && !errors.Is(err, os.ErrExist) {
			return fail("link", err)
		}
	case opTmpfs, opDevfs:
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return fail("make", err)
		}
		mode := "mode=1777"
		if o.Kind == opDevfs {
			mode = "mode=0755"
		}
		if err := unix.Mount("tmpfs", dst, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, mode); err != nil {
			return fail("mount a tmpfs on", err)
		}
	case opProc:
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return fail("make", err)
		}
		if err := unix.Mount("proc", dst, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fail("mount the session's /proc on", err)
		}
	case opHide:
		fi, err := os.Lstat(dst)
		if err != nil {
			return fail("hide", err)
		}
		if fi.IsDir() {
			err = unix.Mount("tmpfs", dst, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0000,size=4k")
		} else {
			err = bind("/dev/null", dst, unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC)
		}
		if err != nil {
			return fail("hide", err)
		}
	case opRO, opRW, opDevice:
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
	case opRO:
		return unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV
	case opDevice:
		return unix.MS_NOSUID | unix.MS_NOEXEC
	}
	return unix.MS_NOSUID | unix.MS_NODEV
}

// mountPoint makes dst, a directory or an empty file, unless it is there.
func mountPoint(dst string, dir bool) error {
	if _, err := os.Lstat(dst); err == nil {
		return nil
	}
	if dir {
		return os.MkdirAll(dst, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
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
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	return remount(dst, flags)
}

// remount adds flags to the mount on dst. In a user namespace a remount must keep what the host's
// mount locked (read-only, nosuid, nodev, noexec, the atime flags), so those are passed on.
func remount(dst string, flags uintptr) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dst, &st); err != nil {
		return err
	}
	keep := uintptr(st.Flags) & (unix.ST_RDONLY | unix.ST_NOSUID | unix.ST_NODEV | unix.ST_NOEXEC | unix.ST_NOATIME | unix.ST_NODIRATIME | unix.ST_RELATIME)
	if keep&(unix.ST_NOATIME|unix.ST_RELATIME) == 0 {
		keep |= unix.MS_STRICTATIME
	}
	return unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|flags|keep, "")
}

// lockSubmounts remounts what a bind brought along from under its source (a recursive bind is
// needed where the host has mounts below: /etc/resolv.conf in a container) with the flags of the
// step that brought it, so that nothing shown read-only has a writable part.
func lockSubmounts(root string, ops []op, targets map[string]op) error {
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
		if _, ok := targets[inside]; ok {
			continue // a step's own mount: already done
		}
		var owner *op
		for i := range ops {
			o := &ops[i]
			if (o.Kind == opRO || o.Kind == opRW || o.Kind == opDevice) && strings.HasPrefix(inside, o.Dst+"/") && (owner == nil || len(o.Dst) > len(owner.Dst)) {
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

// loopbackUp brings up lo, down in a new network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// listen returns a listening TCP socket on addr, close-on-exec, for the node to accept on.
func listen(addr string) (int, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return -1, err
	}
	defer l.Close()
	rc, err := l.(*net.TCPListener).SyscallConn()
	if err != nil {
		return -1, err
	}
	fd, dupErr := -1, error(nil)
	if err := rc.Control(func(s uintptr) { fd, dupErr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 3) }); err != nil {
		return -1, err
	}
	return fd, dupErr
}

// dropPrivileges makes sure the harness, started from this thread, has no capability and cannot
// gain one: no new privileges (setuid files and file capabilities do nothing), an empty bounding
// set (a harness that runs as root in the namespace gets no capability at exec) and no ambient
// capabilities (those the init was given to build the sandbox).
func dropPrivileges() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("cannot set no_new_privs: %w", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("cannot clear the ambient capabilities: %w", err)
	}
	for c := 0; ; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if errors.Is(err, unix.EINVAL) {
				break // past the last capability this kernel knows
			}
			return fmt.Errorf("cannot drop capability %d: %w", c, err)
		}
	}
	return nil
}
