package keptlines

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

func TestFile(t *testing.T) {
	f := File{Path: filepath.Join(t.TempDir(), "oz0", "memory"), Max: 3}
	if l := f.Lines(); l != nil {
		t.Errorf("a memory not written yet holds %q", l)
	}
	f.Add("a")
	f.Add("b", "c")
	f.Add("a") // already there: moves to the end
	if l := f.Lines(); !slices.Equal(l, []string{"b", "c", "a"}) {
		t.Errorf("Lines = %q; want b c a (a moved to the end)", l)
	}
	f.Add("d")
	if l := f.Lines(); !slices.Equal(l, []string{"c", "a", "d"}) {
		t.Errorf("Lines = %q; want the newest 3, c a d", l)
	}
	f.Remove(func(l string) bool { return l == "a" })
	if l := f.Lines(); !slices.Equal(l, []string{"c", "d"}) {
		t.Errorf("after Remove(a), Lines = %q", l)
	}
	fi, err := os.Stat(f.Path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("the memory's mode is %v; want 0600 (the user's alone)", fi.Mode().Perm())
	}
	if di, err := os.Stat(filepath.Dir(f.Path)); err != nil {
		t.Error(err)
	} else if di.Mode().Perm() != 0o700 {
		t.Errorf("its folder's mode is %v; want 0700", di.Mode().Perm())
	}
}

func TestFileReadsWhatItDidNotWrite(t *testing.T) {
	f := File{Path: filepath.Join(t.TempDir(), "memory"), Max: 10}
	if err := os.WriteFile(f.Path, []byte("x\r\n\n  y\nz"), 0o600); err != nil {
		t.Fatal(err)
	}
	if l := f.Lines(); !slices.Equal(l, []string{"x", "  y", "z"}) {
		t.Errorf("Lines = %q; want x, '  y', z (empty lines and line ends left out)", l)
	}
}

// A memory that cannot be written (no path, a folder in the way) keeps nothing and says nothing.
func TestFileThatCannotBeKept(t *testing.T) {
	var none File
	none.Add("a")
	if l := none.Lines(); l != nil {
		t.Errorf("a memory of no path holds %q", l)
	}
	dir := t.TempDir()
	blocked := filepath.Join(dir, "file")
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f := File{Path: filepath.Join(blocked, "memory"), Max: 2}
	f.Add("a")
	if l := f.Lines(); l != nil {
		t.Errorf("a memory under a file holds %q", l)
	}
}

func TestCachePath(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/c")
	t.Setenv("HOME", "/h")
	want := filepath.Join("/c", "oz0", "name")
	if runtime.GOOS == "darwin" {
		want = filepath.Join("/h", "Library", "Caches", "oz0", "name")
	}
	if p := CachePath("name"); p != want {
		t.Errorf("CachePath(name) = %q; want %q", p, want)
	}
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "")
	if p := CachePath("name"); p != "" {
		t.Errorf("with no cache directory, CachePath(name) = %q; want none", p)
	}
}
