package gateway

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// The meter and the per-call log line run after the client has its answer, in one goroutine of
// the gateway's own: a meter that writes to a durable store waits for a commit, and that wait
// must not sit between the upstream's answer and the client (net/http sends a handler's buffered
// answer only when ServeHTTP returns).
//
// Order. A job's calls reach the meter in the order their answers began (the response headers
// written, or the call ended without any): a session's next call can only start once it has the
// previous answer, so a session's calls are metered in the order it made them, whatever the
// scheduler does between the last byte written and the handler's return. Each job keeps its
// calls in that order; a call that ends hands over the ended calls at the head of its job's list,
// under the job's lock, so two calls of a job never overtake each other on the way to the queue.
// A call still streaming holds back the job's later calls until it ends (their model_call events
// wait; nothing is lost).

// Batches. With Config.MeterLinger, the meter goroutine waits that long after a call has ended for
// others to end too, and meters them together: a durable meter commits once for all of them. On
// a machine with few cores, a commit right after each answer took the CPU from the session's next
// call: through a real oz0 dev, a 2 ms linger took the gateway's added latency at p50 from ~85 µs
// to ~0 over a bare reverse proxy, and 10 ms from 1.04–1.10× the proxy's to 1.005× against the
// least upstream (docs/performance.md). The events come that much later; Hurry (a job about to
// end) and Flush cut the wait short.

// maxAfterQueue bounds the calls waiting for the meter: past it, a call that ends waits (before
// any lock) for room, which slows clients down rather than growing memory without bound.
const maxAfterQueue = 1 << 16

// endedCall is what the meter and the log line need of a call that ended.
type endedCall struct {
	rec          Call
	method, path string
	metered      bool // the call's key resolved: it has a job to be metered under
}

// afterQueue is the calls that ended, in order, for the meter goroutine.
type afterQueue struct {
	mu      sync.Mutex
	work    *sync.Cond // the worker waits for calls
	room    *sync.Cond // calls wait for room, and Flush for quiet
	q       []endedCall
	pending int // calls begun and not yet through the worker
	closed  bool
	done    chan struct{} // closed when the worker has returned
	hurry   chan struct{} // ends the worker's linger; holds one token
}

func newAfterQueue() *afterQueue {
	q := &afterQueue{done: make(chan struct{}), hurry: make(chan struct{}, 1)}
	q.work = sync.NewCond(&q.mu)
	q.room = sync.NewCond(&q.mu)
	return q
}

// begin counts a call in, for Flush.
func (q *afterQueue) begin() {
	q.mu.Lock()
	q.pending++
	q.mu.Unlock()
}

// waitRoom waits while the queue is full.
func (q *afterQueue) waitRoom() {
	q.mu.Lock()
	for len(q.q) >= maxAfterQueue && !q.closed {
		q.room.Wait()
	}
	q.mu.Unlock()
}

// push queues calls for the worker; it never blocks on a full queue (waitRoom does), so it may be
// called under a job's lock. Once the worker is gone (Close), it reports false and queues nothing.
func (q *afterQueue) push(calls ...endedCall) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.q = append(q.q, calls...)
	q.work.Signal()
	return true
}

// more appends the calls queued now, without waiting.
func (q *afterQueue) more(buf []endedCall) []endedCall {
	q.mu.Lock()
	defer q.mu.Unlock()
	buf = append(buf, q.q...)
	clear(q.q)
	q.q = q.q[:0]
	q.room.Broadcast()
	return buf
}

// take waits for calls and returns all of them; nil once closed and empty.
func (q *afterQueue) take(buf []endedCall) []endedCall {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.q) == 0 && !q.closed {
		q.work.Wait()
	}
	buf = append(buf[:0], q.q...)
	clear(q.q)
	q.q = q.q[:0]
	q.room.Broadcast()
	return buf
}

// finished counts n calls out.
func (q *afterQueue) finished(n int) {
	q.mu.Lock()
	q.pending -= n
	if q.pending <= 0 {
		q.room.Broadcast()
	}
	q.mu.Unlock()
}

// afterLoop is the meter goroutine.
func (g *Gateway) afterLoop() {
	defer close(g.after.done)
	var buf []endedCall
	var calls []Call
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for {
		buf = g.after.take(buf)
		if len(buf) == 0 {
			return // closed, and everything is through
		}
		if g.linger > 0 {
			// Let the calls that end meanwhile join this batch: a commit a call, right after
			// each answer, competes with the session's next call for the CPU.
			linger.Reset(g.linger)
			select {
			case <-linger.C:
			case <-g.after.hurry:
				linger.Stop()
			}
			buf = g.after.more(buf)
		}
		calls = g.report(buf, calls)
		g.after.finished(len(buf))
	}
}

// report meters and logs calls that ended.
func (g *Gateway) report(ended []endedCall, buf []Call) []Call {
	if g.meter != nil {
		if bm, ok := g.meter.(BatchMeter); ok {
			buf = buf[:0]
			for i := range ended {
				if ended[i].metered {
					buf = append(buf, ended[i].rec)
				}
			}
			if len(buf) > 0 {
				bm.RecordBatch(buf)
			}
			clear(buf)
		} else {
			for i := range ended {
				if ended[i].metered {
					g.meter.Record(ended[i].rec)
				}
			}
		}
	}
	if g.log.Enabled(context.Background(), slog.LevelInfo) {
		for i := range ended {
			g.logCall(&ended[i])
		}
	}
	return buf
}

// Hurry has the calls that have ended metered now, without the rest of the meter's linger (or the
// next batch's, when none is waiting): a job about to end waits for its calls' events.
func (g *Gateway) Hurry() {
	select {
	case g.after.hurry <- struct{}{}:
	default:
	}
}

// Flush waits until every call the gateway has begun has ended and been metered and logged. With
// calls still streaming it waits for them too.
func (g *Gateway) Flush() {
	q := g.after
	q.mu.Lock()
	for q.pending > 0 {
		q.mu.Unlock()
		g.Hurry()
		q.mu.Lock()
		if q.pending > 0 {
			q.room.Wait()
		}
	}
	q.mu.Unlock()
}

// Close meters what is queued and stops the meter goroutine; calls that end after it are metered
// in their own goroutine. Stop serving the gateway first.
func (g *Gateway) Close() error {
	q := g.after
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		q.work.Broadcast()
		q.room.Broadcast()
	}
	q.mu.Unlock()
	<-q.done
	return nil
}
