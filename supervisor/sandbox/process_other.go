//go:build !linux

package sandbox

import (
	"net"
	"os/exec"
	"runtime"
	"syscall"
)

// Process is a session's init; namespaces are Linux's only, so there is none here.
type Process struct{}

// SetupError is a sandbox that could not be built for a session: nothing runs.
type SetupError struct{ Msg string }

func (e *SetupError) Error() string { return e.Msg }

// Prepare fails: there is no sandbox here.
func Prepare(cmd *exec.Cmd, c Config) (*Process, error) { return nil, check(c.Tier) }

// Cmd is never reached.
func (p *Process) Cmd() *exec.Cmd { return nil }

// Start is never reached.
func (p *Process) Start() error { return check(Default) }

// Listeners are none.
func (p *Process) Listeners() []net.Listener { return nil }

// HarnessStatus is never known.
func (p *Process) HarnessStatus() (syscall.WaitStatus, bool) { return 0, false }

// HarnessOwner: the session's directories are the node's own.
func HarnessOwner(t Tier) (uid, gid int, chown bool) { return 0, 0, false }

// warmUp has no init to start.
func warmUp(Tier) {}

// keepSpare has no init to keep.
func keepSpare(Tier, bool) {}

// Nobody is the id a root node's harness runs as, where there is a sandbox.
const Nobody = 65534

func check(t Tier) error {
	if !t.Policy().Namespaces {
		return nil
	}
	name := runtime.GOOS
	if name == "darwin" {
		name = "macOS"
	}
	return &Unavailable{
		Tier:   t,
		Reason: "it needs Linux's namespaces, and this is " + name,
		Mend:   "use Linux (or a Linux VM) for isolation; docs/sandbox.md says what tier none leaves open",
	}
}
