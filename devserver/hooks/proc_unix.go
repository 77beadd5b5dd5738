//go:build unix

package hooks

import (
	"os"
	"os/exec"
	"syscall"
)

// ownProcessGroup starts cmd in a new process group, whose id is its pid.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killTree sends SIGKILL to p's process group, and to p unless it has exited (and been reaped:
// its pid may be reused). The group's id is not reused while the group has members.
func killTree(p *os.Process, exited bool) {
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	if !exited {
		_ = p.Kill()
	}
}
