//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package filelock

// Lock is a no-op where flock is not available: there, only one process should change a file
// at a time.
func Lock(path string) (func(), error) { return func() {}, nil }
