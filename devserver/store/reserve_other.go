//go:build !linux

package store

import "os"

// allocate gives f n bytes of the disk, written.
func allocate(f *os.File, n int) error { return writeReserve(f, n) }
