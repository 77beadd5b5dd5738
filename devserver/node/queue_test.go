package node_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/devserver/node"
	"github.com/orchestrator-zero/oz0/devserver/store"
)

// waitRunning waits for job id's status event running.
func (w *world) waitRunning(t *testing.T, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sub, err := w.store.Subscribe(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for ev := range sub.C {
		var d struct{ Status store.Status }
		if ev.Type == store.EventStatus && json.Unmarshal(ev.Data, &d) == nil && d.Status == store.StatusRunning {
			return
		}
	}
	t.Fatalf("job %s ended without running (%v)", id, sub.Err())
}

// statuses is each job's status now.
func (w *world) statuses(t *testing.T, ids ...string) []store.Status {
	t.Helper()
	var out []store.Status
	for _, id := range ids {
		j, err := w.store.GetJob(id)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, j.Status)
	}
	return out
}

func wantStatuses(t *testing.T, what string, got []store.Status, want ...store.Status) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s: statuses %v, want %v", what, got, want)
			return
		}
	}
}

// Past the node's limit, jobs wait queued and start in the order they came as sessions end; a
// queued job cancelled ends at once without running, and one left when the node closes is
// interrupted.
func TestSessionsCappedAndQueuedInOrder(t *testing.T) {
	w := newWorld(t, loadPlugin(t, map[string]string{"hang": ""}), func(c *node.Config) { c.MaxSessions = 2 })
	var ids []string
	for range 6 {
		ids = append(ids, w.submit(t, "hang", ticket).ID)
	}
	const q, r, c = store.StatusQueued, store.StatusRunning, store.StatusCancelled
	w.waitRunning(t, ids[0])
	w.waitRunning(t, ids[1])
	wantStatuses(t, "two sessions at most", w.statuses(t, ids...), r, r, q, q, q, q)

	if !w.node.Cancel(ids[0]) {
		t.Fatal("Cancel of a running job reported it not live")
	}
	w.waitRunning(t, ids[2])
	wantStatuses(t, "the first cancelled, the next in line started", w.statuses(t, ids...), c, r, r, q, q, q)

	if !w.node.Cancel(ids[3]) {
		t.Fatal("Cancel of a queued job reported it not live")
	}
	j, _ := w.store.GetJob(ids[3])
	if j.Status != c || j.Reason != node.StoppedOnRequest+" before it started" {
		t.Errorf("the queued job cancelled: %s %q, want it cancelled before it started", j.Status, j.Reason)
	}
	evs, _ := w.events(t, ids[3], nil)
	if got := types(evs); got != "status:queued status:cancelled" {
		t.Errorf("the queued job cancelled has the events %s; it never ran", got)
	}

	w.node.Cancel(ids[1])
	w.waitRunning(t, ids[4]) // the next in line, the cancelled one gone from it
	wantStatuses(t, "after the second cancel", w.statuses(t, ids...), c, c, r, c, r, q)

	if err := w.node.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	j, _ = w.store.GetJob(ids[5])
	if j.Status != store.StatusInterrupted || j.Reason != "oz0 dev stopped before the job started" {
		t.Errorf("the queued job at Close: %s %q, want interrupted before it started", j.Status, j.Reason)
	}
}

// 200 jobs submitted at once while the node runs all the sessions it may (which never end) are all
// made: a submit records the job and returns; it never waits for a session.
func TestSubmitsNeverWaitForSessions(t *testing.T) {
	w := newWorld(t, loadPlugin(t, map[string]string{"hang": ""}), func(c *node.Config) { c.MaxSessions = 2 })
	first := w.submit(t, "hang", ticket).ID
	second := w.submit(t, "hang", ticket).ID
	w.waitRunning(t, first)
	w.waitRunning(t, second)

	const n = 200
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-gate
			j, err := w.node.Submit("hang", ticket)
			ids[i], errs[i] = j.ID, err
		})
	}
	close(gate)
	wg.Wait()
	seen := map[string]bool{}
	for i := range n {
		if errs[i] != nil || ids[i] == "" || seen[ids[i]] {
			t.Fatalf("submit %d: id %q, %v", i, ids[i], errs[i])
		}
		seen[ids[i]] = true
	}
	queued, err := w.store.ListJobs(store.ListFilter{Status: []store.Status{store.StatusQueued}, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(queued) != n {
		t.Errorf("%d jobs queued, want all %d (the two sessions hang)", len(queued), n)
	}
	wantStatuses(t, "the first two", w.statuses(t, first, second), store.StatusRunning, store.StatusRunning)
}

// An agent's limits.max_concurrent holds its jobs back, and other agents' jobs go ahead of them.
func TestAgentMaxConcurrent(t *testing.T) {
	w := newWorld(t, loadPlugin(t, map[string]string{"hang": "limits: {max_concurrent: 1}\n", "sleep": ""}), func(c *node.Config) { c.MaxSessions = 3 })
	h1 := w.submit(t, "hang", ticket).ID
	h2 := w.submit(t, "hang", ticket).ID
	s1 := w.submit(t, "sleep", ticket).ID
	s2 := w.submit(t, "sleep", ticket).ID
	s3 := w.submit(t, "sleep", ticket).ID
	w.waitRunning(t, h1)
	w.waitRunning(t, s1)
	w.waitRunning(t, s2)
	const q, r = store.StatusQueued, store.StatusRunning
	wantStatuses(t, "hang at most 1, three in all", w.statuses(t, h1, h2, s1, s2, s3), r, q, r, r, q)
	w.node.Cancel(h1)
	// h2 is first in line and its agent has room again.
	w.waitRunning(t, h2)
	wantStatuses(t, "after hang's first ended", w.statuses(t, h1, h2, s1, s2, s3), store.StatusCancelled, r, r, r, q)
}

// Past one session a core, a queued job starts only while a core is free: while the machine says
// every core is busy the jobs wait, queued, and say why; once a core is free they start, up to
// MaxSessions; a machine that cannot say holds none back.
func TestSessionsPastTheCoresWaitForAFreeCore(t *testing.T) {
	var busy atomic.Bool
	var says atomic.Bool
	says.Store(true)
	busy.Store(true)
	w := newWorld(t, loadPlugin(t, map[string]string{"hang": ""}), func(c *node.Config) {
		c.MaxSessions, c.Cores = 3, 1
		c.Runnable = func() (int, bool) {
			if busy.Load() {
				return 2, says.Load() // the caller and one other: the one core is taken
			}
			return 1, says.Load() // the caller alone
		}
	})
	ids := []string{w.submit(t, "hang", ticket).ID, w.submit(t, "hang", ticket).ID, w.submit(t, "hang", ticket).ID}
	w.waitRunning(t, ids[0]) // one a core, however busy
	const q, r = store.StatusQueued, store.StatusRunning
	wantStatuses(t, "every core busy", w.statuses(t, ids...), r, q, q)
	if got, want := w.node.Waiting(ids[1]), "waiting for a session: every core is busy (oz0 dev runs more sessions than the machine's 1 core, up to --max-sessions 3, only while a core is free); no job is ahead of it"; got != want {
		t.Errorf("Waiting = %q\nwant %q", got, want)
	}

	if backlog := w.node.Ahead().Backlog; backlog == nil || !backlog() {
		t.Error("the pool of sessions made ahead is not told that jobs wait: it would fork ahead meanwhile")
	}

	busy.Store(false)
	w.waitRunning(t, ids[1])
	w.waitRunning(t, ids[2])
	wantStatuses(t, "a core free", w.statuses(t, ids...), r, r, r)
	if w.node.Ahead().Backlog() {
		t.Error("the pool is told that jobs wait when none does")
	}

	busy.Store(true)
	says.Store(false) // a machine that cannot say: up to MaxSessions, as before
	w.node.Cancel(ids[0])
	fourth := w.submit(t, "hang", ticket).ID
	w.waitRunning(t, fourth)
}

// Past one a core, at most one session starts each coreRecheck (5 ms): a session just started
// has not taken its core yet, so a burst's jobs, all finding a core free in the same instant,
// would all start. With the clock held still, the third waits however free the machine says it
// is; once the clock has moved 5 ms, it starts.
func TestSessionsPastTheCoresStartOneAtATime(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC).UnixNano())
	t.Cleanup(node.SetGateClock(func() time.Time { return time.Unix(0, clock.Load()) }))
	w := newWorld(t, loadPlugin(t, map[string]string{"hang": ""}), func(c *node.Config) {
		c.MaxSessions, c.Cores = 3, 1
		c.Runnable = func() (int, bool) { return 1, true } // the caller alone: a core is free
	})
	ids := []string{w.submit(t, "hang", ticket).ID, w.submit(t, "hang", ticket).ID, w.submit(t, "hang", ticket).ID}
	w.waitRunning(t, ids[0])
	w.waitRunning(t, ids[1]) // the first past the one core
	const q, r = store.StatusQueued, store.StatusRunning
	wantStatuses(t, "the clock held still", w.statuses(t, ids...), r, r, q)

	clock.Add(int64(5 * time.Millisecond))
	w.waitRunning(t, ids[2])
}
