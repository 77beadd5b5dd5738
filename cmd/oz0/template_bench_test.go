//go:build linux

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/internal/nodedeps"
)

// templateRuns is how many runs of each template are timed on each oz0, after one that is not.
const templateRuns = 10

// BenchmarkTemplateRuns times one run of each template's generated plugin, as a user meets it:
// `oz0 plugin new`, its dependencies installed as its author installs them (uv lock && uv sync;
// for a Node template the locked node_modules make test-deps installs, as npm ci would), then `oz0
// dev` on its built-in fake model and a job submitted and followed to its end, one at a time
// (the median of templateRuns, after one that is not counted: the first reads the interpreter's
// and the framework's files from disk).
//
// OZ0_BENCH_BIN names the oz0 to time (bench_test.go); OZ0_BENCH_BASE_BIN a second one, an
// earlier build say, whose `oz0 dev` serves the template as that build writes it beside it, run
// for run in turn, so that the ratio (run-ms/base) is of runs taken under the same load. OZ0_BENCH_DEV_FLAGS adds flags
// to each `oz0 dev` (--cold, say).
func BenchmarkTemplateRuns(b *testing.B) {
	bin := oz0Binary(b)
	base := os.Getenv("OZ0_BENCH_BASE_BIN")
	uv := peersUV(b)
	devFlags := strings.Fields(os.Getenv("OZ0_BENCH_DEV_FLAGS"))
	for _, template := range []string{"byo-agent", "adk", "strands", "agent-framework", "strands-ts", "adk-ts"} {
		b.Run(template, func(b *testing.B) {
			plugin := templatePlugin(b, bin, uv, template)
			c, _ := startTemplateDev(b, bin, plugin, devFlags)
			sides := []*client.Client{c}
			if base != "" {
				// The earlier build's template too: what a plugin made by it runs.
				c, _ := startTemplateDev(b, base, templatePlugin(b, base, uv, template), devFlags)
				sides = append(sides, c)
			}
			for _, c := range sides {
				if _, err := templateRun(c); err != nil {
					b.Fatal(err)
				}
			}
			times := make([][]time.Duration, len(sides))
			for b.Loop() {
				for range templateRuns {
					for i, c := range sides {
						d, err := templateRun(c)
						if err != nil {
							b.Fatal(err)
						}
						times[i] = append(times[i], d)
					}
				}
			}
			b.ReportMetric(ms(medianOf(times[0])), "run-ms")
			if base != "" {
				b.ReportMetric(ms(medianOf(times[1])), "base-run-ms")
				b.ReportMetric(ms(medianOf(times[0]))/ms(medianOf(times[1])), "run/base")
			}
			b.ReportMetric(0, "ns/op") // the figures above are the medians of single runs
		})
	}
}

// templatePlugin scaffolds the template as acme-triage and installs its dependencies as its author
// does.
func templatePlugin(b *testing.B, bin string, uv peerUV, template string) string {
	b.Helper()
	parent := b.TempDir()
	runBin(b, bin, parent, "plugin", "new", "acme-triage", "--template", template, "--description", "Sorts support tickets")
	dir := filepath.Join(parent, "acme-triage")
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err == nil {
		modules, installed, err := nodedeps.NodeModules(templatesDir, template)
		if err != nil {
			b.Fatal(err)
		}
		if !installed {
			b.Fatal(nodedeps.Missing(template, modules))
		}
		if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
			b.Fatal(err)
		}
		return dir
	}
	uv.run(b, dir, "lock")
	uv.run(b, dir, "sync")
	return dir
}

// startTemplateDev starts `oz0 dev` of bin on the plugin, its state in a directory of its own (the
// Node templates' Node first on its PATH); it stops when the benchmark ends. Its process is the
// root of the server's tree.
func startTemplateDev(b *testing.B, bin, plugin string, devFlags []string) (*client.Client, *exec.Cmd) {
	b.Helper()
	ready := filepath.Join(b.TempDir(), "ctx")
	cmd := exec.Command(bin, append([]string{"dev", "--addr", "127.0.0.1:0", "--state-dir", b.TempDir(), "--ready-file", ready}, devFlags...)...)
	cmd.Dir = plugin
	cmd.Env = append(os.Environ(), "PATH="+nodeFirstPATH(b))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	startLogged(b, cmd)
	ctx, err := apiv1.ParseContext(waitReady(b, ready, cmd))
	if err != nil {
		b.Fatal(err)
	}
	return client.New(ctx), cmd
}

// nodeFirstPATH is PATH with the Node the Node templates support first (scripts/node-path.sh).
func nodeFirstPATH(b *testing.B) string {
	b.Helper()
	first, err := exec.Command("../../scripts/node-path.sh").Output()
	if err != nil {
		b.Fatal("scripts/node-path.sh:", err)
	}
	return string(first) + os.Getenv("PATH")
}

// templateRun is how long one job of acme-triage took, submitted and followed to its end as
// oz0Run does; an error when it did not succeed.
func templateRun(c *client.Client) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	_, err := oz0Run(ctx, c)
	return time.Since(start), err
}
