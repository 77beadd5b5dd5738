package supervisor

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// Decider decides the permission requests of a session's tools (the node's hooks, default-deny
// policy and approvals). The supervisor calls Decide once per request of a tool the agent lists,
// each in a goroutine of its own, so several may run at once. ctx is done when the session ends
// (its answer is then moot), with an *EndError saying how as its context.Cause: Decide must
// return promptly after that, because Session.Wait waits for every Decide call. A panic in Decide
// is recovered and denies the request.
type Decider interface {
	Decide(ctx context.Context, ask *Ask) Decision
}

// DeciderFunc is a function that is a Decider.
type DeciderFunc func(ctx context.Context, ask *Ask) Decision

// Decide calls f.
func (f DeciderFunc) Decide(ctx context.Context, ask *Ask) Decision { return f(ctx, ask) }

// AllowAll allows every request with the arguments asked.
var AllowAll Decider = DeciderFunc(func(context.Context, *Ask) Decision { return Allow(nil) })

// Ask is a permission request handed to a Decider.
type Ask struct {
	ID        string
	Tool      string
	Arguments json.RawMessage // as the harness asked, a JSON object
	Job       string
	Agent     string
	Harness   string // hooks see the tool as <Harness>.<Tool>
	Time      time.Time

	clock *activeClock
	mu    sync.Mutex
	holds []func()
	done  bool // Decide has returned: Hold does nothing
}

// Hold stops the session's timeout clock until release is called: call it before waiting for a
// person (an approval), so that the wait does not count toward Limits.Timeout. Holds of several
// requests may overlap; the clock runs again when the last is released. release may be called
// more than once; a hold still held when Decide returns is released then, and Hold does nothing
// after Decide has returned.
func (a *Ask) Hold() (release func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.clock == nil || a.done {
		return func() {}
	}
	release = a.clock.hold()
	a.holds = append(a.holds, release)
	return release
}

func (a *Ask) releaseAll() {
	a.mu.Lock()
	holds := a.holds
	a.holds, a.done = nil, true
	a.mu.Unlock()
	for _, release := range holds {
		release()
	}
}

// Decision is a Decider's answer.
type Decision struct {
	Allow bool
	// Arguments are the arguments allowed, a JSON object: the harness runs the tool with these.
	// nil allows the arguments as asked.
	Arguments json.RawMessage
	// Reason says why a request is denied; it reaches the harness (and the agent's model).
	Reason string
}

// Allow allows a request, with arguments (nil: as asked).
func Allow(arguments json.RawMessage) Decision { return Decision{Allow: true, Arguments: arguments} }

// Deny denies a request for reason.
func Deny(reason string) Decision { return Decision{Reason: reason} }

// activeClock measures a session's active time: wall time minus the time while at least one hold
// is held. C gets a value when the active time reaches the limit.
type activeClock struct {
	mu        sync.Mutex
	limit     time.Duration // 0: none
	active    time.Duration // active time before since
	since     time.Time     // when the clock last started running
	holds     int
	heldSince time.Time
	held      time.Duration
	stopped   bool
	timer     *time.Timer
	c         chan struct{}
}

func newActiveClock(limit time.Duration) *activeClock {
	c := &activeClock{limit: limit, since: time.Now(), c: make(chan struct{}, 1)}
	if limit > 0 {
		c.timer = time.AfterFunc(limit, c.fire)
	}
	return c
}

// C gets one value when the active time reaches the limit.
func (c *activeClock) C() <-chan struct{} { return c.c }

func (c *activeClock) fire() {
	select {
	case c.c <- struct{}{}:
	default:
	}
}

func (c *activeClock) hold() (release func()) {
	c.mu.Lock()
	if c.holds == 0 && !c.stopped {
		now := time.Now()
		c.active += now.Sub(c.since)
		c.heldSince = now
		if c.timer != nil {
			c.timer.Stop()
		}
	}
	c.holds++
	c.mu.Unlock()
	var once sync.Once
	return func() { once.Do(c.release) }
}

func (c *activeClock) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holds--
	if c.holds > 0 || c.stopped {
		return
	}
	now := time.Now()
	c.held += now.Sub(c.heldSince)
	c.since = now
	if c.timer != nil {
		c.timer.Reset(max(c.limit-c.active, 0))
	}
}

// remaining is the active time left before the limit; ok is false when there is no limit.
func (c *activeClock) remaining() (left time.Duration, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.limit <= 0 {
		return 0, false
	}
	active := c.active
	if c.holds == 0 && !c.stopped {
		active += time.Since(c.since)
	}
	return max(c.limit-active, 0), true
}

// stop stops the clock for good and returns the time held.
func (c *activeClock) stop() (held time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped {
		c.stopped = true
		if c.timer != nil {
			c.timer.Stop()
		}
		if c.holds > 0 {
			c.held += time.Since(c.heldSince)
		}
	}
	return c.held
}
