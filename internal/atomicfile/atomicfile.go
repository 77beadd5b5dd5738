// Package atomicfile writes a file at once: what a reader finds at the path is the old file or
// the whole new one, never a part (a script polling a --ready-file, a command reading oz0 dev's
// discovery file, an editor reading a schema). oz0's writers of such files share this one.
package atomicfile

import (
	"os"
	"path/filepath"
)

// WriteFile writes data to a temporary file beside path, with mode perm, and renames it into
// place. The temporary file is created with mode 0600 (os.CreateTemp's), so a file that holds a
// token is never readable by others, not even for a moment; a wider perm is set before the
// rename. On failure the temporary file is removed and path is left as it was.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil && perm != 0o600 {
		err = tmp.Chmod(perm)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
