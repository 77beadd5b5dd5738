// Package lowprio starts processes whose work may wait, such as oz0 dev's warm-ups after its
// start, at a low CPU priority, so that they do not take the cores from what a person waits for
// (the first request's answer) on a small machine.
package lowprio

import "os/exec"

// Niceness is the priority Start gives: at 10, a busy process has about a tenth of the CPU that
// one at 0 has beside it.
const Niceness = 10

// Start starts cmd as cmd.Start does, at the niceness Niceness where the system allows it (on
// Linux; elsewhere at the caller's), and with it whatever cmd starts in turn. The caller waits
// for it as for any started command.
func Start(cmd *exec.Cmd) error { return start(cmd) }
