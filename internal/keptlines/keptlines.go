// Package keptlines keeps a small file of lines across runs of oz0, in the user's cache, the
// newest last and at most a bound of them: what one command learned that the next may take
// without doing the work again (a sandbox tier seen to work, a document seen to validate). It is
// a memory, not a record: a line lost to two writers at once, or to a file that cannot be
// written, only means that the work is done again, so no error is returned.
package keptlines

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orchestrator-zero/oz0/internal/atomicfile"
)

// File is one memory: the file at Path (none when Path is empty: nothing is read or kept),
// holding at most Max lines.
type File struct {
	Path string
	Max  int
}

// CachePath is the path of the memory name in oz0's folder of the user's cache directory
// (${XDG_CACHE_HOME:-~/.cache}/oz0/NAME on linux); "" where the user has no cache directory.
func CachePath(name string) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "oz0", name)
}

// Lines reads the memory's lines, oldest first, empty ones left out; a file that is missing or
// unreadable is an empty memory.
func (f File) Lines() []string {
	if f.Path == "" {
		return nil
	}
	data, err := os.ReadFile(f.Path)
	if err != nil {
		return nil
	}
	var lines []string
	for line := range bytes.Lines(data) {
		if s := strings.TrimRight(string(line), "\r\n"); s != "" {
			lines = append(lines, s)
		}
	}
	return lines
}

// Add puts lines at the memory's end (one already there moves to the end) and drops the oldest
// past Max; the file is written whole, at once (atomicfile), readable by the user alone.
func (f File) Add(lines ...string) {
	if f.Path == "" {
		return
	}
	kept := slices.DeleteFunc(f.Lines(), func(l string) bool { return slices.Contains(lines, l) })
	kept = append(kept, lines...)
	f.write(kept[max(0, len(kept)-f.Max):])
}

// Remove drops every line for which drop is true; the file is left as it is when none is.
func (f File) Remove(drop func(line string) bool) {
	lines := f.Lines()
	kept := slices.DeleteFunc(slices.Clone(lines), drop)
	if len(kept) != len(lines) {
		f.write(kept)
	}
}

func (f File) write(lines []string) {
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
		return // not kept: the work is done again next time
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	_ = atomicfile.WriteFile(f.Path, []byte(b.String()), 0o600)
}
