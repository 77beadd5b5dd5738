package store

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A say event of a typical size (≈ 100 bytes).
var benchData = json.RawMessage(`{"text":"Sorting the ticket: the customer was charged twice for order 12345, so billing it is. "}`)

func reportRate(b *testing.B, s *Store, before Stats, events int, start time.Time) {
	b.ReportMetric(float64(events)/time.Since(start).Seconds(), "events/s")
	st := s.Stats()
	if c := st.Commits - before.Commits; c > 0 {
		b.ReportMetric(float64(st.Events-before.Events)/float64(c), "events/commit")
	}
}

// One caller, one event per Append: each call waits for its own commit.
func BenchmarkAppend(b *testing.B) {
	s := newStore(b)
	j := newJob(b, s)
	b.SetBytes(int64(len(benchData)))
	b.ResetTimer()
	before := s.Stats()
	start := time.Now()
	for b.Loop() {
		if _, err := s.Append(j.ID, EventSay, benchData); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, s, before, b.N, start)
}

// Many jobs appending at once: 64 goroutines (32 per core here), one event per Append, spread
// over 64 jobs (a job each) or 8; the group commit batches them.
func BenchmarkAppendParallel(b *testing.B) {
	for _, jobs := range []int{64, 8} {
		b.Run(fmt.Sprintf("jobs=%d", jobs), func(b *testing.B) {
			s := newStore(b)
			var next atomic.Int64
			ids := make([]string, jobs)
			for i := range ids {
				ids[i] = newJob(b, s).ID
			}
			b.SetBytes(int64(len(benchData)))
			b.SetParallelism(64 / runtime.GOMAXPROCS(0))
			b.ResetTimer()
			before := s.Stats()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				id := ids[int(next.Add(1))%len(ids)]
				for pb.Next() {
					if _, err := s.Append(id, EventSay, benchData); err != nil {
						b.Error(err)
						return
					}
				}
			})
			reportRate(b, s, before, b.N, start)
		})
	}
}

// Events per second from the appenders to a live subscriber that has received them all.
func BenchmarkAppendSubscribe(b *testing.B) {
	for _, c := range []struct{ appenders, batch int }{{1, 1}, {64, 1}, {1, 100}, {8, 100}} {
		b.Run(fmt.Sprintf("appenders=%d/batch=%d", c.appenders, c.batch), func(b *testing.B) {
			s := newStore(b)
			j := newJob(b, s)
			sub, err := s.Subscribe(b.Context(), j.ID, 1)
			if err != nil {
				b.Fatal(err)
			}
			batch := make([]NewEvent, c.batch)
			for i := range batch {
				batch[i] = NewEvent{Type: EventSay, Data: benchData}
			}
			b.SetBytes(int64(len(benchData)))
			b.ResetTimer()
			before := s.Stats()
			start := time.Now()
			received := make(chan int64)
			go func() {
				var n int64
				for e := range sub.C {
					n++
					if e.Seq != n+1 {
						b.Errorf("seq %d after %d events", e.Seq, n)
					}
					if n == int64(b.N) {
						break
					}
				}
				received <- n
			}()
			var todo atomic.Int64
			todo.Store(int64(b.N))
			var wg sync.WaitGroup
			for range c.appenders {
				wg.Go(func() {
					for {
						k := int64(c.batch)
						left := todo.Add(-k)
						if left <= -k {
							return
						}
						if left < 0 {
							k += left
						}
						var err error
						if c.batch == 1 {
							_, err = s.Append(j.ID, EventSay, benchData)
						} else {
							_, err = s.AppendBatch(j.ID, batch[:k])
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if n := <-received; n != int64(b.N) {
				b.Fatalf("received %d of %d", n, b.N)
			}
			reportRate(b, s, before, b.N, start)
			b.StopTimer()
			sub.Close()
		})
	}
}

// 200 jobs made at once, as 200 `oz0 run --detach` at once make them: each CreateJob waits for its
// commit, and the group commit puts many in one. It reports, as medians over the iterations, each
// call's latency (p50, p99 of an iteration's 200), the time until all 200 are made, and how many
// commits that took.
func BenchmarkCreateJobsAtOnce(b *testing.B) {
	const n = 200
	s := newStore(b)
	var p50s, p99s, alls, commits []float64
	for b.Loop() {
		lat := make([]time.Duration, n)
		var wg sync.WaitGroup
		gate := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-gate
				t := time.Now()
				newJob(b, s)
				lat[i] = time.Since(t)
			})
		}
		before := s.Stats()
		start := time.Now()
		close(gate)
		wg.Wait()
		alls = append(alls, msOf(time.Since(start)))
		slices.Sort(lat)
		p50s = append(p50s, msOf(lat[n/2]))
		p99s = append(p99s, msOf(lat[n*99/100]))
		commits = append(commits, float64(s.Stats().Commits-before.Commits))
	}
	b.ReportMetric(median(p50s), "p50-ms")
	b.ReportMetric(median(p99s), "p99-ms")
	b.ReportMetric(median(alls), "all-ms")
	b.ReportMetric(median(commits), "commits")
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}

// BenchmarkOpen is the store's open and close, as oz0 dev's start pays it: on a new state
// directory (the schema made), as --ephemeral opens it (never synced), and on one made before (a
// restart's).
func BenchmarkOpen(b *testing.B) {
	b.Run("ephemeral", func(b *testing.B) {
		for b.Loop() {
			s, err := OpenWith(b.TempDir(), Options{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
	})
	b.Run("existing", func(b *testing.B) {
		dir := b.TempDir()
		s, err := Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
		for b.Loop() {
			s, err := Open(dir)
			if err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
	})
}
