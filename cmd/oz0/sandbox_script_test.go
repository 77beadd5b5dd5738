package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// Commands for the sandbox's scripts (testdata/scripts/sandbox_*.txtar).
func init() {
	scriptCmds["unprivileged"] = cmdUnprivileged
	scriptCmds["waitprocs"] = cmdWaitProcs
	scriptConds["refusinguserns"] = func(string) (bool, error) { return refusingUserns(), nil }
}

// refusingUserns reports whether this machine lets a script make a user namespace that refuses
// user namespaces to what runs in it (its user.max_user_namespaces set to 0): where user
// namespaces are refused already (a container's seccomp profile, AppArmor's restriction), it
// cannot, and there is no standard sandbox to fall back from.
func refusingUserns() bool {
	return exec.Command("unshare", "--user", "--map-root-user", "sh", "-c", "echo 0 > /proc/sys/user/max_user_namespaces").Run() == nil
}

// scriptT is the key of the script's testscript.T in its Values.
type scriptT struct{}

// skipScript skips the script, saying why, as the builtin skip does before anything runs in the
// background.
func skipScript(ts *testscript.TestScript, why string) {
	ts.Value(scriptT{}).(testscript.T).Skip(why)
}

// nobody is the unprivileged user the scripts run oz0 as.
const nobody = "65534"

// cmdUnprivileged: unprivileged [TIER] makes every later `exec oz0` of the script run as an
// unprivileged user, as plugin authors run it: when the test runs as root (as CI does), as nobody
// (setpriv), with $WORK given to nobody and its parents made passable; $NODE_UID is that user's
// id. With TIER, it skips the script, saying why, when that user cannot have the sandbox tier
// here (oz0 doctor says).
func cmdUnprivileged(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) > 1 {
		ts.Fatalf("usage: unprivileged [TIER]")
	}
	work := ts.Getenv("WORK")
	bin, uid, err := unprivilegedOz0(work)
	if errors.Is(err, errNoSetpriv) {
		skipScript(ts, err.Error())
	}
	ts.Check(err)
	ts.Setenv("NODE_UID", uid)
	ts.Setenv("PATH", bin+string(os.PathListSeparator)+ts.Getenv("PATH"))
	if len(args) == 0 {
		return
	}
	cmd := exec.Command(filepath.Join(bin, "oz0"), "doctor", "--json", "--plugin", work)
	cmd.Dir = work
	cmd.Env = []string{"PATH=" + ts.Getenv("PATH"), "HOME=" + ts.Getenv("HOME"), "TMPDIR=" + ts.Getenv("TMPDIR")}
	out, _ := cmd.Output() // a failing check (python, the plugin) exits 1: only the sandbox's matters
	var checks []struct{ Check, Level, Detail string }
	_ = json.Unmarshal(out, &checks) // what is not an array of checks says nothing of the sandbox
	for _, r := range checks {
		if r.Check != "sandbox" {
			continue
		}
		if r.Level != "ok" && (args[0] == "strict" || strings.HasPrefix(r.Detail, "sessions run without a sandbox")) {
			skipScript(ts, "the kernel refuses the "+args[0]+" sandbox to an unprivileged user here: "+r.Detail)
		}
		return
	}
	ts.Fatalf("unprivileged: oz0 doctor said nothing of the sandbox:\n%s", out)
}

var errNoSetpriv = errors.New("setpriv (util-linux) is needed to run oz0 as an unprivileged user")

// unprivilegedOz0 makes a directory under work holding an oz0 that runs as an unprivileged user:
// when the test runs as root, nobody (setpriv), with work given to nobody and its parents made
// passable; else the test's own user. It returns the directory and that user's id.
func unprivilegedOz0(work string) (bin, uid string, err error) {
	real := filepath.Join(work, ".unprivileged", "oz0")
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		return "", "", err
	}
	self, err := os.Executable() // this test binary, which runs as oz0 under that name
	if err != nil {
		return "", "", err
	}
	if err := os.Link(self, real); err != nil {
		if err := copyFile(self, real); err != nil {
			return "", "", err
		}
	}
	wrapper := fmt.Sprintf("#!/bin/sh\nexec %q \"$@\"\n", real)
	uid = strconv.Itoa(os.Getuid())
	if os.Geteuid() == 0 {
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			return "", "", errNoSetpriv
		}
		wrapper = fmt.Sprintf("#!/bin/sh\nexec %q --reuid=%s --regid=%s --clear-groups %q \"$@\"\n", setpriv, nobody, nobody, real)
		// nobody owns work and can pass through its parents (the test's temporary directories).
		if err := exec.Command("chown", "-R", nobody+":"+nobody, work).Run(); err != nil {
			return "", "", err
		}
		for d := filepath.Dir(work); d != "/" && d != "."; d = filepath.Dir(d) {
			if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o001 == 0 {
				if err := os.Chmod(d, fi.Mode().Perm()|0o001); err != nil {
					return "", "", err
				}
			}
		}
		uid = nobody
	}
	bin = filepath.Join(work, ".unprivileged", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return "", "", err
	}
	return bin, uid, os.WriteFile(filepath.Join(bin, "oz0"), []byte(wrapper), 0o755)
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// cmdWaitProcs: waitprocs [-atleast] [-user UID] N REGEXP [TIMEOUT] polls until exactly N live
// processes (at least N with -atleast; of user UID with -user) have a command line (its
// arguments joined by spaces) that REGEXP matches; default timeout 20s. Linux only: it reads
// /proc.
func cmdWaitProcs(ts *testscript.TestScript, neg bool, args []string) {
	atLeast, user, exeUnder := false, "", ""
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch {
		case args[0] == "-atleast":
			atLeast, args = true, args[1:]
		case args[0] == "-mine":
			// Only the script's own oz0 (unprivileged's copy, under $WORK) and what it re-executed
			// (the sandbox's init): the other scripts running in parallel have theirs.
			exeUnder, args = ts.Getenv("WORK")+"/", args[1:]
		case args[0] == "-user" && len(args) > 1:
			user, args = args[1], args[2:]
		default:
			ts.Fatalf("waitprocs: unknown flag %s", args[0])
		}
	}
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: waitprocs [-atleast] [-mine] [-user UID] N REGEXP [TIMEOUT]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	timeout := durationArg(ts, args, 2, 20*time.Second)
	deadline := time.Now().Add(timeout)
	for {
		got := matchingProcs(re, user, exeUnder)
		if len(got) == want || (atLeast && len(got) >= want) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitprocs: %d processes match %q after %s, want %d: %s", len(got), args[1], timeout, want, strings.Join(got, "; "))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// matchingProcs lists the live (not zombie) processes whose command line re matches, of user
// uid unless it is "", whose executable lies under exeUnder unless it is "".
func matchingProcs(re *regexp.Regexp, uid, exeUnder string) []string {
	entries, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		line := string(bytes.TrimRight(bytes.ReplaceAll(b, []byte{0}, []byte{' '}), " "))
		if !re.MatchString(line) || !liveProc(e.Name(), uid) {
			continue
		}
		if exe, _ := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); exeUnder != "" && !strings.HasPrefix(exe, exeUnder) {
			continue
		}
		found = append(found, e.Name()+" "+line)
	}
	return found
}

// liveProc reports whether /proc/PID/status says the process is not a zombie, and (unless uid
// is "") that its real user is uid.
func liveProc(pid, uid string) bool {
	f, err := os.Open(filepath.Join("/proc", pid, "status"))
	if err != nil {
		return false
	}
	defer f.Close()
	live, ofUser := false, uid == ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if state, ok := strings.CutPrefix(sc.Text(), "State:"); ok {
			state = strings.TrimSpace(state)
			live = !strings.HasPrefix(state, "Z") && !strings.HasPrefix(state, "X")
		}
		if ids, ok := strings.CutPrefix(sc.Text(), "Uid:"); ok && uid != "" {
			f := strings.Fields(ids)
			ofUser = len(f) > 0 && f[0] == uid
		}
	}
	return live && ofUser
}
