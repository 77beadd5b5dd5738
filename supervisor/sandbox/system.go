package sandbox

import (
	"path/filepath"
	"strings"
)

// InSystemDir reports whether the absolute path p lies in one of the system's directories a
// sandboxed session sees (read-only): a program there runs in a session; one elsewhere outside
// the plugin may not be there (on another machine, or behind the sandbox).
func InSystemDir(p string) bool {
	p = filepath.Clean(p)
	for _, d := range systemDirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}
