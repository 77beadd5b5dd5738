package fds

import "syscall"

// close_range(2), Linux 5.11 and later: 436 on amd64 and arm64, the architectures oz0 is built
// for (and most others); where the number differs or the kernel is older, it fails with ENOSYS and
// /proc is read instead.
const (
	sysCloseRange     = 436
	closeRangeCloexec = 1 << 2
)

// CloseOnExecFrom marks every descriptor of the process from first up close-on-exec: one system
// call, whatever their number; without close_range, each descriptor /proc lists. It fails only
// when neither can be done.
func CloseOnExecFrom(first int) error {
	if _, _, errno := syscall.RawSyscall(sysCloseRange, uintptr(first), ^uintptr(0), closeRangeCloexec); errno == 0 {
		return nil
	}
	return markFrom("/proc/self/fd", first)
}
