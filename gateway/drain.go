package gateway

import (
	"errors"
	"time"
)

// A stream whose client goes before its end is metered what it used, not what its first event
// said: an Anthropic stream says its output tokens only in message_delta, near its end, and an
// OpenAI stream its whole usage in its last chunk, so a client that read every text delta and
// hung up before them was metered 1 output token (or none), and its limits never tripped. So once
// a stream has begun, its client going does not cancel the upstream request: the gateway keeps
// reading it (writing nothing) to its end for the usage the upstream reports, at most
// Config.DrainTimeout and maxDrainBytes, and until the job's session ends (StopDraining); then it
// cuts it. A stream that ends without its final usage (cut by the drain's bound, by its upstream,
// by the kill switch) is metered at least one output token for each content delta it carried
// (sseParser.deltas). Before a stream has begun, a client that goes cancels the upstream request
// at once, as for a call that is not streamed.

// maxDrainBytes is the most of a stream read after its client has gone.
const maxDrainBytes = 8 << 20

// What a streamed call does once its client goes (call.leave).
const (
	leaveCancels  = iota // before its answer begins: cancel the upstream request
	leaveRelaying        // while it relays: drain the upstream
	leaveGone            // the client has gone and the upstream request was cancelled
	leaveDraining        // the client has gone and the upstream is read for its usage
)

var errDrainCut = errors.New("the stream's client had gone, and the gateway stopped reading it")

// clientLeft is called once a streamed call's client has gone: its request's context ended, or
// a write to it failed. It runs once; later calls do nothing.
func (c *call) clientLeft() {
	for {
		switch s := c.leave.Load(); s {
		case leaveCancels:
			if c.leave.CompareAndSwap(s, leaveGone) {
				c.cancel(errClientGone)
				return
			}
		case leaveRelaying:
			if c.g.drain < 0 {
				if c.leave.CompareAndSwap(s, leaveGone) {
					c.cancel(errClientGone)
					return
				}
				continue
			}
			if c.leave.CompareAndSwap(s, leaveDraining) {
				c.drainTimer.Store(time.AfterFunc(c.g.drain, func() { c.cancel(errDrainCut) }))
				return
			}
		default:
			return
		}
	}
}

// clientHasGone says whether a streamed call's client has gone.
func (c *call) clientHasGone() bool { return c.leave.Load() >= leaveGone }

// StopDraining cuts the job's streams whose client has gone and whose upstream the gateway still
// reads for its usage: the job's session has ended. They are metered with what they had.
func (g *Gateway) StopDraining(job string) {
	g.mu.Lock()
	js := g.jobs[job]
	g.mu.Unlock()
	if js == nil {
		return
	}
	js.mu.Lock()
	for c := range js.live {
		if c.leave.Load() == leaveDraining {
			c.cancel(errDrainCut)
		}
	}
	js.mu.Unlock()
}
