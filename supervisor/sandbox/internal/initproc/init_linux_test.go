//go:build linux

package initproc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// These tests run the init as the node does (sandbox.Process): this test binary re-executed as
// Arg0, which the package's init function turns into the session's init before any test runs,
// in new user, mount, PID, IPC and UTS namespaces (network too, when asked), its control socket
// on fd 3. What the init builds is then looked at from inside, by the harness it starts.

// replyTimeout bounds every wait for the init: a test that would hang fails instead.
const replyTimeout = 30 * time.Second

// testInit is one init started by a test, waiting for its config.
type testInit struct {
	t      *testing.T
	cmd    *exec.Cmd
	ctl    *net.UnixConn
	stderr bytes.Buffer // the init's own, before it takes the harness's
}

// initOpts are how an init is started.
type initOpts struct {
	net   bool       // a network namespace of its own
	extra []*os.File // inherited after the control socket: fd 4 on
	ids   bool       // map nobody (65534) too, for a harness run as nobody; needs root
}

// startInit starts an init the way the node does.
func startInit(t *testing.T, o initOpts) *testInit {
	t.Helper()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	mine := os.NewFile(uintptr(pair[0]), "control")
	c, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		t.Fatal(err)
	}
	theirs := os.NewFile(uintptr(pair[1]), "control")
	defer theirs.Close()
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS)
	if o.net {
		flags |= unix.CLONE_NEWNET
	}
	uid, gid := os.Geteuid(), os.Getegid()
	uids := []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	gids := []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	var ambient []uintptr
	if o.ids {
		if uid != 0 {
			t.Fatal("mapping nobody needs root")
		}
		uids = append(uids, syscall.SysProcIDMap{ContainerID: 65534, HostID: 65534, Size: 1})
		gids = append(gids, syscall.SysProcIDMap{ContainerID: 65534, HostID: 65534, Size: 1})
	}
	if uid != 0 {
		// As the node gives them: what the init needs to build the sandbox, dropped before the
		// harness starts.
		ambient = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP}
	}
	in := &testInit{t: t, ctl: c.(*net.UnixConn)}
	in.cmd = &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{Arg0},
		Env:        []string{},
		Dir:        "/",
		Stderr:     &in.stderr,
		ExtraFiles: append([]*os.File{theirs}, o.extra...),
		SysProcAttr: &syscall.SysProcAttr{
			Setsid:                     true,
			Pdeathsig:                  syscall.SIGKILL,
			Cloneflags:                 flags,
			UidMappings:                uids,
			GidMappings:                gids,
			GidMappingsEnableSetgroups: o.ids,
			AmbientCaps:                ambient,
		},
	}
	if err := in.cmd.Start(); err != nil {
		c.Close()
		t.Fatalf("cannot start the init in new namespaces: %v", err)
	}
	t.Cleanup(func() {
		in.cmd.Process.Kill()
		in.cmd.Wait()
		in.ctl.Close()
	})
	return in
}

// harness is the stdin, stdout and stderr the init gets with its config, and what came out.
type harness struct {
	files          [3]*os.File // the init's ends
	stdout, stderr chan string // everything written, once both writers are gone
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{stdout: make(chan string, 1), stderr: make(chan string, 1)}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	inW.Close()
	h.files[0] = inR
	for i, ch := range []chan string{h.stdout, h.stderr} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		h.files[i+1] = w
		go func() {
			b, _ := io.ReadAll(r)
			r.Close()
			ch <- string(b)
		}()
	}
	return h
}

// wait returns what the harness wrote on stdout and stderr.
func (h *harness) wait(t *testing.T) (stdout, stderr string) {
	t.Helper()
	for _, ch := range []chan string{h.stdout, h.stderr} {
		select {
		case s := <-ch:
			if ch == h.stdout {
				stdout = s
			} else {
				stderr = s
			}
		case <-time.After(replyTimeout):
			t.Fatal("the harness's output did not end")
		}
	}
	return stdout, stderr
}

// configure sends the config, with the harness's stdio when h is not nil, and returns the init's
// first answer and the descriptors that came with it.
func (in *testInit) configure(cfg Config, h *harness) (Reply, []int) {
	in.t.Helper()
	b, err := json.Marshal(cfg)
	if err != nil {
		in.t.Fatal(err)
	}
	var oob []byte
	if h != nil {
		oob = unix.UnixRights(int(h.files[0].Fd()), int(h.files[1].Fd()), int(h.files[2].Fd()))
	}
	return in.send(b, oob)
}

// send sends one message and reads the init's answer.
func (in *testInit) send(b, oob []byte) (Reply, []int) {
	in.t.Helper()
	if _, _, err := in.ctl.WriteMsgUnix(b, oob, nil); err != nil {
		in.t.Fatal(err)
	}
	return in.read()
}

// read reads one of the init's messages.
func (in *testInit) read() (Reply, []int) {
	in.t.Helper()
	in.ctl.SetReadDeadline(time.Now().Add(replyTimeout))
	buf := make([]byte, MaxMessage)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, _, _, err := in.ctl.ReadMsgUnix(buf, oob)
	if err != nil {
		in.t.Fatalf("no answer from the init: %v (its stderr: %q)", err, in.stderr.String())
	}
	var fds []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for i := range msgs {
			got, _ := unix.ParseUnixRights(&msgs[i])
			fds = append(fds, got...)
		}
	}
	var r Reply
	if err := json.Unmarshal(buf[:n], &r); err != nil {
		in.t.Fatalf("the init answered %q: %v", buf[:n], err)
	}
	return r, fds
}

// exitCode waits for the init and returns its exit code.
func (in *testInit) exitCode() int {
	in.t.Helper()
	done := make(chan error, 1)
	go func() { done <- in.cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			in.t.Fatal(err)
		}
		return in.cmd.ProcessState.ExitCode()
	case <-time.After(replyTimeout):
		in.t.Fatal("the init did not exit")
		return -1
	}
}

// systemOps show the host's system directories read-only, as the sandbox's plan does, so that
// /bin/sh runs.
func systemOps(t *testing.T) []Op {
	t.Helper()
	var ops []Op
	for _, d := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
			continue
		case fi.Mode()&os.ModeSymlink != 0:
			to, err := os.Readlink(d)
			if err != nil {
				t.Fatal(err)
			}
			ops = append(ops, Op{Kind: OpSymlink, Src: to, Dst: d})
		case fi.IsDir():
			ops = append(ops, Op{Kind: OpRO, Src: d, Dst: d})
		}
	}
	return ops
}

// newRoot is a directory for the session's root.
func newRoot(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// Run by hand, the init says what it is and exits 2.
func TestNotACommand(t *testing.T) {
	var stderr bytes.Buffer
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{Arg0}, Stderr: &stderr}
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want 2", err)
	}
	if !strings.Contains(stderr.String(), "run by the node, not a command") {
		t.Errorf("stderr %q", stderr.String())
	}
}

// A config the init cannot read is refused with an error, and nothing is built.
func TestUnreadableConfig(t *testing.T) {
	in := startInit(t, initOpts{})
	r, _ := in.send([]byte("{not json"), nil)
	if r.Ready || !strings.Contains(r.Error, "the sandbox's init got a config it cannot read") {
		t.Errorf("reply %+v", r)
	}
	if code := in.exitCode(); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
}

// Each step that cannot be done stops the build with an error that names it; nothing runs.
// Probe configs: the init builds the root, says so, and exits.
func TestSetup(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, []byte("x"), 0o644)
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		name string
		cfg  func(root string) Config
		err  string // a part of the error; "" when the build succeeds
	}{
		{name: "every kind of step", cfg: func(root string) Config {
			return Config{Root: root, Ops: append(systemOps(t),
				Op{Kind: OpDevfs, Dst: "/dev"}, Op{Kind: OpDevice, Src: "/dev/null", Dst: "/dev/null"},
				Op{Kind: OpTmpfs, Dst: "/tmp"}, Op{Kind: OpProc, Dst: "/proc"},
				Op{Kind: OpRW, Src: filepath.Dir(file), Dst: "/work"}, Op{Kind: OpHide, Dst: "/work/file"},
			)}
		}},
		{name: "an optional source that is gone", cfg: func(root string) Config {
			return Config{Root: root, Ops: []Op{{Kind: OpRO, Src: missing, Dst: "/opt/x", Optional: true}}}
		}},
		{name: "a source that is gone", err: "cannot show /opt/x in the sandbox", cfg: func(root string) Config {
			return Config{Root: root, Ops: []Op{{Kind: OpRO, Src: missing, Dst: "/opt/x"}}}
		}},
		{name: "a step the init does not know", err: `the sandbox's init does not know the step "chmod"`, cfg: func(root string) Config {
			return Config{Root: root, Ops: []Op{{Kind: "chmod", Dst: "/x"}}}
		}},
		{name: "hiding what is not there", err: "cannot hide /nothing in the sandbox", cfg: func(root string) Config {
			return Config{Root: root, Ops: []Op{{Kind: OpHide, Dst: "/nothing"}}}
		}},
		{name: "a root that is not a directory", err: "cannot mount the session's root", cfg: func(string) Config {
			return Config{Root: file}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg(newRoot(t))
			cfg.UID, cfg.GID, cfg.Probe = -1, -1, true
			in := startInit(t, initOpts{})
			r, _ := in.configure(cfg, nil)
			code := in.exitCode()
			if tc.err == "" {
				if !r.Ready || r.Error != "" || code != 0 {
					t.Errorf("reply %+v, exit %d; want ready and 0", r, code)
				}
				return
			}
			if r.Ready || r.Exec || !strings.Contains(r.Error, tc.err) || code != 1 {
				t.Errorf("reply %+v, exit %d; want an error with %q and 1", r, code, tc.err)
			}
		})
	}
}

// The root the init builds, as the harness sees it: each check is a shell command and what it
// must print.
func TestRoot(t *testing.T) {
	host := t.TempDir()
	os.Chmod(host, 0o755)
	for _, d := range []string{"ro/sub", "rw", "hidden", "marker"} {
		os.MkdirAll(filepath.Join(host, d), 0o755)
	}
	os.WriteFile(filepath.Join(host, "ro", "file"), []byte("shown\n"), 0o644)
	os.WriteFile(filepath.Join(host, "hidden", "secret"), []byte("s3cret\n"), 0o644)
	os.WriteFile(filepath.Join(host, "rw", "secret.json"), []byte("s3cret\n"), 0o644)
	root := newRoot(t)
	ops := append(systemOps(t),
		Op{Kind: OpDevfs, Dst: "/dev"},
		Op{Kind: OpDevice, Src: "/dev/null", Dst: "/dev/null"},
		Op{Kind: OpTmpfs, Dst: "/tmp"},
		Op{Kind: OpProc, Dst: "/proc"},
		Op{Kind: OpRO, Src: filepath.Join(host, "ro"), Dst: "/ro dir"},
		Op{Kind: OpRW, Src: filepath.Join(host, "rw"), Dst: "/rw"},
		Op{Kind: OpRO, Src: filepath.Join(host, "hidden"), Dst: "/plugin"},
		Op{Kind: OpHide, Dst: "/plugin"},
		Op{Kind: OpHide, Dst: "/rw/secret.json"},
		Op{Kind: OpSymlink, Src: "rw", Dst: "/link"},
		// A writable mount inside the root, then a read-only step whose source holds it: the
		// mount comes along with the recursive bind and must be made read-only too.
		Op{Kind: OpTmpfs, Dst: "/stage/sub"},
		Op{Kind: OpRO, Src: root + "/stage", Dst: "/locked dir"}, // mountinfo escapes the space
	)
	checks := []struct{ name, cmd, want string }{
		{name: "read-only shows", cmd: `cat "/ro dir/file"`, want: "shown"},
		{name: "read-only refuses writes", cmd: `touch "/ro dir/new" 2>/dev/null && echo wrote || echo refused`, want: "refused"},
		{name: "read-write takes writes", cmd: `echo x > /rw/new && cat /rw/new`, want: "x"},
		{name: "tmpfs is for everyone", cmd: `stat -c %a /tmp`, want: "1777"},
		{name: "dev is not writable by others", cmd: `stat -c %a /dev`, want: "755"},
		{name: "a device works", cmd: `echo x > /dev/null && echo ok`, want: "ok"},
		{name: "the root is read-only", cmd: `touch /new 2>/dev/null && echo wrote || echo refused`, want: "refused"},
		{name: "a hidden directory is empty", cmd: `ls -A /plugin | wc -l`, want: "0"},
		{name: "a hidden directory's file is not there", cmd: `cat /plugin/secret 2>/dev/null || echo refused`, want: "refused"},
		{name: "a hidden directory refuses writes", cmd: `touch /plugin/x 2>/dev/null && echo wrote || echo refused`, want: "refused"},
		{name: "a hidden file cannot be read", cmd: `cat /rw/secret.json 2>/dev/null && echo read || echo refused`, want: "refused"}, // /dev/null on a nodev mount
		{name: "a symbolic link", cmd: `readlink /link`, want: "rw"},
		{name: "a submount of a read-only step is read-only", cmd: `touch "/locked dir/sub/x" 2>/dev/null && echo wrote || echo refused`, want: "refused"},
		{name: "the submount's own step stays writable", cmd: `touch /stage/sub/x && echo wrote`, want: "wrote"},
		{name: "nothing of the host's tree", cmd: `test -e ` + filepath.Join(host, "marker") + ` && echo seen || echo gone`, want: "gone"},
		{name: "hostname", cmd: `cat /proc/sys/kernel/hostname`, want: "oz0-session"},
		{name: "the init is PID 1", cmd: `tr '\0' ' ' < /proc/1/cmdline`, want: Arg0},
		{name: "the init is not dumpable", cmd: `cat /proc/1/environ >/dev/null 2>&1 && echo read || echo refused`, want: "refused"},
		{name: "no capabilities", cmd: `grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status | cut -f2 | sort -u`, want: "0000000000000000"},
		{name: "no new privileges", cmd: `grep '^NoNewPrivs' /proc/self/status | cut -f2`, want: "1"},
		{name: "only stdin stdout stderr", cmd: `ls /proc/self/fd | tr '\n' ' '`, want: "0 1 2 3"},                                    // 3: ls's own listing
		{name: "a session of its own", cmd: `read pid comm state ppid pgrp sid rest < /proc/$$/stat; echo $((sid == $$))`, want: "1"}, // the session ID is the harness's PID
	}
	var script strings.Builder
	for _, c := range checks {
		fmt.Fprintf(&script, "echo '--- %s'\n%s\n", strings.ReplaceAll(c.name, "'", `'\''`), c.cmd)
	}
	// A descriptor the init inherits beyond its control socket: the harness must not get it.
	leak, err := os.Open(filepath.Join(host, "ro", "file"))
	if err != nil {
		t.Fatal(err)
	}
	defer leak.Close()
	in := startInit(t, initOpts{extra: []*os.File{leak}})
	h := newHarness(t)
	r, _ := in.configure(Config{Argv: []string{"/bin/sh", "-c", script.String()}, Env: []string{"PATH=/usr/bin:/bin"}, Dir: "/", Root: root, Ops: ops, UID: -1, GID: -1}, h)
	if !r.Ready || r.PID <= 1 {
		t.Fatalf("reply %+v (stderr of the init: %q)", r, in.stderr.String())
	}
	for _, f := range h.files {
		f.Close()
	}
	out, errOut := h.wait(t)
	got := map[string]string{}
	for _, part := range strings.Split(out, "--- ")[1:] {
		name, rest, _ := strings.Cut(part, "\n")
		got[name] = strings.TrimSpace(rest)
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if g, ok := got[c.name]; !ok || g != c.want {
				t.Errorf("%s printed %q, want %q (stderr: %s)", c.cmd, g, c.want, errOut)
			}
		})
	}
	if r, _ := in.read(); r.Exit == nil || syscall.WaitStatus(*r.Exit).ExitStatus() != 0 {
		t.Errorf("last reply %+v (status %#x), want the harness's exit 0", r, derefStatus(r.Exit))
	}
	if code := in.exitCode(); code != 0 {
		t.Errorf("the init exited %d", code)
	}
}

// runHarness starts cfg.Argv in a sandbox showing the system's directories, /dev/null and /proc,
// and returns the init, the harness's output and the init's first reply.
func runHarness(t *testing.T, o initOpts, cfg Config) (*testInit, *harness, Reply, []int) {
	t.Helper()
	in := startInit(t, o)
	h := newHarness(t)
	cfg.Root, cfg.Dir, cfg.Env = newRoot(t), "/", []string{"PATH=/usr/bin:/bin"}
	cfg.Ops = append(append(systemOps(t),
		Op{Kind: OpDevfs, Dst: "/dev"}, Op{Kind: OpDevice, Src: "/dev/null", Dst: "/dev/null"}, Op{Kind: OpProc, Dst: "/proc"}),
		cfg.Ops...)
	if cfg.UID == 0 && cfg.GID == 0 { // not set: the harness keeps the init's ids
		cfg.UID, cfg.GID = -1, -1
	}
	r, fds := in.configure(cfg, h)
	for _, f := range h.files {
		f.Close()
	}
	return in, h, r, fds
}

// The harness's exit status reaches the node, and the init ends with it.
func TestHarnessExit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		check  func(syscall.WaitStatus) bool
	}{
		{name: "success", script: "exit 0", check: func(ws syscall.WaitStatus) bool { return ws.Exited() && ws.ExitStatus() == 0 }},
		{name: "failure", script: "exit 7", check: func(ws syscall.WaitStatus) bool { return ws.Exited() && ws.ExitStatus() == 7 }},
		{name: "killed", script: "kill -KILL $$", check: func(ws syscall.WaitStatus) bool { return ws.Signaled() && ws.Signal() == syscall.SIGKILL }},
		// What the harness leaves behind goes when it exits: the init does not wait for it.
		{name: "left a child", script: "/bin/sleep 1000 & exit 3", check: func(ws syscall.WaitStatus) bool { return ws.Exited() && ws.ExitStatus() == 3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, h, r, _ := runHarness(t, initOpts{}, Config{Argv: []string{"/bin/sh", "-c", tc.script}})
			if !r.Ready {
				t.Fatalf("reply %+v", r)
			}
			h.wait(t)
			r, _ = in.read()
			if r.Exit == nil || !tc.check(syscall.WaitStatus(*r.Exit)) {
				t.Errorf("reply %+v, status %#x", r, derefStatus(r.Exit))
			}
			if code := in.exitCode(); code != 0 {
				t.Errorf("the init exited %d", code)
			}
		})
	}
}

func derefStatus(p *uint32) uint32 {
	if p == nil {
		return 0
	}
	return *p
}

// A SIGTERM to the init reaches every process of the session.
func TestSignalPassedOn(t *testing.T) {
	in, h, r, _ := runHarness(t, initOpts{}, Config{Argv: []string{"/bin/sleep", "1000"}})
	if !r.Ready {
		t.Fatalf("reply %+v", r)
	}
	if err := in.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	h.wait(t)
	r, _ = in.read()
	if r.Exit == nil || !syscall.WaitStatus(*r.Exit).Signaled() || syscall.WaitStatus(*r.Exit).Signal() != syscall.SIGTERM {
		t.Errorf("reply %+v (status %#x), want the harness killed by SIGTERM", r, derefStatus(r.Exit))
	}
	if code := in.exitCode(); code != 0 {
		t.Errorf("the init exited %d", code)
	}
}

// When the node goes (its end of the control socket closes), the init exits 3, and the session
// with it.
func TestNodeGone(t *testing.T) {
	in, h, r, _ := runHarness(t, initOpts{}, Config{Argv: []string{"/bin/sleep", "1000"}})
	if !r.Ready {
		t.Fatalf("reply %+v", r)
	}
	in.ctl.Close()
	if code := in.exitCode(); code != 3 {
		t.Errorf("the init exited %d, want 3", code)
	}
	h.wait(t) // the harness is gone: its stdout and stderr closed
}

// A harness that cannot be started is an error of its exec, after the sandbox was built.
func TestExecFails(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "not-executable"), []byte("#!/bin/sh\n"), 0o644)
	for _, tc := range []struct {
		name   string
		argv   string
		denied bool
		err    string
	}{
		{name: "no such program", argv: "/nowhere/agent", err: "/nowhere/agent"},
		{name: "not executable", argv: "/plugin/not-executable", denied: true, err: "/plugin/not-executable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, h, r, _ := runHarness(t, initOpts{}, Config{Argv: []string{tc.argv}, Ops: []Op{{Kind: OpRO, Src: dir, Dst: "/plugin"}}})
			if r.Ready || !r.Exec || r.Denied != tc.denied || !strings.Contains(r.Error, tc.err) {
				t.Errorf("reply %+v; want an exec error with %q, denied %v", r, tc.err, tc.denied)
			}
			if code := in.exitCode(); code != 1 {
				t.Errorf("the init exited %d, want 1", code)
			}
			h.wait(t)
		})
	}
}

// A root node's harness runs as nobody, with no supplementary group.
func TestHarnessIDs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mapping nobody into the sandbox needs root")
	}
	in, h, r, _ := runHarness(t, initOpts{ids: true}, Config{Argv: []string{"/bin/sh", "-c", "id -u; id -g; id -G"}, UID: 65534, GID: 65534})
	if !r.Ready {
		t.Fatalf("reply %+v", r)
	}
	out, errOut := h.wait(t)
	if out != "65534\n65534\n65534\n" {
		t.Errorf("the harness's ids: %q (stderr %q)", out, errOut)
	}
	in.read()
	in.exitCode()
}

// In a network of its own, the init brings up loopback and listens there for the gateway: the
// node gets the sockets, and the harness reaches it through them.
func TestListen(t *testing.T) {
	const port = "7011"
	in, h, r, fds := runHarness(t, initOpts{net: true}, Config{
		Argv: []string{"/bin/bash", "-c", "echo hi >/dev/tcp/127.0.0.1/" + port},
		Net:  true, Listen: []string{"127.0.0.1:" + port, "[::1]:" + port},
	})
	if !r.Ready || len(fds) < 1 || len(fds) > 2 {
		t.Fatalf("reply %+v with %d descriptors", r, len(fds))
	}
	var lns []net.Listener
	for _, fd := range fds {
		f := os.NewFile(uintptr(fd), "gateway")
		l, err := net.FileListener(f)
		f.Close()
		if err != nil {
			t.Fatalf("descriptor %d is not a listening socket: %v", fd, err)
		}
		defer l.Close()
		lns = append(lns, l)
	}
	if a := lns[0].Addr().String(); a != "127.0.0.1:"+port {
		t.Errorf("the first socket listens on %s", a)
	}
	lns[0].(*net.TCPListener).SetDeadline(time.Now().Add(replyTimeout))
	c, err := lns[0].Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(replyTimeout))
	b, _ := io.ReadAll(c)
	if string(b) != "hi\n" {
		t.Errorf("read %q from the harness", b)
	}
	if _, errOut := h.wait(t); errOut != "" {
		t.Errorf("the harness's stderr: %s", errOut)
	}
	in.read()
	in.exitCode()
}

// An address that is not a loopback one is refused, and nothing runs.
func TestListenRefused(t *testing.T) {
	in := startInit(t, initOpts{net: true})
	r, fds := in.configure(Config{Root: newRoot(t), UID: -1, GID: -1, Probe: true, Net: true, Listen: []string{"10.0.0.1:80"}}, nil)
	if r.Ready || len(fds) != 0 || !strings.Contains(r.Error, "cannot listen on 10.0.0.1:80 for the gateway in the session's network: \"10.0.0.1:80\" is not a loopback address") {
		t.Errorf("reply %+v, %d descriptors", r, len(fds))
	}
	if code := in.exitCode(); code != 1 {
		t.Errorf("the init exited %d, want 1", code)
	}
}
