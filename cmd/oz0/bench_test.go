package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/internal/testbin"
	"github.com/orchestrator-zero/oz0/scaffold"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

// These benchmarks time whole oz0 processes, as a user or CI meets them: start-up included.
// BenchmarkColdVersion is the baseline: the cost of starting the binary at all.

// oz0Binary builds the real binary into the benchmark's temporary directory (the build cache
// makes every build after the first a link). OZ0_BENCH_BIN names a binary to time instead, such
// as an earlier build, for a before-and-after under the same load.
func oz0Binary(b *testing.B) string {
	b.Helper()
	if bin := os.Getenv("OZ0_BENCH_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(b.TempDir(), "oz0")
	goBuild(b, ".", "-o", bin, ".")
	return bin
}

// goBuild runs go build -trimpath with args in dir, without cgo, as releases are built.
func goBuild(b *testing.B, dir string, args ...string) {
	b.Helper()
	cmd := exec.Command("go", append([]string{"build", "-trimpath"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build %v: %v\n%s", args, err, out)
	}
}

func runBin(b *testing.B, bin string, dir string, args ...string) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("oz0 %v: %v\n%s", args, err, out)
	}
}

func BenchmarkColdVersion(b *testing.B) {
	bin := oz0Binary(b)
	for b.Loop() {
		runBin(b, bin, "", "version")
	}
}

func BenchmarkColdPluginLintTemplate(b *testing.B) {
	bin := oz0Binary(b)
	parent := b.TempDir()
	if _, err := scaffold.Create(scaffold.Options{Name: "acme-triage", Template: "byo-agent", Description: "Sorts support tickets", Parent: parent}); err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(parent, "acme-triage")
	for b.Loop() {
		runBin(b, bin, dir, "plugin", "lint")
	}
}

func BenchmarkColdPluginNew(b *testing.B) {
	bin := oz0Binary(b)
	parent := b.TempDir()
	i := 0
	for b.Loop() {
		runBin(b, bin, parent, "plugin", "new", fmt.Sprintf("p%d", i), "--template", "byo-agent", "--description", "Sorts support tickets")
		i++
	}
}

// BenchmarkColdDevReady is `oz0 dev` as a user starts it, process start to ready (the
// --ready-file written), on the scaffolded template; then it is stopped with SIGINT, untimed.
func BenchmarkColdDevReady(b *testing.B) {
	bin := oz0Binary(b)
	parent := b.TempDir()
	if _, err := scaffold.Create(scaffold.Options{Name: "acme-triage", Template: "byo-agent", Description: "Sorts support tickets", Parent: parent}); err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(parent, "acme-triage")
	ready := filepath.Join(b.TempDir(), "ctx")
	for b.Loop() {
		cmd := exec.Command(bin, "dev", "--ephemeral", "--ready-file", ready)
		cmd.Dir = dir
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := os.Stat(ready); err == nil {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				b.Fatal("oz0 dev not ready in 10 s")
			}
			time.Sleep(200 * time.Microsecond)
		}
		b.StopTimer()
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		os.Remove(ready)
		b.StartTimer()
	}
}

// BenchmarkColdSubmitToFirstEvent is a job's submit to its first event on the live stream,
// through a real `oz0 dev` process, in each sandbox tier: the Go test harness (its first event is
// its first line) and the Python template run from a .venv (as after `uv sync`; made here with
// `python3 -m venv --without-pip`, so that every tier runs the same interpreter directly). A
// second `oz0 dev` in tier none runs the same job between each two, so that the tier's cost
// (added-ms, the difference of the medians) is measured under the same load.
func BenchmarkColdSubmitToFirstEvent(b *testing.B) {
	bin := oz0Binary(b)
	harness := testbin.Build(b, testbin.TestHarness)
	goDir := testbin.Plugin(b, "gosay", []string{harness, "ok"}, "")
	parent := b.TempDir()
	if _, err := scaffold.Create(scaffold.Options{Name: "acme-triage", Template: "byo-agent", Description: "Sorts support tickets", Parent: parent}); err != nil {
		b.Fatal(err)
	}
	pyDir := filepath.Join(parent, "acme-triage")
	python, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		b.Skipf("no python3: %v", err)
	}
	if out, err := exec.Command(strings.TrimSpace(string(python)), "-m", "venv", "--without-pip", filepath.Join(pyDir, ".venv")).CombinedOutput(); err != nil {
		b.Skipf("cannot make a venv: %v\n%s", err, out)
	}

	for _, h := range []struct{ name, dir, agent string }{{"go", goDir, "gosay"}, {"python", pyDir, "acme-triage"}} {
		for _, tier := range []sandbox.Tier{sandbox.Standard, sandbox.Strict} {
			b.Run(h.name+"/"+string(tier), func(b *testing.B) {
				if err := sandbox.Check(tier); err != nil {
					b.Skip(err)
				}
				boxed, plain := startDev(b, bin, h.dir, tier), startDev(b, bin, h.dir, sandbox.None)
				var firsts, nones []time.Duration
				for b.Loop() {
					firsts = append(firsts, firstEvent(b, boxed, h.agent))
					nones = append(nones, firstEvent(b, plain, h.agent))
				}
				f, none := medianOf(firsts), medianOf(nones)
				b.ReportMetric(ms(f), "ms/first-event")
				b.ReportMetric(ms(none), "none-ms")
				b.ReportMetric(ms(f-none), "added-ms")
			})
		}
	}
}

// medianOf is the median of v (its upper one, for an even count).
func medianOf[T cmp.Ordered](v []T) T {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// startDev starts `oz0 dev` on dir in tier and returns a client of it; it stops at the end.
func startDev(b *testing.B, bin, dir string, tier sandbox.Tier) *client.Client {
	ready := filepath.Join(b.TempDir(), "ctx")
	ctx, err := apiv1.ParseContext(startReady(b, nil, ready, bin, "dev", "--ephemeral", "--plugin", dir, "--sandbox", string(tier), "--ready-file", ready))
	if err != nil {
		b.Fatal(err)
	}
	return client.New(ctx)
}

// firstEvent submits a job and follows it to its end; it returns the time to its first event
// that is not a status change.
func firstEvent(b *testing.B, c *client.Client, agent string) time.Duration {
	ctx := context.Background()
	start := time.Now()
	j, err := c.CreateJob(ctx, apiv1.JobRequest{Agent: agent, Input: "I was charged twice for my order"})
	if err != nil {
		b.Fatal(err)
	}
	var first time.Duration
	err = c.Events(ctx, j.ID, 0, func(ev apiv1.Event) error {
		if first == 0 && ev.Type != apiv1.EventStatus {
			first = time.Since(start)
		}
		return nil
	}, nil)
	if err != nil {
		b.Fatal(err)
	}
	if final, err := c.Job(ctx, j.ID); err != nil || final.Status != apiv1.StatusSucceeded {
		b.Fatalf("job %s: %v %s %s", j.ID, err, final.Status, final.Reason)
	}
	return first
}
