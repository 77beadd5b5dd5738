package buildinfo

import (
	"fmt"
	"os"
	"syscall"
)

// ExecutableKey names the file of the running binary: its path, device, inode, size and
// modification time, so that a rebuild or another install is another key. A memory of what this
// binary found (a sandbox tier that works, documents its schemas validated) is kept under it;
// ok is false where the file cannot be known, and then nothing should be remembered.
func ExecutableKey() (key string, ok bool) {
	exe, err := os.Executable()
	if err != nil {
		return "", false
	}
	// On Linux, /proc/self/exe is the file this process runs even once another was put at its
	// path; elsewhere, the file at the path.
	fi, err := os.Stat("/proc/self/exe")
	if err != nil {
		if fi, err = os.Stat(exe); err != nil {
			return "", false
		}
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if st == nil {
		return "", false
	}
	return fmt.Sprintf("exe %s %d %d %d %d", exe, st.Dev, st.Ino, fi.Size(), fi.ModTime().UnixNano()), true
}
