package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileReplacesWholeWithMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ctx")
	if err := os.WriteFile(path, []byte("old and longer\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, perm := range []os.FileMode{0o600, 0o644} {
		if err := WriteFile(path, []byte("new\n"), perm); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != "new\n" {
			t.Fatalf("perm %o: read %q, %v; want %q", perm, got, err, "new\n")
		}
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != perm {
			t.Fatalf("mode %v, %v; want %o", st.Mode().Perm(), err, perm)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("left beside the file: %v", entries)
	}
}

func TestWriteFileFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A non-empty directory cannot be renamed over: the rename fails after the write.
	if err := WriteFile(path, []byte("data"), 0o600); err == nil {
		t.Fatal("renaming over a non-empty directory did not fail")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "sub" {
		t.Fatalf("the temporary file was left: %v", entries)
	}
	if err := WriteFile(filepath.Join(dir, "missing", "f"), nil, 0o600); err == nil {
		t.Fatal("a missing directory did not fail")
	}
}
