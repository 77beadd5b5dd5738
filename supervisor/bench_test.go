package supervisor_test

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/fakemodel"
	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/internal/testbin"
	"github.com/orchestrator-zero/oz0/supervisor"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

// BenchmarkEvents is the supervisor's throughput: a Go harness (the SDK) says b.N times, and the
// supervisor reads, decodes and delivers each to a sink. The process's start is included.
// Goal: 100,000 events/s or more.
func BenchmarkEvents(b *testing.B) {
	sp := spec(b, "flood", strconv.Itoa(b.N))
	var says atomic.Int64
	sp.Sink = func(e harnesskit.Event) {
		if e.Kind == harnesskit.EventSay {
			says.Add(1)
		}
	}
	b.ResetTimer()
	start := time.Now()
	end, err := supervisor.Run(context.Background(), sp)
	elapsed := time.Since(start)
	b.StopTimer()
	if err != nil || end.Status != harnesskit.Completed || says.Load() != int64(b.N) {
		b.Fatalf("%v %s: %d events of %d", err, end, says.Load(), b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
}

// BenchmarkEventsBaseline is the same harness writing to a pipe that exec.Cmd copies to
// io.Discard: what the harness's side costs, for reading BenchmarkEvents as a ratio.
func BenchmarkEventsBaseline(b *testing.B) {
	cmd := exec.Command(harnessBinary(b), "flood", strconv.Itoa(b.N))
	req := spec(b, "flood").Request
	req.Protocol = harnesskit.Protocol
	line, _ := harnesskit.Encode(req)
	cmd.Stdin = bytes.NewReader(append(line, '\n'))
	cmd.Stdout = io.Discard
	b.ResetTimer()
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// firstEvent runs sessions of sp and reports the median time from Start to the first event
// (ms/first-event) next to a baseline measured in the same run (baseline-ms) and their ratio.
func firstEvent(b *testing.B, sp supervisor.Spec, baseline func() error) {
	b.Helper()
	var firsts, bases []time.Duration
	for b.Loop() {
		firsts = append(firsts, timeToFirstEvent(b, sp))

		t := time.Now()
		if err := baseline(); err != nil {
			b.Fatal(err)
		}
		bases = append(bases, time.Since(t))
	}
	f, base := median(firsts), median(bases)
	b.ReportMetric(ms(f), "ms/first-event")
	b.ReportMetric(ms(base), "baseline-ms")
	b.ReportMetric(float64(f)/float64(base), "ratio")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkFirstEventGo: start to first event of a Go SDK harness. Goal: 10 ms or less. The
// baseline is the same binary started with os/exec, exiting at once.
func BenchmarkFirstEventGo(b *testing.B) {
	sp := spec(b, "ok")
	exe := harnessBinary(b)
	firstEvent(b, sp, func() error { return exec.Command(exe, "exit").Run() })
}

// BenchmarkFirstEventPython: start to first event of the byo-agent template (its say "Sorting the
// ticket. "), goal 150 ms or less; the baseline is the same interpreter started with os/exec
// running `pass`. venv: with the plugin's .venv (as after `uv sync`; made here with
// `python3 -m venv --without-pip`). path: python3 from PATH, as without a venv.
func BenchmarkFirstEventPython(b *testing.B) {
	python := testbin.Python(b)
	ts := httptest.NewServer(fakemodel.New(nil))
	defer ts.Close()

	b.Run("venv", func(b *testing.B) {
		dir := newTemplatePlugin(b)
		if out, err := exec.Command(python, "-m", "venv", "--without-pip", filepath.Join(dir, ".venv")).CombinedOutput(); err != nil {
			b.Skipf("cannot make a venv: %v\n%s", err, out)
		}
		venvPython := filepath.Join(dir, ".venv", "bin", "python")
		sp := templateSpec(b, dir, ts.URL)
		firstEvent(b, sp, func() error { return exec.Command(venvPython, "-c", "pass").Run() })
	})
	b.Run("path", func(b *testing.B) {
		dir := newTemplatePlugin(b)
		sp := templateSpec(b, dir, ts.URL)
		py3, _ := exec.LookPath("python3")
		firstEvent(b, sp, func() error {
			cmd := exec.Command(py3, "-c", "pass")
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir()}
			return cmd.Run()
		})
	})
}

// BenchmarkSpawnTrue is the floor of any session: os/exec starting /bin/true and waiting for it.
func BenchmarkSpawnTrue(b *testing.B) {
	var ds []time.Duration
	for b.Loop() {
		t := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t))
	}
	b.ReportMetric(ms(median(ds)), "ms/spawn")
}

// BenchmarkFirstEventSandbox: start to first event in each sandbox tier, the Go SDK harness and
// the template from a .venv. Each iteration also runs the same session without a sandbox (tier
// none), so that the tier's cost (added-ms: the difference of the medians) is measured under the
// same load.
func BenchmarkFirstEventSandbox(b *testing.B) {
	python := testbin.Python(b)
	model := fakemodel.New(nil)
	ts := httptest.NewServer(model)
	defer ts.Close()
	dir := newTemplatePlugin(b)
	os.Chmod(dir, 0o755) // a root node's sandboxed harness runs as nobody
	if out, err := exec.Command(python, "-m", "venv", "--without-pip", filepath.Join(dir, ".venv")).CombinedOutput(); err != nil {
		b.Skipf("cannot make a venv: %v\n%s", err, out)
	}
	for _, h := range []struct {
		name string
		spec func() supervisor.Spec
	}{
		{"go", func() supervisor.Spec { sp := spec(b, "ok"); os.Chmod(sp.PluginDir, 0o755); return sp }},
		{"python", func() supervisor.Spec { return templateSpec(b, dir, ts.URL) }},
		{"strands-ts", func() supervisor.Spec { return nodeTemplateSpec(b, "strands-ts", ts.URL) }},
	} {
		for _, tier := range []sandbox.Tier{sandbox.Standard, sandbox.Strict} {
			b.Run(h.name+"/"+string(tier), func(b *testing.B) {
				if err := sandbox.Check(tier); err != nil {
					b.Skip(err)
				}
				sp := h.spec()
				sp.Sandbox = supervisor.Sandbox{Tier: tier, Gateway: model}
				if sp.Env.AnthropicBaseURL == "" {
					sp.Env.AnthropicBaseURL = ts.URL
				}
				plain := h.spec()
				var boxed, none []time.Duration
				for b.Loop() {
					boxed = append(boxed, timeToFirstEvent(b, sp))
					none = append(none, timeToFirstEvent(b, plain))
				}
				f, base := median(boxed), median(none)
				b.ReportMetric(ms(f), "ms/first-event")
				b.ReportMetric(ms(base), "none-ms")
				b.ReportMetric(ms(f-base), "added-ms")
			})
		}
	}
}

// timeToFirstEvent runs a session of sp to its end and returns the time from Start to its first
// event.
func timeToFirstEvent(b *testing.B, sp supervisor.Spec) time.Duration {
	var first atomic.Int64
	start := time.Now()
	sp.Sink = func(e harnesskit.Event) {
		if e.Kind != harnesskit.EventStderr {
			first.CompareAndSwap(0, int64(time.Since(start)))
		}
	}
	end, err := supervisor.Run(context.Background(), sp)
	if err != nil || end.Status != harnesskit.Completed {
		b.Fatalf("%v %s", err, end)
	}
	return time.Duration(first.Load())
}
