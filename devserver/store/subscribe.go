package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// The live stream. The writer publishes each committed batch to the subscribers of its jobs, with
// a send that never blocks: each subscriber has a buffer of Options.LiveBuffer events, and one
// whose buffer is full is marked lagging and sent nothing more until it has caught up from the
// database. So a slow subscriber costs the writer nothing and loses nothing.
//
// No gap and no duplicate at the switch from replay to live: a subscriber is registered before it
// reads the database, and an event is published only after its commit. An event committed before
// the read is in the read; one committed after it is published after the registration, so it
// reaches the buffer (or marks the subscriber lagging, which sends it back to the database).
// Events that arrive both ways are dropped by Seq: the stream passes on only Seq = last + 1, and
// a buffer that skips ahead (last + 2 or more) sends the subscriber back to the database as well.

type hub struct {
	mu    sync.Mutex
	subs  map[string][]*sub
	watch watchers // the change feed's (changes.go)
}

type sub struct {
	job string
	liveBuffer[Event]
}

// liveBuffer is what a live reader (a subscriber, a watcher) has not read yet. The writer never
// waits for it: when it is full, the reader is marked lagging, sent nothing more, and kicked
// once, so it goes back to what the database holds and clears the mark (unlag) before it does.
// It holds what is pending, no more: a reader that keeps up holds an event or two (a buffer of
// its bound made up front was 700 KiB for each `oz0 run` following a job).
type liveBuffer[T any] struct {
	mu     sync.Mutex
	queue  []T // oldest first, from head
	head   int
	max    int           // the most it holds (Options.LiveBuffer)
	bytes  int64         // the size of what it holds, as offer was told it
	lagged bool          // offer sends nothing until unlag
	ready  chan struct{} // one token: "there is something to take"
	kick   chan struct{} // one token: "you are lagging"
	lags   *atomic.Int64 // the store's count
	sizeOf func(T) int64 // what maxLiveBytes counts of a value
}

// maxLiveBytes bounds the data a live reader may fall behind by, whatever the number of events:
// a job that says megabytes (in pieces of 64 KiB) to a slow reader sends it back to the database
// rather than filling the server's memory.
const maxLiveBytes = 8 << 20

// keptQueue is the most room an emptied buffer keeps for the next events; more is let go.
const keptQueue = 64

func newLiveBuffer[T any](size int, lags *atomic.Int64, sizeOf func(T) int64) liveBuffer[T] {
	return liveBuffer[T]{max: size, ready: make(chan struct{}, 1), kick: make(chan struct{}, 1), lags: lags, sizeOf: sizeOf}
}

// offer passes v on, or marks the reader lagging.
func (b *liveBuffer[T]) offer(v T) {
	size := b.sizeOf(v)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lagged {
		return
	}
	pending := len(b.queue) - b.head
	if pending >= b.max || (pending > 0 && b.bytes+size > maxLiveBytes) {
		b.lagged = true
		b.lags.Add(1)
		signal(b.kick)
		return
	}
	if b.head > 0 && len(b.queue) == cap(b.queue) {
		// Room at the front: slide what is pending down rather than grow.
		n := copy(b.queue, b.queue[b.head:])
		clear(b.queue[n:])
		b.queue, b.head = b.queue[:n], 0
	}
	b.queue = append(b.queue, v)
	b.bytes += size
	signal(b.ready)
}

// take is the oldest value the reader has not taken; false when there is none.
func (b *liveBuffer[T]) take() (T, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var v T
	if b.head == len(b.queue) {
		return v, false
	}
	v = b.queue[b.head]
	var zero T
	b.queue[b.head] = zero // not held once taken
	b.head++
	b.bytes -= b.sizeOf(v)
	if b.head == len(b.queue) {
		b.head = 0
		if cap(b.queue) > keptQueue {
			b.queue = nil
		} else {
			b.queue = b.queue[:0]
		}
	}
	return v, true
}

// unlag clears the mark, when the reader takes the kick: what it reads after that (from the
// database) includes all that was dropped, and what is committed after it is offered again.
func (b *liveBuffer[T]) unlag() {
	b.mu.Lock()
	b.lagged = false
	b.mu.Unlock()
}

// signal puts the token in c unless it is there.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (h *hub) init() { h.subs = map[string][]*sub{} }

func (h *hub) add(sb *sub) {
	h.mu.Lock()
	h.subs[sb.job] = append(h.subs[sb.job], sb)
	h.mu.Unlock()
}

func (h *hub) remove(sb *sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	list := h.subs[sb.job]
	for i, x := range list {
		if x == sb {
			list[i] = list[len(list)-1]
			list[len(list)-1] = nil
			list = list[:len(list)-1]
			break
		}
	}
	if len(list) == 0 {
		delete(h.subs, sb.job)
	} else {
		h.subs[sb.job] = list
	}
}

// publish offers a committed batch's events to their subscribers, in order; it never blocks.
func (h *hub) publish(batch []*op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) == 0 {
		return
	}
	job, subs := "", []*sub(nil)
	for _, o := range batch {
		if o.err != nil {
			continue
		}
		for _, e := range o.out { // one job's events, but MarkInterrupted's are of many
			if e.Job != job {
				job, subs = e.Job, h.subs[e.Job]
			}
			for _, sb := range subs {
				sb.offer(e)
			}
		}
	}
}

// Subscription is a live stream of one job's events.
type Subscription struct {
	// C delivers the events in Seq order, each once. It is closed after the job's terminal status
	// event, or when the context ends, Close is called or the store is closed; Err then says why.
	C <-chan Event

	cancel context.CancelFunc
	mu     sync.Mutex
	err    error
}

// Err is nil when C was closed after the job's terminal event; else why C was closed (the
// context's error, ErrClosed, a read error). Call it after C is closed.
func (sub *Subscription) Err() error {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	return sub.err
}

// Close ends the subscription; C is closed soon after.
func (sub *Subscription) Close() { sub.cancel() }

const replayPage = 512

// Subscribe streams a job's events with Seq > afterSeq: first every committed one, read from the
// database, then the live ones as they are committed, until the job's terminal status event has
// been delivered. To resume after a disconnection, subscribe again with the last Seq received.
// A job that has ended streams what is left and closes. An unknown job is an error matching
// ErrNotFound.
func (s *Store) Subscribe(ctx context.Context, job string, afterSeq int64) (*Subscription, error) {
	afterSeq = max(afterSeq, 0)
	s.sendMu.RLock()
	if s.closed {
		s.sendMu.RUnlock()
		return nil, ErrClosed
	}
	s.subsW.Add(1)
	s.sendMu.RUnlock()

	sb := &sub{job: job, liveBuffer: newLiveBuffer(s.opts.LiveBuffer, &s.stats.lags, eventSize)}
	s.hub.add(sb) // before reading anything: see the comment at the top
	n, st, err := s.jobRef(ctx, job)
	if err != nil {
		s.hub.remove(sb)
		s.subsW.Done()
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	out := make(chan Event, 64)
	sub := &Subscription{C: out, cancel: cancel}
	endedBefore := st.Terminal()
	go func() {
		err := s.stream(ctx, sb, n, endedBefore, afterSeq, out)
		s.hub.remove(sb)
		stop()
		cancel()
		if err != nil && s.ctx.Err() != nil {
			err = ErrClosed
		}
		sub.mu.Lock()
		sub.err = err
		sub.mu.Unlock()
		close(out)
		s.subsW.Done()
	}()
	return sub, nil
}

// eventSize is an event's size as a live buffer counts it (maxLiveBytes): its data.
func eventSize(e Event) int64 { return int64(len(e.Data)) }

var errEnded = errors.New("ended") // internal: the terminal event was delivered

func (s *Store) stream(ctx context.Context, sb *sub, n int64, endedBefore bool, last int64, out chan<- Event) error {
	send := func(e Event) error {
		select {
		case out <- e:
		case <-ctx.Done():
			return ctx.Err()
		}
		last = e.Seq
		if e.Terminal() {
			return errEnded
		}
		return nil
	}
	var buf []Event // a page of the replay, grown to what a page holds and reused
	catchUp := func() error {
		for {
			evs, more, err := s.readEvents(ctx, s.rdb, sb.job, n, last, replayPage, maxLiveBytes, buf)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return err
			}
			for _, e := range evs {
				if err := send(e); err != nil {
					return err
				}
			}
			clear(evs) // the page's data is not held until the next page is read
			buf = evs[:0]
			if !more {
				return nil
			}
		}
	}
	result := func(err error) error {
		if errors.Is(err, errEnded) {
			return nil
		}
		return err
	}
	if err := catchUp(); err != nil {
		return result(err)
	}
	if endedBefore {
		// The job had ended when we looked, so the read above had all of its events; afterSeq
		// was past its terminal one.
		return nil
	}
	for {
		select {
		case <-sb.ready:
			for {
				e, ok := sb.take()
				if !ok {
					break
				}
				if e.Seq <= last {
					continue
				}
				if e.Seq > last+1 {
					if err := catchUp(); err != nil {
						return result(err)
					}
					continue
				}
				if err := send(e); err != nil {
					return result(err)
				}
			}
		case <-sb.kick:
			sb.unlag()
			if err := catchUp(); err != nil {
				return result(err)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
