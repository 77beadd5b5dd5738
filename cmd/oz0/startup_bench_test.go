package main

import (
	"context"
	"encoding/json"
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
// a Go hello-world, built in the same run and timed (the median of three runs) before each
// measurement, so that each ratio is of figures taken under the same load. Every figure is a real
// process, started and waited for from here:
//
//   - version: `oz0 version`, start to exit (goal: at most 2× the floor);
//   - floor-grpc: the hello-world with hashicorp/go-plugin linked (its gRPC and protobuf, which
//     the hooks' protocol needs), start to exit: the least `oz0 version` can cost while oz0 speaks it;
//   - floor-deps: the hello-world with every package of another module that oz0 links: what
//     `oz0 version` costs before any of oz0's own code;
//   - dev/TIER: `oz0 dev` as the guide starts it, in the plugin's folder (its state there, made
//     by a first start that is not timed), start to the first 200 of its API (GET /api/v1/info
//     with the token of its --ready-file, polled) (goal: at most 6× the floor);
//   - dev-ephemeral/none: the same with --ephemeral (a new state directory each start);
//   - dev-unremembered/standard: the same as dev/standard on a cache directory of its own each
//     start, so that the sandbox's tier is checked by building one, as the first start after the
//     machine's boot does;
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
	floor := func(b *testing.B) time.Duration {
		return medianOf([]time.Duration{timeProcess(b, hello), timeProcess(b, hello), timeProcess(b, hello)})
	}

	b.Run("version", func(b *testing.B) {
		var floors, versions []time.Duration
		for b.Loop() {
			floors = append(floors, floor(b))
			versions = append(versions, timeProcess(b, bin, "version"))
		}
		reportRatio(b, versions, floors)
	})
	for _, fc := range []struct {
		name  string
		links func(b *testing.B) []string
	}{
		{"floor-grpc", func(*testing.B) []string { return []string{"github.com/hashicorp/go-plugin"} }},
		{"floor-deps", thirdPartyDeps},
	} {
		b.Run(fc.name, func(b *testing.B) {
			linked := helloBinary(b, fc.links(b)...)
			var floors, ds []time.Duration
			for b.Loop() {
				floors = append(floors, floor(b))
				ds = append(ds, timeProcess(b, linked))
			}
			reportRatio(b, ds, floors)
		})
	}
	devCase := func(name string, tier sandbox.Tier, ephemeral, unremembered bool) {
		b.Run(name, func(b *testing.B) {
			if err := sandbox.Check(tier); err != nil {
				b.Skip(err)
			}
			ready := filepath.Join(b.TempDir(), "ctx")
			args := []string{"dev", "--sandbox", string(tier), "--ready-file", ready}
			if ephemeral {
				args = append(args, "--ephemeral")
			}
			env := os.Environ()
			devFirst200(b, bin, dir, args, env, ready) // makes the state, remembers the tier
			var floors, devs []time.Duration
			for b.Loop() {
				if unremembered {
					env = append(os.Environ(), "XDG_CACHE_HOME="+b.TempDir())
				}
				floors = append(floors, floor(b))
				devs = append(devs, devFirst200(b, bin, dir, args, env, ready))
			}
			reportRatio(b, devs, floors)
		})
	}
	for _, tier := range []sandbox.Tier{sandbox.None, sandbox.Standard, sandbox.Strict} {
		devCase("dev/"+string(tier), tier, false, false)
	}
	devCase("dev-ephemeral/none", sandbox.None, true, false)
	devCase("dev-unremembered/standard", sandbox.Standard, false, true)
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
		var nones, standards []time.Duration
		for b.Loop() {
			nones = append(nones, runGuideJob(b, bin, dir, ctxs[sandbox.None]))
			standards = append(standards, runGuideJob(b, bin, dir, ctxs[sandbox.Standard]))
		}
		none, std := medianOf(nones), medianOf(standards)
		b.ReportMetric(ms(none), "none-ms")
		b.ReportMetric(ms(std), "standard-ms")
		b.ReportMetric(float64(none)/float64(std), "none/standard")
	})
}

// reportRatio reports the median of what was measured, the floor's and their ratio.
func reportRatio(b *testing.B, ds, floors []time.Duration) {
	d, f := medianOf(ds), medianOf(floors)
	b.ReportMetric(ms(d), "ms")
	b.ReportMetric(ms(f), "floor-ms")
	b.ReportMetric(float64(d)/float64(f), "x-floor")
}

// helloBinary builds a Go hello-world: the floor of starting a Go binary here. With links, the
// packages of those paths are linked too (their inits run), at the versions oz0's go.mod has: the
// program is built as if it were in this module (go build -overlay), and nothing is written in it.
func helloBinary(b *testing.B, links ...string) string {
	b.Helper()
	dir := b.TempDir()
	bin := filepath.Join(dir, "hello")
	src := "package main\n\nimport (\n\t\"fmt\"\n"
	for _, l := range links {
		src += "\t_ \"" + l + "\"\n"
	}
	src += ")\n\nfunc main() { fmt.Println(\"hello\") }\n"
	main := filepath.Join(dir, "main.go")
	if err := os.WriteFile(main, []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	here, err := filepath.Abs("startupfloor")
	if err != nil {
		b.Fatal(err)
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(here, "main.go"): main}})
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "overlay.json"), overlay, 0o644); err != nil {
		b.Fatal(err)
	}
	goBuild(b, ".", "-overlay", filepath.Join(dir, "overlay.json"), "-o", bin, "./startupfloor")
	return bin
}

// thirdPartyDeps are the packages of other modules that oz0 links, but those a program outside
// their module may not import (internal ones, which what imports them links anyway).
func thirdPartyDeps(b *testing.B) []string {
	b.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		b.Fatalf("go list -deps: %v", err)
	}
	var deps []string
	for _, p := range strings.Fields(string(out)) {
		if !strings.HasPrefix(p, "github.com/orchestrator-zero/oz0") && !strings.Contains(p+"/", "/internal/") && !strings.HasPrefix(p, "internal/") {
			deps = append(deps, p)
		}
	}
	return deps
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

// devFirst200 starts `oz0 dev` with args in dir and returns the time from its start to the first
// 200 of its API; then it stops it (untimed).
func devFirst200(b *testing.B, bin, dir string, args, env []string, ready string) time.Duration {
	b.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	return first200(b, cmd, func() *http.Request {
		data, err := os.ReadFile(ready)
		if err != nil || len(data) == 0 {
			return nil
		}
		c, err := apiv1.ParseContext(strings.TrimSpace(string(data)))
		if err != nil {
			b.Fatal(err)
		}
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, c.URL+"/api/v1/info", nil)
		req.Header.Set("Authorization", "Bearer "+c.Token)
		return req
	})
}

// first200 starts the server cmd and returns the time from its start to the first 200 of the
// request that newReq makes (nil while it cannot make it yet: the server has not said where it
// listens), polled; then it stops the server (stopProc, untimed). The polls are 1% of the time
// taken apart (at least 100 µs), so that a server that takes seconds is not slowed by them.
func first200(b *testing.B, cmd *exec.Cmd, newReq func() *http.Request) time.Duration {
	b.Helper()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer stopProc(cmd)
	const limit = 2 * time.Minute
	var req *http.Request
	for {
		since := time.Since(start)
		if since > limit {
			b.Fatalf("%s %s: no 200 in %s", cmd.Path, strings.Join(cmd.Args[1:], " "), limit)
		}
		if req == nil {
			req = newReq()
		}
		if req != nil {
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return time.Since(start)
				}
			}
		}
		time.Sleep(max(100*time.Microsecond, since/100))
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
