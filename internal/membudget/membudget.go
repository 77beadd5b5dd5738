// Package membudget bounds the bytes a server holds at once for what clients send it (the
// gateway's request bodies, the OTLP receiver's decoded exports), and gives the memory back to
// the system after a burst.
//
// Before holding bytes, a request takes their number from the budget (as it reads, for a body of
// no declared length), waiting in line for room at most the budget's wait; it gives them back
// when it is done with them. Waiters are served in the order they came (semaphore.Weighted), so a
// large request is not starved by small ones.
//
// Giving memory back. Go's runtime keeps the heap it grew for a burst, and gives it back to the
// system slowly, from its first forced collection on (two minutes later): through oz0 dev, a
// burst's heap stayed resident two minutes, and half of it after that. So once more than
// FreeAfter bytes have been held at once since the last time, and the budget has drained to
// FreeBelow, the budget has the runtime give the memory back at once (debug.FreeOSMemory, a
// collection and a scavenge: tens of milliseconds, after a burst only).
package membudget

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// Budget is the bytes that may be held at once.
type Budget struct {
	sem  *semaphore.Weighted
	size int64
	wait time.Duration

	mu      sync.Mutex
	held    int64
	peak    int64 // the most held at once since memory was last given back
	waiting int   // takers waiting for room
	freeing bool

	// FreeMemory gives the memory back to the system (debug.FreeOSMemory), once the budget has
	// held FreeAfter at once (half its size) and drained to FreeBelow (1 MiB). Tests change them
	// before the budget is used.
	FreeMemory           func()
	FreeAfter, FreeBelow int64
}

// New returns a budget of size bytes whose takers wait at most wait for room.
func New(size int64, wait time.Duration) *Budget {
	return &Budget{sem: semaphore.NewWeighted(size), size: size, wait: wait,
		FreeMemory: debug.FreeOSMemory, FreeAfter: size / 2, FreeBelow: 1 << 20}
}

// Size is the most bytes held at once.
func (b *Budget) Size() int64 { return b.size }

// Wait is the longest a taker waits for room.
func (b *Budget) Wait() time.Duration { return b.wait }

// Held is the bytes held now.
func (b *Budget) Held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}

// Waiting is how many takers wait for room now.
func (b *Budget) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiting
}

func (b *Budget) waiters(n int) {
	b.mu.Lock()
	b.waiting += n
	b.mu.Unlock()
}

func (b *Budget) taken(n int64) {
	b.mu.Lock()
	b.held += n
	b.peak = max(b.peak, b.held)
	b.mu.Unlock()
}

func (b *Budget) released(n int64) {
	b.sem.Release(n)
	b.mu.Lock()
	b.held -= n
	free := b.held <= b.FreeBelow && b.peak >= b.FreeAfter && !b.freeing
	if free {
		b.freeing, b.peak = true, b.held
	}
	b.mu.Unlock()
	if free {
		go func() {
			b.FreeMemory()
			b.mu.Lock()
			b.freeing = false
			b.mu.Unlock()
		}()
	}
}

// Hold is what one request has taken of a budget. Its methods are safe for concurrent use.
type Hold struct {
	b  *Budget
	mu sync.Mutex
	n  int64
}

// Hold returns an empty hold on b.
func (b *Budget) Hold() *Hold { return &Hold{b: b} }

// ErrNoRoom says the budget had no room within its wait.
var ErrNoRoom = errors.New("no room in the budget")

// Take takes n more bytes, waiting at most the budget's wait for room. It fails with ErrNoRoom,
// or with ctx's error when ctx ends first (the client went away).
func (h *Hold) Take(ctx context.Context, n int64) error {
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
			return ErrNoRoom
		}
	}
	h.mu.Lock()
	h.n += n
	h.mu.Unlock()
	h.b.taken(n)
	return nil
}

// Release gives back all the hold has; it may be called more than once, and on a nil hold.
func (h *Hold) Release() {
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
