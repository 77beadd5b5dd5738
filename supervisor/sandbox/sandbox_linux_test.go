//go:build linux

package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// requireTier skips a test where the kernel refuses the tier, saying why.
func requireTier(t *testing.T, tier Tier) {
	t.Helper()
	if err := Check(tier); err != nil {
		t.Skipf("%v", err)
	}
}

// shell runs script with sh in a sandbox of tier over a plugin directory, and returns its
// stdout, stderr and error.
func shell(t *testing.T, tier Tier, plugin string, hide []string, script string) (string, string, error) {
	t.Helper()
	root := t.TempDir()
	work := filepath.Join(root, "work")
	state := filepath.Join(root, "state")
	box := filepath.Join(root, "sandbox")
	for _, d := range []string{work, state, box} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if uid, gid, chown := HarnessOwner(tier); chown && d != box {
			os.Chown(d, uid, gid)
		}
	}
	os.Chmod(root, 0o755)
	var stdout, stderr bytes.Buffer
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	inR, inW, _ := os.Pipe()
	inW.Close()
	cmd := &exec.Cmd{
		Path: "/bin/sh", Args: []string{"sh", "-c", script},
		Env: []string{"PATH=/usr/bin:/bin", "HOME=" + state}, Dir: work,
		Stdin: inR, Stdout: outW, Stderr: errW,
	}
	p, err := Prepare(cmd, Config{Tier: tier, Argv: cmd.Args, PluginDir: plugin, Writable: []string{work, state}, Hide: hide, Root: box})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	outW.Close()
	errW.Close()
	done := make(chan struct{})
	go func() { stdout.ReadFrom(outR); close(done) }()
	stderr.ReadFrom(errR)
	<-done
	werr := p.Cmd().Wait()
	st, ok := p.HarnessStatus()
	if werr != nil {
		return stdout.String(), stderr.String(), werr
	}
	if !ok {
		t.Fatalf("no exit status from the init")
	}
	if st.ExitStatus() != 0 {
		return stdout.String(), stderr.String(), &exec.ExitError{}
	}
	return stdout.String(), stderr.String(), nil
}

func TestStandardHidesAndShows(t *testing.T) {
	requireTier(t, Standard)
	parent := t.TempDir()
	os.Chmod(parent, 0o755)
	plugin := filepath.Join(parent, "plug")
	state := filepath.Join(plugin, ".oz0", "dev")
	os.MkdirAll(state, 0o755)
	os.WriteFile(filepath.Join(plugin, "harness.sh"), []byte("echo hi\n"), 0o644)
	os.WriteFile(filepath.Join(state, "secrets.json"), []byte(`{"K":"v"}`), 0o644)
	os.WriteFile(filepath.Join(parent, "other.txt"), []byte("other"), 0o644)
	home, _ := os.UserHomeDir()
	out, errOut, err := shell(t, Standard, plugin, []string{state}, `
set -u
echo "pid $$"
cat `+plugin+`/harness.sh
cat `+state+`/secrets.json 2>/dev/null && echo "READ SECRETS"
cat `+parent+`/other.txt 2>/dev/null && echo "READ OUTSIDE"
ls `+home+` 2>/dev/null | head -1 | grep . && echo "READ HOME"
touch `+plugin+`/new 2>/dev/null && echo "WROTE PLUGIN"
touch "$HOME/x" && echo "wrote state"
touch ./x && echo "wrote work"
touch /tmp/x && echo "wrote tmp"
touch /x 2>/dev/null && echo "WROTE ROOT"
ls /proc | grep -c '^[0-9]'
`)
	if err != nil {
		t.Fatalf("%v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	for _, want := range []string{"echo hi\n", "wrote state\n", "wrote work\n", "wrote tmp\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s\nstderr: %s", want, out, errOut)
		}
	}
	for _, bad := range []string{"READ", "WROTE"} {
		if strings.Contains(out, bad) {
			t.Errorf("stdout has %q:\n%s", bad, out)
		}
	}
}

// offer makes p the init the next session of its tier takes. An init another warm-up started
// (Check starts one, and so does each session's end, in the background) is discarded: the pool
// holds one.
func offer(p *Process) {
	ch, _ := warm.LoadOrStore(p.tier, make(chan *Process, 1))
	for {
		select {
		case ch.(chan *Process) <- p:
			return
		case other := <-ch.(chan *Process):
			other.discard()
		}
	}
}

// An init started ahead for the next session serves it; one that died meanwhile is replaced.
func TestInitStartedAhead(t *testing.T) {
	requireTier(t, Standard)
	waitWarm := func() *Process {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			if ch, ok := warm.Load(Standard); ok {
				select {
				case p := <-ch.(chan *Process):
					return p
				default:
				}
			}
			if time.Now().After(deadline) {
				t.Fatal("no init was started ahead after a session ended")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if out, _, err := shell(t, Standard, "", nil, "echo one"); err != nil || out != "one\n" {
		t.Fatalf("the first session: %q %v", out, err)
	}
	ahead := waitWarm()
	pid := ahead.Cmd().Process.Pid
	offer(ahead)
	if out, _, err := shell(t, Standard, "", nil, "echo two"); err != nil || out != "two\n" {
		t.Fatalf("the second session: %q %v", out, err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("the init started ahead (%d) is alive: it did not serve the second session", pid)
	}

	dead := waitWarm()
	dead.Cmd().Process.Kill()
	dead.Cmd().Wait()
	offer(dead)
	if out, _, err := shell(t, Standard, "", nil, "echo three"); err != nil || out != "three\n" {
		t.Fatalf("a session whose init started ahead had died: %q %v", out, err)
	}
}

// inheritable puts a descriptor on path at number fd, without close-on-exec, as a descriptor this
// process inherited would be; it is closed when the test ends.
func inheritable(t *testing.T, path string, fd int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Dup3(int(f.Fd()), fd, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
}

// The init marks what it inherited close-on-exec before it starts the harness, on its own: with
// the node's marking turned off, and an init started after the descriptor was opened, the
// harness still does not have it.
func TestInitPassesOnNoInheritedDescriptor(t *testing.T) {
	requireTier(t, Standard)
	secrets := filepath.Join(t.TempDir(), "secrets.json")
	os.WriteFile(secrets, []byte(`{"ANTHROPIC_API_KEY":"sk-tenant"}`), 0o600)
	const fd = 219
	inheritable(t, secrets, fd)
	// The session's init: started now, with the descriptor, the node's marking turned off.
	p, err := spawnMarking(Standard, func(int) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	offer(p)
	plugin := t.TempDir()
	os.Chmod(plugin, 0o755)
	out, errOut, err := shell(t, Standard, plugin, nil, `if [ -e /proc/self/fd/219 ]; then echo "has 219"; else echo "no 219"; fi`)
	if err != nil || out != "no 219\n" {
		t.Errorf("the harness: %q (%v; stderr %q), want no descriptor 219", out, err, errOut)
	}
}

// A tier told to keep no init ahead (a node whose sessions all fork from fork servers) lets go of
// the one that waits and starts none as a session ends; told to keep one again, it does.
func TestKeepSpare(t *testing.T) {
	requireTier(t, Standard)
	t.Cleanup(func() { KeepSpare(Standard, true) })
	warmUp(Standard)
	ch, _ := warm.Load(Standard)
	spares := ch.(chan *Process)
	if len(spares) != 1 {
		t.Fatalf("%d inits wait after a warm-up; want 1", len(spares))
	}
	p := <-spares
	offer(p)
	KeepSpare(Standard, false)
	if len(spares) != 0 {
		t.Fatal("the init that waited is kept by a tier told to keep none")
	}
	if p.Cmd().ProcessState == nil {
		t.Error("the init let go of was not ended")
	}
	warmUp(Standard) // as a session's end does
	if len(spares) != 0 {
		t.Fatal("an init was started ahead for a tier that keeps none")
	}
	if out, _, err := shell(t, Standard, "", nil, "echo one"); err != nil || out != "one\n" {
		t.Fatalf("a session of a tier that keeps no init ahead: %q %v", out, err)
	}
	KeepSpare(Standard, true)
	warmUp(Standard)
	if len(spares) != 1 {
		t.Fatalf("%d inits wait after a warm-up of a tier told to keep one again; want 1", len(spares))
	}
}
