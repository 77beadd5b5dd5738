package store

import (
	"errors"
	"fmt"
	"os"
)

// filePerm is the mode of every file of the state directory: the store holds jobs' inputs,
// outputs and recorded calls, which are no other local user's business (a --state-dir may be an
// existing 0755 directory).
const filePerm = 0o600

// private makes the database file, and its -wal and -shm if they are left from an earlier run,
// 0600 before SQLite opens them, creating an absent database as an empty file (an empty file is an
// empty database). SQLite creates the -wal and the -shm with the mode of the database file (its
// unix VFS copies it, whatever the umask allows up to it), so they are 0600 too; the process's
// umask is not changed, as it is process-wide and the server opens files on other goroutines.
func (s *Store) private() error {
	f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE, filePerm)
	if err != nil {
		return fmt.Errorf("%w: cannot open %s for writing: %v; fix its permissions or choose another --state-dir", ErrStateDir, s.path, unwrapPath(err))
	}
	err = tighten(f)
	f.Close()
	if err != nil {
		return err
	}
	for _, p := range []string{s.path + "-wal", s.path + "-shm"} {
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%w: cannot open %s for writing: %v; fix its permissions or choose another --state-dir", ErrStateDir, p, unwrapPath(err))
		}
		err = tighten(f)
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// tighten makes f's mode filePerm if it allows more (a database an older oz0 made 0644).
func tighten(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrStateDir, err)
	}
	if fi.Mode().Perm()&^filePerm == 0 {
		return nil
	}
	if err := f.Chmod(filePerm); err != nil {
		return fmt.Errorf("%w: cannot make %s private (mode 0600): %v; fix its permissions or choose another --state-dir", ErrStateDir, f.Name(), unwrapPath(err))
	}
	return nil
}
