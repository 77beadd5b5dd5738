package gateway

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// The gateway holds a call's request body whole: it reads the model and stream fields, which may
// come last, before the call goes upstream, and keeps the body until the upstream's answer begins
// (the transport resends it when a kept-alive connection turns out dead). Each call is bounded
// (Config.MaxRequestBytes); the budget bounds them together. Before reading a body, a call takes
// its size from the budget (as it reads, for a body of no declared length), waiting in line for
// room at most Config.BodyQueueTimeout, and gives it back once the upstream's answer has begun
// (or when the call ends, for a call kept for a recording, whose copy of the body lives until
// then). Through oz0 dev, eight calls of 30 MB at once peak at ~380 MB with it, and did at 1.2 GB
// before (docs/reliability.md says what else went into that).
//
// Giving memory back. Go's runtime keeps the heap it grew for a burst of large bodies, and gives it
// back to the system slowly, from its first forced collection on (two minutes later): through oz0
// dev, a burst's heap stayed resident two minutes, and half of it after that. So once more than
// freeAfter bytes have been held at once since the last time, and the budget has drained to
// freeBelow, the gateway has the runtime give the memory back at once (debug.FreeOSMemory, a
// collection and a scavenge: tens of milliseconds, after a burst only).

// The peak of bytes held at once that makes the budget give memory back, once it has drained to
// freeBelow.
const (
	freeAfter = 32 << 20
	freeBelow = 1 << 20
)

// budget is the bytes of request bodies the gateway may hold at once. Waiters are served in the
// order they came (semaphore.Weighted), so a large body is not starved by small ones.
type budget struct {
	sem  *semaphore.Weighted
	size int64
	wait time.Duration

	mu      sync.Mutex
	held    int64
	peak    int64 // the most held at once since memory was last given back
	waiting int   // calls waiting for room
	freeing bool
	// freeMemory gives the memory back to the system (debug.FreeOSMemory), once the budget
	// has held freeAfter at once and drained to freeBelow; tests change them.
	freeMemory           func()
	freeAfter, freeBelow int64
}

func newBudget(size int64, wait time.Duration) *budget {
	return &budget{sem: semaphore.NewWeighted(size), size: size, wait: wait,
		freeMemory: debug.FreeOSMemory, freeAfter: freeAfter, freeBelow: freeBelow}
}

func (b *budget) waiters(n int) {
	b.mu.Lock()
	b.waiting += n
	b.mu.Unlock()
}

func (b *budget) taken(n int64) {
	b.mu.Lock()
	b.held += n
	b.peak = max(b.peak, b.held)
	b.mu.Unlock()
}

func (b *budget) released(n int64) {
	b.sem.Release(n)
	b.mu.Lock()
	b.held -= n
	free := b.held <= b.freeBelow && b.peak >= b.freeAfter && !b.freeing
	if free {
		b.freeing, b.peak = true, b.held
	}
	b.mu.Unlock()
	if free {
		go func() {
			b.freeMemory()
			b.mu.Lock()
			b.freeing = false
			b.mu.Unlock()
		}()
	}
}

// hold is what one call has taken from the budget.
type hold struct {
	b  *budget
	mu sync.Mutex
	n  int64
}

// errNoRoom: the budget had no room for the body within the wait.
var errNoRoom = errors.New("no room for the request body")

// take takes n more bytes, waiting at most the budget's wait for room. It fails with errNoRoom,
// or with ctx's error when ctx ends first (the client went away).
func (h *hold) take(ctx context.Context, n int64) error {
	if n <= 0 {
		return nil
	}
	if !h.b.sem.TryAcquire(n) {
		wctx, cancel := context.WithTimeout(ctx, h.b.wait)
		h.b.waiters(1)
		err := h.b.sem.Acquire(wctx, n)
		h.b.waiters(-1)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return errNoRoom
		}
	}
	h.mu.Lock()
	h.n += n
	h.mu.Unlock()
	h.b.taken(n)
	return nil
}

// release gives back all the call holds; it may be called more than once.
func (h *hold) release() {
	if h == nil {
		return
	}
	h.mu.Lock()
	n := h.n
	h.n = 0
	h.mu.Unlock()
	if n > 0 {
		h.b.released(n)
	}
}
