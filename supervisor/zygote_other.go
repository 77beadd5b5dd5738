//go:build !linux

package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"syscall"
	"time"
)

// ForkServers says whether this platform has fork servers: they hand a session's first process
// to the node as a pidfd, which only Linux has. Elsewhere sessions are made ahead one at a time.
const ForkServers = false

var errNoForkServer = errors.New("fork servers need Linux (a forked session is followed by its pidfd); sessions are made ahead one at a time")

// Zygote is a harness's fork server; this platform has none (ForkServers).
type Zygote struct{}

// MakeZygote says this platform makes no fork server.
func MakeZygote(Spec) (*Zygote, error) { return nil, errNoForkServer }

func (*Zygote) Loaded() <-chan struct{}                      { return closedChan }
func (*Zygote) Exited() <-chan struct{}                      { return closedChan }
func (*Zygote) Report() json.RawMessage                      { return nil }
func (*Zygote) MadeAt() time.Time                            { return time.Time{} }
func (*Zygote) Forks() bool                                  { return false }
func (*Zygote) Fork(context.Context, Spec) (*Session, error) { return nil, ErrGone }
func (*Zygote) Make(context.Context, Spec) (*Made, error)    { return nil, ErrGone }
func (*Zygote) Close()                                       {}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// forked is never made here; Session's code that follows one is shared.
type forked struct {
	pid       int
	sandboxed bool
}

func (*forked) signal(syscall.Signal)      {}
func (*forked) status() syscall.WaitStatus { return 0 }
