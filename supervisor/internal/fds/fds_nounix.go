//go:build !unix

package fds

// CloseOnExecFrom does nothing where there is no fork and exec: a child gets what it is given.
func CloseOnExecFrom(first int) error { return nil }
