//go:build !linux

package lowprio

import "os/exec"

// start: a thread's niceness that its child processes take is Linux's.
func start(cmd *exec.Cmd) error { return cmd.Start() }
