package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// collect reads a subscription to its end.
func collect(t *testing.T, sub *Subscription) []Event {
	t.Helper()
	var evs []Event
	timeout := time.After(30 * time.Second)
	for {
		select {
		case e, ok := <-sub.C:
			if !ok {
				return evs
			}
			evs = append(evs, e)
		case <-timeout:
			t.Fatalf("the subscription did not end; %d events so far", len(evs))
		}
	}
}

func checkSeqs(t *testing.T, evs []Event, from, to int64) {
	t.Helper()
	if int64(len(evs)) != to-from+1 {
		t.Fatalf("%d events, want seqs %d..%d", len(evs), from, to)
	}
	for i, e := range evs {
		if e.Seq != from+int64(i) {
			t.Fatalf("event %d has seq %d, want %d", i, e.Seq, from+int64(i))
		}
	}
}

func TestSubscribeReplayThenLive(t *testing.T) {
	s := newStore(t)
	j := newJob(t, s)
	for i := range 10 {
		s.Append(j.ID, EventSay, json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)))
	}
	sub, err := s.Subscribe(t.Context(), j.ID, 3)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for i := range 10 {
			s.Append(j.ID, EventSay, json.RawMessage(fmt.Sprintf(`{"i":%d}`, 10+i)))
		}
		s.SetStatus(j.ID, StatusRunning, "")
		s.FinishJob(j.ID, StatusSucceeded, "", json.RawMessage(`"done"`))
	}()
	evs := collect(t, sub)
	if sub.Err() != nil {
		t.Fatalf("Err %v", sub.Err())
	}
	checkSeqs(t, evs, 4, 23)
	if !evs[len(evs)-1].Terminal() {
		t.Fatal("the last event is not the terminal one")
	}
}

func TestSubscribeEndedJob(t *testing.T) {
	s := newStore(t)
	j := newJob(t, s)
	s.Append(j.ID, EventSay, nil)
	s.SetStatus(j.ID, StatusCancelled, "")
	for after, want := range map[int64]int{0: 3, 1: 2, 2: 1, 3: 0, 99: 0} {
		sub, err := s.Subscribe(t.Context(), j.ID, after)
		if err != nil {
			t.Fatal(err)
		}
		evs := collect(t, sub)
		if len(evs) != want || sub.Err() != nil {
			t.Errorf("after %d: %d events, %v", after, len(evs), sub.Err())
		}
	}
	if _, err := s.Subscribe(t.Context(), "job_aaaaaaaaaaaaaaaaaaaa", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown job: %v", err)
	}
}

func TestSubscribeEnds(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	j := newJob(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	byCtx, _ := s.Subscribe(ctx, j.ID, 0)
	byClose, _ := s.Subscribe(t.Context(), j.ID, 0)
	byStore, _ := s.Subscribe(t.Context(), j.ID, 0)
	for _, sub := range []*Subscription{byCtx, byClose, byStore} {
		if e := <-sub.C; e.Seq != 1 {
			t.Fatal(e)
		}
	}
	cancel()
	collect(t, byCtx)
	if !errors.Is(byCtx.Err(), context.Canceled) {
		t.Errorf("by ctx: %v", byCtx.Err())
	}
	byClose.Close()
	collect(t, byClose)
	if byClose.Err() == nil {
		t.Errorf("by Close: nil")
	}
	done := make(chan struct{})
	go func() { collect(t, byStore); close(done) }()
	s.Close()
	<-done
	if !errors.Is(byStore.Err(), ErrClosed) {
		t.Errorf("by the store's Close: %v", byStore.Err())
	}
	if _, err := s.Subscribe(t.Context(), j.ID, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("Subscribe after Close: %v", err)
	}
}

// A subscriber that reads nothing does not hold up the writers, and later gets every event, in
// order, from the database.
func TestSlowSubscriberCatchesUp(t *testing.T) {
	s := newStore(t, Options{LiveBuffer: 8})
	j := newJob(t, s)
	sub, _ := s.Subscribe(t.Context(), j.ID, 0)
	fast, _ := s.Subscribe(t.Context(), j.ID, 0)
	var fastEvs []Event
	fastDone := make(chan struct{})
	go func() { fastEvs = collect(t, fast); close(fastDone) }()
	const n = 3000
	start := time.Now()
	for i := range n / 10 {
		batch := make([]NewEvent, 10)
		for k := range batch {
			batch[k] = NewEvent{Type: EventSay, Data: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i*10+k))}
		}
		if _, err := s.AppendBatch(j.ID, batch); err != nil {
			t.Fatal(err)
		}
	}
	s.SetStatus(j.ID, StatusFailed, "x")
	t.Logf("%d events appended in %v with a stalled subscriber", n, time.Since(start))
	evs := collect(t, sub)
	checkSeqs(t, evs, 1, n+2)
	if s.Stats().Lags == 0 {
		t.Error("the stalled subscriber never lagged: the test tests nothing")
	}
	<-fastDone
	checkSeqs(t, fastEvs, 1, n+2)
}

// The brief's resume test: under concurrent appends, a subscriber that disconnects at random
// points and resumes from the last Seq it saw gets every event exactly once, in order.
func TestResumeUnderConcurrentAppends(t *testing.T) {
	for _, buf := range []int{4, 1024} {
		t.Run(fmt.Sprintf("buffer=%d", buf), func(t *testing.T) {
			s := newStore(t, Options{LiveBuffer: buf, MaxBatch: 100})
			j := newJob(t, s)
			s.SetStatus(j.ID, StatusRunning, "")
			const appenders, per = 8, 400
			var appended atomic.Int64
			var wg sync.WaitGroup
			for g := range appenders {
				wg.Go(func() {
					for i := range per {
						var err error
						if i%25 == 0 {
							_, err = s.AppendBatch(j.ID, []NewEvent{{Type: EventSay, Data: json.RawMessage(`{"b":0}`)}, {Type: EventSay, Data: json.RawMessage(`{"b":1}`)}, {Type: EventSay, Data: json.RawMessage(`{"b":2}`)}})
							appended.Add(3)
						} else {
							_, err = s.Append(j.ID, EventSay, json.RawMessage(fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)))
							appended.Add(1)
						}
						if err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			go func() {
				wg.Wait()
				s.FinishJob(j.ID, StatusSucceeded, "", json.RawMessage(`"ok"`))
			}()

			rng := rand.New(rand.NewPCG(1, uint64(buf)))
			var got []Event
			var last int64
			resumes := 0
			for {
				ctx, cancel := context.WithCancel(t.Context())
				sub, err := s.Subscribe(ctx, j.ID, last)
				if err != nil {
					t.Fatal(err)
				}
				take := rng.IntN(300) + 1
				ended := false
				for e := range sub.C {
					got = append(got, e)
					last = e.Seq
					if rng.IntN(50) == 0 {
						time.Sleep(time.Millisecond) // a slow reader now and then
					}
					if take--; take == 0 {
						break
					}
				}
				if take > 0 { // C was closed
					ended = sub.Err() == nil
					if !ended {
						t.Fatalf("subscription ended: %v", sub.Err())
					}
				}
				cancel()
				for range sub.C { // drain what was in flight: a client that went away never saw it
				}
				if ended {
					break
				}
				resumes++
			}
			total := 2 + appended.Load() + 1
			checkSeqs(t, got, 1, total)
			if !got[len(got)-1].Terminal() {
				t.Fatal("did not end with the terminal event")
			}
			t.Logf("%d events, %d resumes, %d lags", len(got), resumes, s.Stats().Lags)
		})
	}
}

// MarkInterrupted's status events, of several jobs in one request, reach each job's subscribers.
func TestSubscribeSeesInterrupt(t *testing.T) {
	s := newStore(t)
	a, b := newJob(t, s), newJob(t, s)
	s.SetStatus(b.ID, StatusRunning, "")
	subA, _ := s.Subscribe(t.Context(), a.ID, 0)
	subB, _ := s.Subscribe(t.Context(), b.ID, 0)
	<-subA.C
	<-subB.C
	<-subB.C
	if _, err := s.MarkInterrupted("stopping"); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []*Subscription{subA, subB} {
		evs := collect(t, sub)
		if len(evs) != 1 || !evs[0].Terminal() || sub.Err() != nil {
			t.Fatalf("%+v %v", evs, sub.Err())
		}
	}
}

// A subscriber that reads nothing holds no more than maxLiveBytes of event data in its live
// buffer (beside the 64 events its channel holds), however few the events: 120 events of 256 KiB
// (far under LiveBuffer events) send it back to the database, from which it later gets every one,
// in order.
func TestSlowSubscriberBoundedInBytes(t *testing.T) {
	s := newStore(t, Options{LiveBuffer: 1024})
	j := newJob(t, s)
	sub, _ := s.Subscribe(t.Context(), j.ID, 0)
	data := json.RawMessage(`{"text":"` + strings.Repeat("s", 256<<10) + `"}`)
	const n = 120
	for range n {
		if _, err := s.Append(j.ID, EventSay, data); err != nil {
			t.Fatal(err)
		}
	}
	if s.Stats().Lags == 0 {
		t.Errorf("a subscriber that read nothing holds %d MiB of events", n/4)
	}
	s.SetStatus(j.ID, StatusFailed, "x")
	checkSeqs(t, collect(t, sub), 1, n+2)
}

// A live buffer holds what is pending and no more: its bound is a limit, not a size made up
// front. It keeps the order, marks the reader lagging (and kicks it once) when full or past
// maxLiveBytes, and lets go of a grown queue once emptied.
func TestLiveBufferHoldsWhatIsPending(t *testing.T) {
	var lags atomic.Int64
	b := newLiveBuffer(100, &lags, func(int) int64 { return 1 })
	if cap(b.queue) != 0 {
		t.Fatalf("a new buffer holds room for %d values; want none", cap(b.queue))
	}
	for i := range 3 {
		b.offer(i)
	}
	if cap(b.queue) > 4 {
		t.Errorf("3 pending values hold room for %d", cap(b.queue))
	}
	for want := range 3 {
		if v, ok := b.take(); !ok || v != want {
			t.Fatalf("take = %d, %v; want %d, true", v, ok, want)
		}
	}
	if _, ok := b.take(); ok {
		t.Fatal("took a value from an empty buffer")
	}

	for i := range 100 { // grows to its bound
		b.offer(i)
	}
	if lags.Load() != 0 {
		t.Fatalf("lagging at %d pending values of 100", len(b.queue)-b.head)
	}
	b.offer(100) // one past it
	if lags.Load() != 1 {
		t.Fatalf("lags = %d past the bound; want 1", lags.Load())
	}
	select {
	case <-b.kick:
	default:
		t.Fatal("a lagging reader was not kicked")
	}
	b.offer(101) // lagging: sent nothing more
	for want := range 100 {
		if v, ok := b.take(); !ok || v != want {
			t.Fatalf("take = %d, %v; want %d, true", v, ok, want)
		}
	}
	if _, ok := b.take(); ok {
		t.Fatal("a lagging reader was sent values past the bound")
	}
	if cap(b.queue) > keptQueue {
		t.Errorf("an emptied buffer keeps room for %d values; want at most %d", cap(b.queue), keptQueue)
	}
	b.unlag()
	b.offer(102)
	if v, ok := b.take(); !ok || v != 102 {
		t.Fatalf("after unlag, take = %d, %v; want 102, true", v, ok)
	}

	big := newLiveBuffer(100, &lags, func(v int) int64 { return int64(v) })
	big.offer(maxLiveBytes)
	big.offer(1) // past the bytes' bound with one pending
	if lags.Load() != 2 {
		t.Fatalf("lags = %d past maxLiveBytes; want 2", lags.Load())
	}
}
