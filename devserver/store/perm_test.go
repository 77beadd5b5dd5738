//go:build unix

package store

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestStateFilesArePrivate: in an existing 0755 state directory, with a umask that lets files be
// read by all, the database, its -wal and -shm, the lock and the reserve are 0600, and a database an
// older oz0 left 0644 (with its -wal) is made 0600 at the next open.
func TestStateFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		for _, name := range []string{DBFile, DBFile + "-wal", DBFile + "-shm", "oz0.lock", ReserveFile} {
			fi, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				t.Errorf("%s: %v", when, err)
				continue
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: %s has mode %v, want 0600", when, name, fi.Mode().Perm())
			}
		}
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	newJob(t, s)
	check("open")
	for _, name := range []string{DBFile, DBFile + "-wal", DBFile + "-shm"} {
		if err := os.Chmod(filepath.Join(dir, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Close removes the -wal and -shm; a crash leaves them, as here with the copies.
	wal, _ := os.ReadFile(filepath.Join(dir, DBFile+"-wal"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, DBFile+"-wal"), wal, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	newJob(t, s)
	check("reopen")
}
