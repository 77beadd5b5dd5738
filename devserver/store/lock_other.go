//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package store

import (
	"fmt"
	"os"
	"path/filepath"
)

// lockDir only creates dir/oz0.lock where flock is not available: two processes on one state
// directory are not detected there.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot create %s: %v; fix the directory's permissions or choose another --state-dir", ErrStateDir, path, unwrapPath(err))
	}
	return f, nil
}

func unlockDir(f *os.File) {
	if f != nil {
		f.Close()
	}
}
