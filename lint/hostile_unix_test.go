//go:build unix

package lint

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/diag"
)

// A pipe where a file belongs is reported, not read (reading would block); a link to a device
// outside the plugin is refused as a path that leaves it.
func TestSpecialFiles(t *testing.T) {
	dir := writePlugin(t, map[string]string{"pyproject.toml": del})
	if err := syscall.Mkfifo(filepath.Join(dir, "agents", "fifo.yaml"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "pyproject.toml")); err != nil {
		t.Skip("symlink:", err)
	}
	done := make(chan *diag.Report)
	go func() {
		rep, err := Run(dir)
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	select {
	case rep := <-done:
		checkFindings(t, rep,
			expect{"agents/fifo.yaml:0:0 not-a-file", "agents/fifo.yaml is not a regular file"},
			expect{"pyproject.toml:0:0 path-escape", "pyproject.toml is a symbolic link that leads outside the plugin"})
	case <-time.After(5 * time.Second):
		t.Fatal("lint blocked on a special file")
	}
}
