package supervisor

import "syscall"

// procAttr puts the harness in a session of its own (so a process group of its own, which
// SIGTERM and SIGKILL reach its children through, and no controlling terminal: a harness that
// shared oz0's terminal could write on it and push input into it with TIOCSTI, which the user's
// shell would run), and has the kernel kill it if the node dies first (a SIGKILLed `oz0 dev`
// leaves no harness behind: only a cancel or the session's end can stop it otherwise).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}
