//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package tenantfile

// lockFile is a no-op where flock is not available: there, only one process should change the
// file at a time.
func lockFile(path string) (func(), error) { return func() {}, nil }
