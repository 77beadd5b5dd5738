//go:build !unix

package tenanthooks

import (
	"os"
	"os/exec"
)

func ownProcessGroup(*exec.Cmd) {}

// killTree kills p (there are no process groups to kill here).
func killTree(p *os.Process, exited bool) {
	if !exited {
		_ = p.Kill()
	}
}
