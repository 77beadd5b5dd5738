package execerr

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestExplain(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, body, want string }{
		{"interp.sh", "#!/no/such/interpreter -x\necho hi\n", "interp.sh names the interpreter /no/such/interpreter on its #! line, which is not on this machine; install it, or correct the #! line"},
		{"crlf.sh", "#!/bin/sh\r\necho hi\r\n", `crlf.sh has Windows line ends: its #! line names the interpreter "/bin/sh\r", with the carriage return; save it with Unix line ends`},
		{"empty.sh", "#!\necho hi\n", "empty.sh has a #! line that names no interpreter"},
		{"noshebang.sh", "echo hi\n", "noshebang.sh has no #! line naming its interpreter: start it with one, such as #!/bin/sh"},
		{"noexec.sh", "#!/bin/sh\necho hi\n", "noexec.sh is not executable by this user: chmod +x " + filepath.Join(dir, "noexec.sh")},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name)
			mode := os.FileMode(0o755)
			if c.name == "noexec.sh" {
				mode = 0o644
			}
			if err := os.WriteFile(path, []byte(c.body), mode); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(path)
			err := cmd.Start()
			if err == nil {
				cmd.Wait()
				if os.Geteuid() == 0 && c.name == "noexec.sh" {
					return // root may run what no one may
				}
				t.Fatalf("%s started", c.name)
			}
			got := Explain(path, "on this machine", err)
			if !strings.HasSuffix(got.Error(), c.want) || !strings.HasPrefix(got.Error(), dir) {
				t.Errorf("%s: %q, want %q", c.name, got, c.want)
			}
			if strings.Contains(got.Error(), "fork/exec") {
				t.Errorf("%s: %q names Go's fork/exec", c.name, got)
			}
		})
	}
}

// A directory the session's user may not enter is named, with the mend; for nobody (a root
// node's sessions) the message says why nobody. As root, the check runs as nobody in a child
// process (this test binary again), as a root node's sandboxed session would.
func TestExplainDeniedDirectory(t *testing.T) {
	if os.Getenv("EXECERR_EXPLAIN") != "" {
		path := os.Getenv("EXECERR_EXPLAIN")
		err := exec.Command(path).Start()
		fmt.Print(Explain(path, "in the sandbox", err))
		os.Exit(0)
	}
	base := t.TempDir()
	os.Chmod(filepath.Dir(base), 0o755) // t.TempDir's parent is the test's own, 0700
	os.Chmod(base, 0o755)
	closed := filepath.Join(base, "closed")
	prog := filepath.Join(closed, "harness")
	if err := os.MkdirAll(closed, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(closed, 0o700)
	defer os.Chmod(closed, 0o755)
	want := prog + " cannot be run: this user may not enter the directory " + closed + "; chmod +x it, or run oz0 dev as the user who owns it"
	var got string
	if os.Geteuid() == 0 {
		// A copy nobody may run: go test's build directory is root's alone.
		self := filepath.Join(base, "execerr.test")
		if err := copyExecutable(self); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(self, "-test.run=^TestExplainDeniedDirectory$")
		cmd.Env = append(os.Environ(), "EXECERR_EXPLAIN="+prog)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyUID, Gid: nobodyUID}}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("running the check as nobody: %v", err)
		}
		got = string(out)
		want = prog + " cannot be run: nobody (the user sessions of an oz0 dev run as root run as) may not enter the directory " + closed + "; chmod a+rx it, or run oz0 dev as the user who owns it"
	} else {
		got = Explain(prog, "on this machine", exec.Command(prog).Start()).Error()
	}
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func copyExecutable(to string) error {
	from, err := os.Executable()
	if err != nil {
		return err
	}
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}

// Denied reads the permission bits as the session's user would meet them, from outside.
func TestDeniedAsAnotherUser(t *testing.T) {
	if os.Getuid() == nobodyUID {
		t.Fatal("run the tests as a user other than nobody")
	}
	base := t.TempDir()
	open := filepath.Join(base, "open")
	closed := filepath.Join(base, "closed")
	for _, d := range []string{open, closed} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path string, mode os.FileMode) string {
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	mine := write(filepath.Join(open, "mine"), 0o700)
	unreadable := write(filepath.Join(open, "unreadable"), 0o711)
	hidden := write(filepath.Join(closed, "hidden"), 0o755)
	os.Chmod(base, 0o755)
	os.Chmod(filepath.Dir(base), 0o755)
	os.Chmod(closed, 0o700)
	defer os.Chmod(closed, 0o755)
	who := "nobody (the user sessions of an oz0 dev run as root run as)"
	for _, c := range []struct {
		name       string
		path, want string
	}{
		{"a closed directory", hidden, hidden + " cannot be run: " + who + " may not enter the directory " + closed + "; chmod a+rx it, or run oz0 dev as the user who owns it"},
		{"not executable", mine, mine + " is not executable by " + who + ": chmod a+rx " + mine},
		{"an unreadable script", unreadable, unreadable + " is a script " + who + " may run but not read: chmod a+rx " + unreadable},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Denied(c.path, nobodyUID, nobodyUID); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
	// Its owner may run it.
	if got := Denied(mine, os.Getuid(), os.Getgid()); got != mine+": permission denied" {
		t.Errorf("the owner: %q", got)
	}
}
