//go:build unix

package secrets

import (
	"os"
	"strings"
	"syscall"
	"testing"
)

func TestFileMode(t *testing.T) {
	old := syscall.Umask(0) // the most permissive umask: the file must still be 0600
	defer syscall.Umask(old)
	dir := t.TempDir()
	s := open(t, dir)
	if err := s.Set("K", "value"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(s.Path())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v, want 0600", fi.Mode(), err)
	}
	if fi, _ := os.Stat(s.Path() + ".lock"); fi.Mode().Perm() != 0o600 {
		t.Errorf("lock file mode %v", fi.Mode())
	}
	// A file that others can read is mended, and Open says so.
	os.Chmod(s.Path(), 0o644)
	s2 := open(t, dir)
	fi, _ = os.Stat(s.Path())
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v after Open", fi.Mode())
	}
	if w := s2.Warnings(); len(w) != 1 || !strings.Contains(w[0], "0644") || !strings.Contains(w[0], "0600 now") {
		t.Fatalf("warnings %v", w)
	}
	if v, err := s2.Get("K"); err != nil || v != "value" {
		t.Fatalf("%q %v", v, err)
	}
	// And so is one that changes under a running store.
	os.Chmod(s.Path(), 0o604)
	if _, err := s2.List(); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(s.Path()); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v after List", fi.Mode())
	}
	if len(s2.Warnings()) != 2 {
		t.Fatalf("warnings %v", s2.Warnings())
	}
}
