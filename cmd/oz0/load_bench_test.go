package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/scaffold"
)

// BenchmarkManyJobsThroughDev is a batch as a user runs one: a fresh byo-agent plugin (no .venv,
// so its sessions run the `python` on PATH, which on a developer's machine is often pyenv's
// shim) under a real `oz0 dev` in its default tier on the fake model, and 200 jobs submitted at
// once, each by a goroutine of its own that then follows the job's live stream to its end, as
// `oz0 run` does. Every job must succeed under the default limit. It reports the submits' latency
// (the API's answer to POST /api/v1/jobs) beside that of a submit to the server at rest (five
// jobs one at a time first), the time from the first submit to the last job's end, and the peak
// resident memory of the oz0 dev process (VmHWM). Sub-benchmarks: the default limit on sessions
// at once, and --max-sessions 200 (no limit for this batch, as before there was one), in the same
// run, where the jobs that failed are counted.
func BenchmarkManyJobsThroughDev(b *testing.B) {
	const jobs = 200
	bin := oz0Binary(b)
	parent := b.TempDir()
	if _, err := scaffold.Create(scaffold.Options{Name: "acme-triage", Template: "byo-agent", Description: "Sorts support tickets", Parent: parent}); err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(parent, "acme-triage")
	for _, limit := range []string{"default", strconv.Itoa(jobs)} {
		b.Run("max-sessions="+limit, func(b *testing.B) {
			for b.Loop() {
				args := []string{"dev", "--ephemeral", "--plugin", dir}
				if limit != "default" {
					args = append(args, "--max-sessions", limit)
				}
				c, pid := startDevPID(b, bin, args...)
				ctx := context.Background()
				// The baseline of the same run: a submit to the server at rest, one job at a time.
				var idle []time.Duration
				for range 5 {
					start := time.Now()
					j, err := c.CreateJob(ctx, apiv1.JobRequest{Agent: "acme-triage", Input: "I was charged twice for my order"})
					idle = append(idle, time.Since(start))
					if err != nil {
						b.Fatal(err)
					}
					if err := c.Events(ctx, j.ID, 0, func(apiv1.Event) error { return nil }, nil); err != nil {
						b.Fatal(err)
					}
				}
				latencies := make([]time.Duration, jobs)
				failures := make([]string, jobs)
				var wg sync.WaitGroup
				gate := make(chan struct{})
				for i := range jobs {
					wg.Go(func() {
						<-gate
						start := time.Now()
						j, err := c.CreateJob(ctx, apiv1.JobRequest{Agent: "acme-triage", Input: "I was charged twice for my order"})
						latencies[i] = time.Since(start)
						if err != nil {
							failures[i] = err.Error()
							return
						}
						if err := c.Events(ctx, j.ID, 0, func(apiv1.Event) error { return nil }, nil); err != nil {
							failures[i] = err.Error()
							return
						}
						if final, err := c.Job(ctx, j.ID); err != nil || final.Status != apiv1.StatusSucceeded {
							failures[i] = fmt.Sprintf("job %s: %v %s: %s", j.ID, err, final.Status, final.Reason)
						}
					})
				}
				start := time.Now()
				close(gate)
				wg.Wait()
				allDone := time.Since(start)
				failed := 0
				for _, f := range failures {
					if f != "" {
						if failed == 0 {
							b.Logf("a job failed: %s", f)
						}
						failed++
					}
				}
				// Every job must succeed under the limit; without one, how many fail is the figure.
				if failed > 0 && limit == "default" {
					b.Fatalf("%d of %d jobs failed", failed, jobs)
				}
				b.ReportMetric(float64(failed), "failed-jobs")
				slices.Sort(latencies)
				b.ReportMetric(ms(medianOf(idle)), "submit-at-rest-ms")
				b.ReportMetric(ms(latencies[jobs/2]), "submit-p50-ms")
				b.ReportMetric(ms(latencies[jobs*99/100]), "submit-p99-ms")
				b.ReportMetric(allDone.Seconds(), "all-done-s")
				b.ReportMetric(procStatusMB(b, pid, "VmHWM"), "rss-peak-MB")
			}
		})
	}
}

// startDevPID starts `oz0 dev` with args and a ready file, as startReady does, and returns a
// client of it and its process id (to read its memory); it stops when the benchmark ends.
func startDevPID(b *testing.B, bin string, args ...string) (*client.Client, int) {
	b.Helper()
	ready := filepath.Join(b.TempDir(), "ctx")
	line, cmd, _ := startReadyProc(b, nil, ready, bin, append(args, "--ready-file", ready)...)
	ctx, err := apiv1.ParseContext(line)
	if err != nil {
		b.Fatal(err)
	}
	return client.New(ctx), cmd.Process.Pid
}

// procStatusMB is a memory field of /proc/PID/status (VmRSS, VmHWM) in MiB.
func procStatusMB(b *testing.B, pid int, field string) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
