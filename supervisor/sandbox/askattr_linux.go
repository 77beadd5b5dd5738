package sandbox

import "syscall"

// askAttr is the interpreter question's process's: it dies with the process that asked (a node
// killed while a wrapper answers slowly leaves nothing behind), as the sessions' processes do.
func askAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
