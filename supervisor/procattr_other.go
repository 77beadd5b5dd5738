//go:build !linux

package supervisor

import "syscall"

// procAttr puts the harness in a session of its own: a process group of its own, which SIGTERM
// and SIGKILL reach its children through, and no controlling terminal (a harness that shared
// oz0's could write on it and push input into it with TIOCSTI).
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
