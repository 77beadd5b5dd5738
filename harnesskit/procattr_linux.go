package harnesskit

import "syscall"

// procAttr puts the harness in a process group of its own, so that SIGTERM and SIGKILL reach its
// children too, and has the kernel kill it if the node dies first (a SIGKILLed `oz0 dev` leaves no
// harness behind: only a cancel or the session's end can stop it otherwise).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
