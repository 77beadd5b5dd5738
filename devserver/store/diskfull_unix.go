//go:build unix

package store

import "golang.org/x/sys/unix"

// freeSpace is what the filesystem that holds dir has free for an unprivileged user, in bytes;
// -1 when it cannot say.
func freeSpace(dir string) int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}
