package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/scaffold"
)

// BenchmarkJobsWithOTLPExport is the guide's job (the byo-agent template on the fake model: a
// model call, a tool call, says) one at a time through a real `oz0 dev`, in the same run: with no
// export, with a backend that takes every trace, and with the backend away (a port nothing
// listens on). It reports the median time from a job's submit to its end. With the backend away
// it also checks that the dropped spans' count is logged, once, when oz0 dev stops.
func BenchmarkJobsWithOTLPExport(b *testing.B) {
	bin := oz0Binary(b)
	parent := b.TempDir()
	if _, err := scaffold.Create(scaffold.Options{Name: "acme-triage", Template: "byo-agent", Description: "Sorts support tickets", Parent: parent}); err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(parent, "acme-triage")
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer backend.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	away := "http://" + ln.Addr().String()
	ln.Close()
	for _, tc := range []struct{ name, endpoint string }{{"export=none", ""}, {"export=backend-up", backend.URL}, {"export=backend-away", away}} {
		b.Run(tc.name, func(b *testing.B) {
			var env []string
			if tc.endpoint != "" {
				env = append(env, "OTEL_EXPORTER_OTLP_ENDPOINT="+tc.endpoint)
			}
			d := startDevLogged(b, bin, env, "dev", "--ephemeral", "--plugin", dir)
			ctx := context.Background()
			var times []time.Duration
			for b.Loop() {
				start := time.Now()
				j, err := d.c.CreateJob(ctx, apiv1.JobRequest{Agent: "acme-triage", Input: "I was charged twice for my order"})
				if err != nil {
					b.Fatal(err)
				}
				if err := d.c.Events(ctx, j.ID, 0, func(apiv1.Event) error { return nil }, nil); err != nil {
					b.Fatal(err)
				}
				times = append(times, time.Since(start))
			}
			b.ReportMetric(float64(medianOf(times).Microseconds())/1000, "ms/job")
			log := d.stop(b)
			if tc.endpoint == away {
				if n := strings.Count(log, "otlp: spans were dropped"); n != 1 {
					b.Errorf("the dropped count was logged %d times, want once:\n%s", n, log)
				}
				if n := strings.Count(log, "otlp: the backend does not take traces"); n != 1 {
					b.Errorf("the outage was said %d times, want once:\n%s", n, log)
				}
			} else if strings.Contains(log, "otlp: spans were dropped") {
				b.Errorf("spans were dropped:\n%s", log)
			}
		})
	}
}

type loggedDev struct {
	c   *client.Client
	cmd *exec.Cmd
	log string
}

// startDevLogged starts oz0 dev with env added, its output in a file that stop returns.
func startDevLogged(b *testing.B, bin string, env []string, args ...string) *loggedDev {
	b.Helper()
	ready := filepath.Join(b.TempDir(), "ctx")
	line, cmd, logPath := startReadyProc(b, env, ready, bin, append(args, "--ready-file", ready)...)
	ctx, err := apiv1.ParseContext(line)
	if err != nil {
		b.Fatal(err)
	}
	return &loggedDev{c: client.New(ctx), cmd: cmd, log: logPath}
}

// stop stops oz0 dev and returns what it wrote.
func (d *loggedDev) stop(b *testing.B) string {
	b.Helper()
	d.cmd.Process.Signal(os.Interrupt)
	d.cmd.Wait()
	data, err := os.ReadFile(d.log)
	if err != nil {
		b.Fatal(err)
	}
	return string(data)
}
