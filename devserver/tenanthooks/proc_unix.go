//go:build unix

package tenanthooks

import (
	"os"
	"os/exec"
	"syscall"
)

// ownProcessGroup starts cmd in a new session, so a new process group whose id is its pid, with
// no controlling terminal (one shared with oz0 could be written on and fed input, TIOCSTI).
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}

// killTree sends SIGKILL to p's process group, and to p unless it has exited (and been reaped:
// its pid may be reused). The group's id is not reused while the group has members.
func killTree(p *os.Process, exited bool) {
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	if !exited {
		_ = p.Kill()
	}
}
