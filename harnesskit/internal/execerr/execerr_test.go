package execerr

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestExplain(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, body, want string }{
		{"interp.sh", "#!/no/such/interpreter -x\necho hi\n", "interp.sh names the interpreter /no/such/interpreter on its #! line, which is not on this machine; install it, or correct the #! line"},
		{"crlf.sh", "#!/bin/sh\r\necho hi\r\n", `crlf.sh has Windows line ends: its #! line names the interpreter "/bin/sh\r", with the carriage return; save it with Unix line ends`},
		{"empty.sh", "#!\necho hi\n", "empty.sh has a #! line that names no interpreter"},
		{"noshebang.sh", "echo hi\n", "noshebang.sh has no #! line naming its interpreter: start it with one, such as #!/bin/sh"},
		{"noexec.sh", "#!/bin/sh\necho hi\n", "noexec.sh: permission denied"},
	} {
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
				continue // root may run what no one may
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
	}
}
