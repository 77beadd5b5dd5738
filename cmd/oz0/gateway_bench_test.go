package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/internal/testbin"
)

// goProgram builds the Go program pkg into the benchmark's temporary directory.
func goProgram(b *testing.B, pkg string) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), filepath.Base(pkg))
	goBuild(b, ".", "-o", bin, pkg)
	return bin
}

// startReady starts a server process that writes its URL (or OZ0_CONTEXT) to ready, waits for
// it, and stops the process with SIGINT when the benchmark ends. Its output goes to a file, as
// a terminal would take it.
func startReady(b *testing.B, env []string, ready string, name string, args ...string) string {
	b.Helper()
	line, _, _ := startReadyProc(b, env, ready, name, args...)
	return line
}

// startReadyProc is startReady that also returns the process (its id, to read its memory) and
// the file its output goes to.
func startReadyProc(b *testing.B, env []string, ready string, name string, args ...string) (line string, cmd *exec.Cmd, logPath string) {
	b.Helper()
	cmd = exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	logPath = startLogged(b, cmd)
	return waitReady(b, ready, cmd), cmd, logPath
}

// startLogged starts cmd with its output going to a file, as a terminal would take it, and stops
// it (stopProc) when the benchmark ends; it returns the file's path.
func startLogged(b *testing.B, cmd *exec.Cmd) string {
	b.Helper()
	logPath := filepath.Join(b.TempDir(), filepath.Base(cmd.Path)+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stopProc(cmd)
		logFile.Close()
	})
	return logPath
}

// waitReady waits for the process cmd to write its URL (or OZ0_CONTEXT) to ready, and returns it.
func waitReady(b *testing.B, ready string, cmd *exec.Cmd) string {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if data, err := os.ReadFile(ready); err == nil && len(data) > 0 {
			return strings.TrimSpace(string(data))
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s %v: not ready in 30 s", cmd.Path, cmd.Args[1:])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stopProc stops a started process with SIGINT and waits for it; when it led a session of its
// own (Setsid), what it left in that session's process group is killed too.
func stopProc(cmd *exec.Cmd) {
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	if cmd.SysProcAttr != nil && cmd.SysProcAttr.Setsid {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// benchPlugin writes a plugin whose agent, NAME, runs the Go test harness with args.
func benchPlugin(b *testing.B, name, harnessBin string, args ...string) string {
	// Limits on, as a tenant's agents have them.
	return testbin.Plugin(b, name, append([]string{harnessBin}, args...), "limits:\n  max_steps: 1000000\n  max_tokens: 1000000000\n  timeout: 30m\n")
}

// profileEnv has the oz0 processes a benchmark starts write CPU profiles when OZ0_BENCH_PROFILE
// names a path prefix (PREFIX.dev.PID, PREFIX.run.PID).
func profileEnv() []string {
	if p := os.Getenv("OZ0_BENCH_PROFILE"); p != "" {
		return []string{ProfileEnv + "=" + p}
	}
	return nil
}

func percentile(sorted []float64, p float64) float64 {
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

// tinyRequest is the request of the harness written apart from this one (issue 24): the least an
// SDK sends.
const tinyRequest = `{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`

// gwHarness is how gwbench calls, and what it calls.
type gwHarness struct {
	upstream   string // "fake": oz0 fake-model serve; "mini": the least model API (testbin.MiniUpstream)
	body       string // the request; "": "Say hello." to the session's model
	oneClient  bool   // one keep-alive http.Client for the three paths, as Go makes it
	oz0Headers bool   // the session's Oz0-Job and Oz0-Agent headers on every call
}

var (
	// gwFake is this benchmark's own harness from the start: the fake model, its request, a tuned
	// client per path, the session's headers.
	gwFake = gwHarness{upstream: "fake", oz0Headers: true}
	// gwTiny is the harness written apart from it: the least model API, the tiny request, one
	// client.
	gwTiny = gwHarness{upstream: "mini", body: tinyRequest, oneClient: true}
)

// gwBench is a real `oz0 dev` (keeping each call, as it does by default, metering and limits on,
// tier standard, its log going to a file) with the upstreams gwbench calls, each behind a bare
// httputil.ReverseProxy in its own process (the floor: one more loopback hop between processes).
type gwBench struct {
	c         *client.Client
	upstreams map[string][2]string // name → its URL and its bare proxy's
}

func startGWBench(b *testing.B) *gwBench {
	bin := oz0Binary(b)
	harnessBin := goProgram(b, testbin.TestHarness)
	proxyBin := goProgram(b, testbin.BareProxy)
	miniBin := goProgram(b, testbin.MiniUpstream)
	tmp := b.TempDir()
	g := &gwBench{upstreams: map[string][2]string{}}
	fake := startReady(b, nil, filepath.Join(tmp, "fm.url"), bin, "fake-model", "serve", "--ready-file", filepath.Join(tmp, "fm.url"))
	mini := startReady(b, nil, filepath.Join(tmp, "mini.url"), miniBin, filepath.Join(tmp, "mini.url"))
	for name, up := range map[string]string{"fake": fake, "mini": mini} {
		g.upstreams[name] = [2]string{up, startReady(b, nil, filepath.Join(tmp, name+".proxy"), proxyBin, up, filepath.Join(tmp, name+".proxy"))}
	}
	dir := benchPlugin(b, "gwbench", harnessBin, "gwbench")
	ctxFile := filepath.Join(tmp, "ctx")
	ctxLine := startReady(b, append(profileEnv(), "OZ0_ANTHROPIC_BASE_URL="+fake), ctxFile,
		bin, "dev", "--plugin", dir, "--ephemeral", "--ready-file", ctxFile)
	devCtx, err := apiv1.ParseContext(ctxLine)
	if err != nil {
		b.Fatal(err)
	}
	g.c = client.New(devCtx)
	return g
}

// run runs jobs of gwbench, 500 rounds each, with h, and reports each path's p50 and p99, its
// failed calls, and the gateway's figures over the bare proxy's: added-* (the difference, the
// gateway's own work) and ratio-* (the quotient, which should not move from machine to machine).
func (g *gwBench) run(b *testing.B, h gwHarness, stream bool) {
	const rounds = 500
	ctx := context.Background()
	up := g.upstreams[h.upstream]
	// The session's record goes to the harness's upstream from its next job on.
	if _, err := g.c.SetSecret(ctx, "ANTHROPIC_API_KEY", "sk-ant-bench-0123456789", up[0]); err != nil {
		b.Fatal(err)
	}
	in := map[string]any{"direct": up[0], "proxy": up[1], "rounds": rounds, "stream": stream,
		"one_client": h.oneClient, "oz0_headers": h.oz0Headers}
	if h.body != "" {
		in["body"] = json.RawMessage(h.body)
	}
	input, _ := json.Marshal(in)
	took := map[string][]float64{}
	errs := map[string]int{}
	for b.Loop() {
		j, err := g.c.CreateJob(ctx, apiv1.JobRequest{Agent: "gwbench", Input: string(input)})
		if err != nil {
			b.Fatal(err)
		}
		if err := g.c.Events(ctx, j.ID, 0, func(apiv1.Event) error { return nil }, nil); err != nil {
			b.Fatal(err)
		}
		end, err := g.c.Job(ctx, j.ID)
		if err != nil || end.Status != apiv1.StatusSucceeded {
			b.Fatalf("job %s: %s %s %v", j.ID, end.Status, end.Reason, err)
		}
		var out struct {
			Direct, Proxy, Gateway []float64
			Errors                 map[string]int
		}
		if err := json.Unmarshal(end.Output, &out); err != nil {
			b.Fatal(err)
		}
		took["direct"] = append(took["direct"], out.Direct...)
		took["proxy"] = append(took["proxy"], out.Proxy...)
		took["gateway"] = append(took["gateway"], out.Gateway...)
		for k, n := range out.Errors {
			errs[k] += n
		}
	}
	p := map[string][2]float64{}
	for k, v := range took {
		slices.Sort(v)
		p[k] = [2]float64{percentile(v, 0.5), percentile(v, 0.99)}
	}
	for _, k := range []string{"direct", "proxy", "gateway"} {
		b.ReportMetric(p[k][0], k+"-p50-µs")
		b.ReportMetric(p[k][1], k+"-p99-µs")
		b.ReportMetric(float64(errs[k]), k+"-errors") // a floor that fails is not a floor
	}
	b.ReportMetric(p["gateway"][0]-p["proxy"][0], "added-p50-µs")
	b.ReportMetric(p["gateway"][1]-p["proxy"][1], "added-p99-µs")
	b.ReportMetric(p["gateway"][0]/p["proxy"][0], "ratio-p50")
	b.ReportMetric(p["gateway"][1]/p["proxy"][1], "ratio-p99")
	b.ReportMetric(0, "ns/op") // the job's time is the harness's, not a figure here
}

// BenchmarkGatewayThroughDev is the gateway where users meet it: a harness session under a real
// `oz0 dev` (startGWBench) times its calls alternated one at a time, the order rotating, between
// the upstream directly, a bare httputil.ReverseProxy in front of it and the gateway with the
// session's key, in two shapes: fake, this benchmark's own from the start (oz0 fake-model serve,
// "Say hello." to the session's model, a client per path, the session's headers), and tiny, the
// harness written apart from it (the least model API, the tiny request, one client). Each streamed
// and not.
func BenchmarkGatewayThroughDev(b *testing.B) {
	g := startGWBench(b)
	for _, shape := range []struct {
		name string
		h    gwHarness
	}{{"fake", gwFake}, {"tiny", gwTiny}} {
		for _, stream := range []bool{false, true} {
			name := shape.name + "/messages"
			if stream {
				name = shape.name + "/stream"
			}
			b.Run(name, func(b *testing.B) { g.run(b, shape.h, stream) })
		}
	}
}

// BenchmarkGatewayHarnessFactors takes the tiny harness and changes one thing at a time towards
// the fake one (the upstream, the request, the session's headers, the clients), to find which
// makes the two disagree; all is every change at once, the fake harness itself.
func BenchmarkGatewayHarnessFactors(b *testing.B) {
	g := startGWBench(b)
	for _, f := range []struct {
		name string
		h    gwHarness
	}{
		{"tiny", gwTiny},
		{"upstream=fake", gwHarness{upstream: "fake", body: tinyRequest, oneClient: true}},
		{"request=hello", gwHarness{upstream: "mini", oneClient: true}},
		{"oz0-headers", gwHarness{upstream: "mini", body: tinyRequest, oneClient: true, oz0Headers: true}},
		{"client-per-path", gwHarness{upstream: "mini", body: tinyRequest}},
		{"all", gwFake},
	} {
		for _, stream := range []bool{false, true} {
			name := f.name + "/messages"
			if stream {
				name = f.name + "/stream"
			}
			b.Run(name, func(b *testing.B) { g.run(b, f.h, stream) })
		}
	}
}

// BenchmarkEventsThroughDevAndRun is a chatty harness's events per second end to end, where users
// meet them: the Go test harness says 100,000 short lines as fast as it can under a real `oz0 dev`,
// and a real `oz0 run --json` prints them, timed from its start to its exit after the last. Every
// event is committed to the store before the live stream carries it.
func BenchmarkEventsThroughDevAndRun(b *testing.B) {
	const n = 100_000
	bin := oz0Binary(b)
	harnessBin := goProgram(b, testbin.TestHarness)
	dir := benchPlugin(b, "flood", harnessBin, "flood", "100000")
	tmp := b.TempDir()
	ctxFile := filepath.Join(tmp, "ctx")
	ctxLine := startReady(b, profileEnv(), ctxFile, bin, "dev", "--plugin", dir, "--ephemeral", "--ready-file", ctxFile)
	out := filepath.Join(tmp, "run.jsonl")
	events, took := 0, time.Duration(0)
	for b.Loop() {
		f, err := os.Create(out)
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command(bin, "run", "flood", "go", "--json")
		cmd.Env = append(append(os.Environ(), "OZ0_CONTEXT="+ctxLine), profileEnv()...)
		cmd.Stdout = f
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("oz0 run: %v", err)
		}
		took += time.Since(start)
		f.Close()
		data, _ := os.ReadFile(out)
		lines := strings.Count(string(data), "\n")
		if lines < n {
			b.Fatalf("%d events printed, want at least %d", lines, n)
		}
		events += lines
	}
	b.ReportMetric(float64(events)/took.Seconds(), "events/s")
}

// BenchmarkGatewayLargeBodies is the gateway's memory under large request bodies, where users meet
// it: eight calls of 30 MB at once, each with a session's key, to the fake model of a real `oz0
// dev` (its session writes its key to a file, so the benchmark can call as the harness would). It
// reports the dev server's resident memory before, at its peak (VmHWM) and 2 s after the burst,
// and the calls' times. Linux only (it reads /proc).
func BenchmarkGatewayLargeBodies(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads /proc")
	}
	const calls, size = 8, 30 << 20
	bin := oz0Binary(b)
	harnessBin := goProgram(b, testbin.TestHarness)
	tmp := b.TempDir()
	keyFile := filepath.Join(tmp, "keys.json")
	dir := benchPlugin(b, "bigbodies", harnessBin, "keyfile", keyFile)
	ctxFile := filepath.Join(tmp, "ctx")
	// No sandbox: the session writes its keys beside the benchmark.
	cmd := exec.Command(bin, "dev", "--plugin", dir, "--ephemeral", "--sandbox", "none", "--ready-file", ctxFile)
	logFile, err := os.Create(filepath.Join(tmp, "dev.log"))
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait(); logFile.Close() })
	var ctxLine []byte
	for deadline := time.Now().Add(30 * time.Second); len(ctxLine) == 0; time.Sleep(5 * time.Millisecond) {
		if ctxLine, _ = os.ReadFile(ctxFile); time.Now().After(deadline) {
			b.Fatal("oz0 dev not ready in 30 s")
		}
	}
	devCtx, err := apiv1.ParseContext(strings.TrimSpace(string(ctxLine)))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := client.New(devCtx).CreateJob(context.Background(), apiv1.JobRequest{Agent: "bigbodies", Input: "go"}); err != nil {
		b.Fatal(err)
	}
	var keys struct {
		URL string `json:"anthropic_base_url"`
		Key string `json:"anthropic_api_key"`
	}
	for deadline := time.Now().Add(30 * time.Second); keys.Key == ""; time.Sleep(5 * time.Millisecond) {
		if data, err := os.ReadFile(keyFile); err == nil {
			json.Unmarshal(data, &keys)
		}
		if time.Now().After(deadline) {
			b.Fatal("the session wrote no keys in 30 s")
		}
	}
	body := []byte(`{"model":"fake-model","max_tokens":16,"messages":[{"role":"user","content":"` + strings.Repeat("x", size) + `"}]}`)
	rss := func(field string) float64 {
		data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, field+":"); ok {
				var kb float64
				fmt.Sscanf(strings.TrimSpace(v), "%f", &kb)
				return kb / 1024
			}
		}
		return 0
	}
	before := rss("VmRSS")
	var took []float64
	statuses := map[int]int{}
	var mu sync.Mutex
	for b.Loop() {
		var wg sync.WaitGroup
		for range calls {
			wg.Go(func() {
				req, _ := http.NewRequest("POST", keys.URL+"/v1/messages", bytes.NewReader(body))
				req.Header.Set("x-api-key", keys.Key)
				req.Header.Set("anthropic-version", "2023-06-01")
				req.Header.Set("content-type", "application/json")
				start := time.Now()
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				took = append(took, time.Since(start).Seconds())
				statuses[resp.StatusCode]++
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	b.StopTimer()
	time.Sleep(2 * time.Second) // the measurement: what is still resident 2 s later
	slices.Sort(took)
	b.ReportMetric(before, "rss-before-MB")
	b.ReportMetric(rss("VmHWM"), "rss-peak-MB")
	b.ReportMetric(rss("VmRSS"), "rss-after-2s-MB")
	b.ReportMetric(percentile(took, 0.5), "call-p50-s")
	b.ReportMetric(took[len(took)-1], "call-max-s")
	for status, n := range statuses {
		b.ReportMetric(float64(n), fmt.Sprintf("status-%d", status))
	}
	b.ReportMetric(0, "ns/op")
}
