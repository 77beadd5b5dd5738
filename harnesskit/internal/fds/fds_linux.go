package fds

import "syscall"

// close_range(2), Linux 5.11 and later; the same number on every architecture.
const (
	sysCloseRange     = 436
	closeRangeCloexec = 1 << 2
)

// CloseOnExecFrom marks every descriptor of the process from first up close-on-exec: one system
// call, whatever their number; on a kernel without close_range, each descriptor /proc lists.
func CloseOnExecFrom(first int) {
	if _, _, errno := syscall.RawSyscall(sysCloseRange, uintptr(first), ^uintptr(0), closeRangeCloexec); errno == 0 {
		return
	}
	markFrom("/proc/self/fd", first)
}
