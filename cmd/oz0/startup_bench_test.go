package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/scaffold"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

// BenchmarkStartup measures start-up against the floor of starting any Go binary on the machine:
// a Go hello-world, built in the same run and timed between each two measurements, so that each
// ratio is of figures taken under the same load. Every figure is a real process, started and
// waited for from here:
//
//   - version: `oz0 version`, start to exit (goal: at most 2× the floor);
//   - dev/TIER: `oz0 dev` on the guide's plugin, start to the first 200 of its API (GET
//     /api/v1/info with the token of its --ready-file, polled) (goal: at most 6× the floor);
//   - run: `oz0 run acme-triage "I was charged twice for my order"` of the guide, start to exit,
//     against an `oz0 dev` in tier none and one in standard, in turn (goal: none no slower).
//
// The plugin is the byo-agent template as `oz0 plugin new` writes it, without a .venv: python3 is
// what PATH has (on a machine with pyenv, its shim).
func BenchmarkStartup(b *testing.B) {
	bin := oz0Binary(b)
	hello := helloBinary(b)
	parent := b.TempDir()
	if _, err := scaffold.Create(scaffold.Options{Name: "acme-triage", Template: "byo-agent", Description: "Sorts support tickets", Parent: parent}); err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(parent, "acme-triage")
	floor := func(b *testing.B) time.Duration { return timeProcess(b, hello) }

	b.Run("version", func(b *testing.B) {
		var floors, versions []time.Duration
		for b.Loop() {
			floors = append(floors, floor(b))
			versions = append(versions, timeProcess(b, bin, "version"))
		}
		reportRatio(b, versions, floors)
	})
	for _, tier := range []sandbox.Tier{sandbox.None, sandbox.Standard, sandbox.Strict} {
		b.Run("dev/"+string(tier), func(b *testing.B) {
			if err := sandbox.Check(tier); err != nil {
				b.Skip(err)
			}
			ready := filepath.Join(b.TempDir(), "ctx")
			var floors, devs []time.Duration
			for b.Loop() {
				floors = append(floors, floor(b))
				devs = append(devs, devFirst200(b, bin, dir, tier, ready))
			}
			reportRatio(b, devs, floors)
		})
	}
	b.Run("run", func(b *testing.B) {
		if err := sandbox.Check(sandbox.Standard); err != nil {
			b.Skip(err)
		}
		ctxs := map[sandbox.Tier]string{}
		for _, tier := range []sandbox.Tier{sandbox.None, sandbox.Standard} {
			ready := filepath.Join(b.TempDir(), "ctx")
			ctxs[tier] = startReady(b, nil, ready, bin, "dev", "--ephemeral", "--plugin", dir, "--sandbox", string(tier), "--ready-file", ready)
			// The first job of each (its tier's first init, the interpreter asked for once) is
			// not a figure.
			runGuideJob(b, bin, dir, ctxs[tier])
		}
		var floors, nones, standards []time.Duration
		for b.Loop() {
			floors = append(floors, floor(b))
			nones = append(nones, runGuideJob(b, bin, dir, ctxs[sandbox.None]))
			standards = append(standards, runGuideJob(b, bin, dir, ctxs[sandbox.Standard]))
		}
		none, std := medianOf(nones), medianOf(standards)
		b.ReportMetric(ms(none), "none-ms")
		b.ReportMetric(ms(std), "standard-ms")
		b.ReportMetric(float64(none)/float64(std), "none/standard")
		b.ReportMetric(ms(medianOf(floors)), "floor-ms")
	})
}

// reportRatio reports the median of what was measured, the floor's and their ratio.
func reportRatio(b *testing.B, ds, floors []time.Duration) {
	d, f := medianOf(ds), medianOf(floors)
	b.ReportMetric(ms(d), "ms")
	b.ReportMetric(ms(f), "floor-ms")
	b.ReportMetric(float64(d)/float64(f), "x-floor")
}

// helloBinary builds a Go hello-world: the floor of starting a Go binary here.
func helloBinary(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	files := map[string]string{
		"go.mod":  "module hello\n\ngo 1.26\n",
		"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build hello: %v\n%s", err, out)
	}
	return bin
}

// timeProcess runs bin with args to its exit and returns how long it took.
func timeProcess(b *testing.B, bin string, args ...string) time.Duration {
	b.Helper()
	cmd := exec.Command(bin, args...)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s %v: %v\n%s", bin, args, err, out)
	}
	return time.Since(start)
}

// devFirst200 starts `oz0 dev` on dir in tier and returns the time from its start to the first
// 200 of its API; then it stops it (untimed).
func devFirst200(b *testing.B, bin, dir string, tier sandbox.Tier, ready string) time.Duration {
	b.Helper()
	cmd := exec.Command(bin, "dev", "--ephemeral", "--plugin", dir, "--sandbox", string(tier), "--ready-file", ready)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	deadline := start.Add(30 * time.Second)
	var req *http.Request
	for {
		if time.Now().After(deadline) {
			b.Fatalf("oz0 dev --sandbox %s: no 200 from its API in 30 s", tier)
		}
		if req == nil {
			data, err := os.ReadFile(ready)
			if err != nil || len(data) == 0 {
				time.Sleep(100 * time.Microsecond)
				continue
			}
			c, err := apiv1.ParseContext(strings.TrimSpace(string(data)))
			if err != nil {
				b.Fatal(err)
			}
			req, _ = http.NewRequestWithContext(context.Background(), http.MethodGet, c.URL+"/api/v1/info", nil)
			req.Header.Set("Authorization", "Bearer "+c.Token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start)
			}
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// runGuideJob runs the guide's `oz0 run` against the dev server of ctx and returns how long the
// process took, start to exit.
func runGuideJob(b *testing.B, bin, dir, ctx string) time.Duration {
	b.Helper()
	cmd := exec.Command(bin, "run", "acme-triage", "I was charged twice for my order")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), apiv1.ContextEnv+"="+ctx)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil || !strings.Contains(string(out), "billing") {
		b.Fatalf("oz0 run: %v\n%s", err, out)
	}
	return d
}
