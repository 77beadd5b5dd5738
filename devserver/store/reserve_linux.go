package store

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// allocate gives f n bytes of the disk: fallocate, which takes the room without writing it,
// else written.
func allocate(f *os.File, n int) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, int64(n))
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return writeReserve(f, n)
	}
	return err
}
