//go:build unix

package lint

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A pipe or a device where a file belongs is reported, not read (reading
// would block, or never end).
func TestSpecialFiles(t *testing.T) {
	dir := writePlugin(t, map[string]string{"pyproject.toml": del})
	if err := syscall.Mkfifo(filepath.Join(dir, "agents", "fifo.yaml"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "pyproject.toml")); err != nil {
		t.Skip("symlink:", err)
	}
	done := make(chan *Report)
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
			expect{"pyproject.toml:0:0 not-a-file", "pyproject.toml is not a regular file"})
	case <-time.After(5 * time.Second):
		t.Fatal("lint blocked on a special file")
	}
}
