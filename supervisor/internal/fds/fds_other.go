//go:build unix && !linux

package fds

// CloseOnExecFrom marks every descriptor of the process from first up close-on-exec. It fails
// only when the process's descriptors cannot be listed.
func CloseOnExecFrom(first int) error { return markFrom("/dev/fd", first) }
