package devserver

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/internal/testbin"
	"github.com/orchestrator-zero/oz0/scaffold"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// buildTestHarness is harnesskit's Go test harness (modes: ok, flood N, hang, …).
func buildTestHarness(tb testing.TB) string { return testbin.Build(tb, testbin.TestHarness) }

// goPlugin writes a plugin whose one agent, NAME, runs command.
func goPlugin(tb testing.TB, name string, command ...string) string {
	return testbin.Plugin(tb, name, command, "")
}

// templatePlugin scaffolds the byo-agent template.
func templatePlugin(tb testing.TB) string {
	tb.Helper()
	parent := tb.TempDir()
	if _, err := scaffold.Create(scaffold.Options{Name: "acme-triage", Template: "byo-agent", Description: "Sorts support tickets", Parent: parent}); err != nil {
		tb.Fatal(err)
	}
	return filepath.Join(parent, "acme-triage")
}

func startServer(tb testing.TB, dirs ...string) (*Server, *client.Client) {
	tb.Helper()
	s, err := Start(Config{PluginDirs: dirs, Ephemeral: true, Poll: -1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s, client.New(s.Context())
}

// runJob starts a job and follows it to its end; it returns the time to the first event the
// harness wrote, the events seen and the job's final status.
func runJob(ctx context.Context, c *client.Client, agent, input string, eachEvent func(apiv1.Event)) (first time.Duration, events int, status apiv1.Status, err error) {
	start := time.Now()
	j, err := c.CreateJob(ctx, apiv1.JobRequest{Agent: agent, Input: input})
	if err != nil {
		return 0, 0, "", err
	}
	err = c.Events(ctx, j.ID, 0, func(ev apiv1.Event) error {
		events++
		if first == 0 && ev.Type != apiv1.EventStatus {
			first = time.Since(start)
		}
		if eachEvent != nil {
			eachEvent(ev)
		}
		return nil
	}, nil)
	if err != nil {
		return first, events, "", err
	}
	final, err := c.Job(ctx, j.ID)
	return first, events, final.Status, err
}

func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

// BenchmarkDevStart is `oz0 dev` from nothing to serving, in process: lint and load the
// template plugin, open the store, start the gateway, the fake model and the API.
func BenchmarkDevStart(b *testing.B) {
	dir := templatePlugin(b)
	for b.Loop() {
		s, err := Start(Config{PluginDirs: []string{dir}, Ephemeral: true, Poll: -1})
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// BenchmarkSubmitToFirstEvent is a job's submit to its first event on the live stream: the
// Go test harness, and the Python template (whose first event follows a model call).
func BenchmarkSubmitToFirstEvent(b *testing.B) {
	bin := buildTestHarness(b)
	for _, tc := range []struct{ name, dir, agent string }{
		{"go", goPlugin(b, "gosay", bin, "ok"), "gosay"},
		{"python", templatePlugin(b), "acme-triage"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			_, c := startServer(b, tc.dir)
			var firsts []time.Duration
			for b.Loop() {
				first, _, st, err := runJob(context.Background(), c, tc.agent, "I was charged twice for my order", nil)
				if err != nil || st != apiv1.StatusSucceeded {
					b.Fatalf("job: %v %s", err, st)
				}
				firsts = append(firsts, first)
			}
			b.ReportMetric(float64(median(firsts).Microseconds())/1000, "ms/first-event")
		})
	}
}

// BenchmarkConcurrentPythonJobs runs 100 jobs of the Python template at once on the fake model:
// how long they take together, how many fail (the goal is none), and the dev server's memory.
func BenchmarkConcurrentPythonJobs(b *testing.B) {
	_, c := startServer(b, templatePlugin(b))
	const jobs = 100
	for b.Loop() {
		var wg sync.WaitGroup
		var mu sync.Mutex
		errs := 0
		var peakHeap uint64
		stop := make(chan struct{})
		go func() { // sample the heap while the jobs run
			var ms runtime.MemStats
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				runtime.ReadMemStats(&ms)
				mu.Lock()
				peakHeap = max(peakHeap, ms.HeapInuse)
				mu.Unlock()
			}
		}()
		start := time.Now()
		for range jobs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, st, err := runJob(context.Background(), c, "acme-triage", "I was charged twice for my order", nil)
				if err != nil || st != apiv1.StatusSucceeded {
					mu.Lock()
					errs++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(stop)
		b.ReportMetric(time.Since(start).Seconds(), "s/100-jobs")
		b.ReportMetric(float64(errs), "errors")
		b.ReportMetric(float64(peakHeap)/(1<<20), "MiB-peak-heap")
		b.ReportMetric(float64(peakRSS())/(1<<20), "MiB-peak-rss")
	}
}

// peakRSS is the process's peak resident set (VmHWM), the node's memory as the OS counts it.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkEventsThroughDevServer is a chatty Go harness's events per second, from its stdout
// through the supervisor into the store and out of the live stream as `oz0 run --json` prints
// them (JSON lines).
func BenchmarkEventsThroughDevServer(b *testing.B) {
	const n = 100_000
	bin := buildTestHarness(b)
	_, c := startServer(b, goPlugin(b, "flood", bin, "flood", strconv.Itoa(n)))
	var line []byte
	for b.Loop() {
		start := time.Now()
		_, events, st, err := runJob(context.Background(), c, "flood", "go", func(ev apiv1.Event) {
			line = append(ev.AppendJSON(line[:0]), '\n') // as oz0 run --json prints it
			_, _ = io.Discard.Write(line)
		})
		if err != nil || st != apiv1.StatusSucceeded {
			b.Fatalf("job: %v %s", err, st)
		}
		if events < n {
			b.Fatalf("%d events, want at least %d", events, n)
		}
		b.ReportMetric(float64(events)/time.Since(start).Seconds(), "events/s")
	}
}

// BenchmarkSubmitsAtOnce is the API's answer to 200 jobs submitted at once while the node runs
// all the sessions it may (harnesses that never end), beside a submit to the server at rest in
// the same run: a submit records the job and returns, whatever the sessions do. In process, with
// the tier the machine allows, so that what it measures is the server's path, not Python's start.
func BenchmarkSubmitsAtOnce(b *testing.B) {
	const jobs = 200
	s, c := startServer(b, goPlugin(b, "hang", buildTestHarness(b), "hang"))
	ctx := context.Background()
	var rest, p50s, p99s []time.Duration
	for b.Loop() {
		// At rest: one submit, then cancelled (queued, it ends at once).
		start := time.Now()
		j, err := c.CreateJob(ctx, apiv1.JobRequest{Agent: "hang", Input: "x"})
		rest = append(rest, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Cancel(ctx, j.ID); err != nil {
			b.Fatal(err)
		}
		lat := make([]time.Duration, jobs)
		ids := make([]string, jobs)
		var wg sync.WaitGroup
		gate := make(chan struct{})
		for i := range jobs {
			wg.Go(func() {
				<-gate
				start := time.Now()
				j, err := c.CreateJob(ctx, apiv1.JobRequest{Agent: "hang", Input: "x"})
				lat[i], ids[i] = time.Since(start), j.ID
				if err != nil {
					b.Error(err)
				}
			})
		}
		close(gate)
		wg.Wait()
		slices.Sort(lat)
		p50s, p99s = append(p50s, lat[jobs/2]), append(p99s, lat[jobs*99/100])
		b.StopTimer()
		for _, id := range ids {
			s.node.Cancel(id)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(median(rest).Microseconds())/1000, "at-rest-ms")
	b.ReportMetric(float64(median(p50s).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(median(p99s).Microseconds())/1000, "p99-ms")
}
