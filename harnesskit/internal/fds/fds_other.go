//go:build unix && !linux

package fds

// CloseOnExecFrom marks every descriptor of the process from first up close-on-exec.
func CloseOnExecFrom(first int) { markFrom("/dev/fd", first) }
