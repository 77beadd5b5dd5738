package store

import (
	"context"
	"sync"
)

// The change feed: which job records and approvals changed, store-wide, for a view that keeps
// lists of them live (the dev UI). It carries no data, only what to read again: a change is
// published after the commit that made it, so a read after it is received sees it. A watcher
// whose buffer is full is sent nothing more until it has caught up, and then gets one
// ChangeLost, "read everything again", which it reads after the loss: so it never misses a
// change and never blocks the writer.

// ChangeKind says what changed.
type ChangeKind uint8

// The kinds of change.
const (
	// ChangeJob is a job's record: created, a new status, or usage from a model call.
	ChangeJob ChangeKind = iota + 1
	// ChangeApproval is an approval: asked for, answered, withdrawn or interrupted.
	ChangeApproval
	// ChangeLost says the watcher fell behind and changes were dropped: read everything again.
	ChangeLost
	// ChangeEvalRun is an eval run: started, a case ended, ended. ID is its number.
	ChangeEvalRun
)

func (k ChangeKind) String() string {
	switch k {
	case ChangeJob:
		return "job"
	case ChangeApproval:
		return "approval"
	case ChangeLost:
		return "lost"
	case ChangeEvalRun:
		return "eval run"
	}
	return "unknown"
}

// Change names a record that changed; read it again to see how. ID is empty for ChangeLost.
type Change struct {
	Kind ChangeKind
	ID   string
}

// Watch is a store-wide feed of changes.
type Watch struct {
	// C delivers the changes in commit order. It is closed when the context ends, Close is called
	// or the store is closed.
	C <-chan Change

	cancel context.CancelFunc
}

// Close ends the watch; C is closed soon after.
func (w *Watch) Close() { w.cancel() }

type watcher struct{ liveBuffer[Change] }

// Watch returns a feed of the changes committed from now on. A watcher that falls
// Options.LiveBuffer changes behind gets ChangeLost once it reads again.
func (s *Store) Watch(ctx context.Context) (*Watch, error) {
	s.sendMu.RLock()
	if s.closed {
		s.sendMu.RUnlock()
		return nil, ErrClosed
	}
	s.subsW.Add(1)
	s.sendMu.RUnlock()

	wt := &watcher{newLiveBuffer(s.opts.LiveBuffer, &s.stats.lags, changeSize)}
	s.hub.addWatcher(wt)
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	out := make(chan Change) // unbuffered: the watcher's buffer is live, of LiveBuffer changes
	go func() {
		defer s.subsW.Done()
		defer close(out)
		defer stop()
		defer cancel()
		defer s.hub.removeWatcher(wt)
		for {
			c, ok := wt.next(ctx)
			if !ok {
				return
			}
			select {
			case out <- c:
			case <-ctx.Done():
				return
			}
		}
	}()
	return &Watch{C: out, cancel: cancel}, nil
}

// next is the watcher's next change: what is buffered first, then the loss, so the reader
// catches up before it is told to read everything again. It is false when ctx ends.
func (wt *watcher) next(ctx context.Context) (Change, bool) {
	for {
		if c, ok := wt.take(); ok {
			return c, true
		}
		select {
		case <-wt.ready:
		case <-wt.kick:
			if c, ok := wt.take(); ok {
				signal(wt.kick) // the loss after what was buffered
				return c, true
			}
			wt.unlag() // before the loss is passed on: what the reader reads after it is complete
			return Change{Kind: ChangeLost}, true
		case <-ctx.Done():
			return Change{}, false
		}
	}
}

// changeSize is a change's size as a live buffer counts it: none (a change carries no data).
func changeSize(Change) int64 { return 0 }

// watchers is the hub's list of watchers; its own lock, so that publishing changes never waits
// on the job subscribers' map.
type watchers struct {
	mu   sync.Mutex
	list []*watcher
}

func (h *hub) addWatcher(wt *watcher) {
	h.watch.mu.Lock()
	h.watch.list = append(h.watch.list, wt)
	h.watch.mu.Unlock()
}

func (h *hub) removeWatcher(wt *watcher) {
	h.watch.mu.Lock()
	defer h.watch.mu.Unlock()
	for i, x := range h.watch.list {
		if x == wt {
			h.watch.list = append(h.watch.list[:i], h.watch.list[i+1:]...)
			return
		}
	}
}

// publishChanges offers a committed batch's changes to the watchers: a job whose status or usage
// changed (its status and model_call events), and what the batch's write functions noted.
func (h *hub) publishChanges(batch []*op) {
	h.watch.mu.Lock()
	defer h.watch.mu.Unlock()
	if len(h.watch.list) == 0 {
		return
	}
	offer := func(c Change) {
		for _, wt := range h.watch.list {
			wt.offer(c)
		}
	}
	for _, o := range batch {
		if o.err != nil {
			continue
		}
		last := ""
		for _, e := range o.out {
			if (e.Type == EventStatus || e.Type == EventModelCall) && e.Job != last {
				last = e.Job
				offer(Change{Kind: ChangeJob, ID: e.Job})
			}
		}
		for _, c := range o.changes {
			offer(c)
		}
	}
}
