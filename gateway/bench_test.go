package gateway

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/fakemodel"
)

// The benchmarks send the same request straight to the fake upstream and through the gateway, in
// one run, on loopback, and report the difference. The fake answers at once (no delays), so what
// they measure is the gateway's own cost: one more loopback hop, reading and checking the request,
// passing the answer on and metering it.

const benchScript = `
rules:
  - reply:
      text: "The quick brown fox jumps over the lazy dog. Sphinx of black quartz, judge my vow."
      usage: {input_tokens: 25, output_tokens: 20}
`

type bench struct {
	fake    *fakemodel.Server
	up, gw  *httptest.Server
	gateway *Gateway
	client  *http.Client
	key     string
	calls   atomic.Int64
}

func newBench(b *testing.B) *bench {
	b.Helper()
	s, err := fakemodel.ParseScript("bench.yaml", []byte(benchScript))
	if err != nil {
		b.Fatal(err)
	}
	bn := &bench{fake: fakemodel.New(s)}
	bn.fake.KeepRequests = -1
	bn.up = httptest.NewServer(bn.fake)
	b.Cleanup(bn.up.Close)
	keys := NewMemResolver()
	bn.gateway, err = New(Config{Resolver: keys, Secrets: MapSecrets{"K": tenantKey},
		Meter: MeterFunc(func(Call) { bn.calls.Add(1) }), Transport: NewTransport()})
	if err != nil {
		b.Fatal(err)
	}
	bn.gw = httptest.NewServer(http.StripPrefix("/gateway", bn.gateway))
	b.Cleanup(bn.gw.Close)
	rec := FakeRecord(bn.up.URL)
	rec.Secret = "K"
	bn.key = keys.Issue(Grant{Job: "job_bench", Agent: "bench", Record: rec})
	tr := NewTransport()
	tr.MaxIdleConnsPerHost = 1024
	bn.client = &http.Client{Transport: tr}
	b.Cleanup(tr.CloseIdleConnections)
	return bn
}

func (bn *bench) req(direct, stream bool) *http.Request {
	body := anthBody
	if stream {
		body = `{"model":"fake-model","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hello"}]}`
	}
	url, key := bn.gw.URL+"/gateway/anthropic/v1/messages", bn.key
	if direct {
		url, key = bn.up.URL+"/v1/messages", tenantKey
	}
	r, _ := http.NewRequest("POST", url, strings.NewReader(body))
	r.Header.Set("x-api-key", key)
	r.Header.Set("anthropic-version", "2023-06-01")
	r.Header.Set("content-type", "application/json")
	return r
}

// roundTrip sends one request and reads the whole answer; it returns the time taken.
func (bn *bench) roundTrip(direct bool) (time.Duration, error) {
	r := bn.req(direct, false)
	start := time.Now()
	resp, err := bn.client.Do(r)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if err == nil && resp.StatusCode != 200 {
		err = io.ErrUnexpectedEOF
	}
	return d, err
}

// firstEvent sends one streaming request; it returns the time to the first event, then drains
// the stream.
func (bn *bench) firstEvent(direct bool) (time.Duration, error) {
	r := bn.req(direct, true)
	start := time.Now()
	resp, err := bn.client.Do(r)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			break // the end of the first event
		}
	}
	d := time.Since(start)
	_, err = io.Copy(io.Discard, br)
	return d, err
}

func pct(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	i := int(p*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// reportPair reports direct and gateway percentiles of one measure and their differences.
func reportPair(b *testing.B, what string, direct, via []time.Duration) {
	for _, p := range []struct {
		name string
		q    float64
	}{{"p50", 0.50}, {"p99", 0.99}} {
		d, g := pct(direct, p.q), pct(via, p.q)
		b.ReportMetric(us(d), p.name+"-direct-"+what+"µs")
		b.ReportMetric(us(g), p.name+"-gateway-"+what+"µs")
		b.ReportMetric(us(g-d), p.name+"-added-"+what+"µs")
		b.ReportMetric(float64(g)/float64(d), p.name+"-ratio-"+what)
	}
}

// BenchmarkAddedLatency: a single client, non-streamed; each iteration sends the same request
// direct and through the gateway, alternately.
func BenchmarkAddedLatency(b *testing.B) {
	bn := newBench(b)
	for range 300 { // warm connections, pools and caches
		bn.roundTrip(true)
		bn.roundTrip(false)
	}
	var direct, via []time.Duration
	for b.Loop() {
		d, err := bn.roundTrip(true)
		if err != nil {
			b.Fatal(err)
		}
		g, err := bn.roundTrip(false)
		if err != nil {
			b.Fatal(err)
		}
		direct, via = append(direct, d), append(via, g)
	}
	reportPair(b, "", direct, via)
}

// BenchmarkAddedTimeToFirstEvent: a single client, streamed; the time to the first event
// (message_start), direct and through the gateway.
func BenchmarkAddedTimeToFirstEvent(b *testing.B) {
	bn := newBench(b)
	for range 300 {
		bn.firstEvent(true)
		bn.firstEvent(false)
	}
	var direct, via []time.Duration
	for b.Loop() {
		d, err := bn.firstEvent(true)
		if err != nil {
			b.Fatal(err)
		}
		g, err := bn.firstEvent(false)
		if err != nil {
			b.Fatal(err)
		}
		direct, via = append(direct, d), append(via, g)
	}
	reportPair(b, "ttfe-", direct, via)
}

// load sends rate requests a second for dur, open loop (each at its scheduled time, whatever the
// earlier ones are doing), alternating between direct and through the gateway every slice, so that
// both see the same conditions on a shared machine. It returns the latencies and failures of each.
func (bn *bench) load(rate int, dur, slice time.Duration) (direct, via []time.Duration, derr, gerr int) {
	n := int(dur.Seconds() * float64(rate))
	perSlice := max(1, int(slice.Seconds()*float64(rate)))
	lat := make([]time.Duration, n)
	failed := make([]bool, n)
	isDirect := func(i int) bool { return (i/perSlice)%2 == 0 }
	var wg sync.WaitGroup
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := range n {
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := bn.roundTrip(isDirect(i))
			lat[i], failed[i] = d, err != nil
		}()
	}
	wg.Wait()
	for i := range n {
		switch {
		case isDirect(i) && failed[i]:
			derr++
		case isDirect(i):
			direct = append(direct, lat[i])
		case failed[i]:
			gerr++
		default:
			via = append(via, lat[i])
		}
	}
	return direct, via, derr, gerr
}

// BenchmarkSustained1000: 1,000 requests a second for 4 seconds, open loop, alternating every
// 100 ms between straight to the fake and through the gateway (2 s of each); p50/p99 of each, the
// added latency, the errors, and the CPU the process spent per request.
func BenchmarkSustained1000(b *testing.B) {
	bn := newBench(b)
	for range 300 {
		bn.roundTrip(true)
		bn.roundTrip(false)
	}
	const rate, dur, slice = 1000, 4 * time.Second, 100 * time.Millisecond
	for b.Loop() {
		start, cpu0 := time.Now(), cpuTime()
		direct, via, derr, gerr := bn.load(rate, dur, slice)
		elapsed, cpu1 := time.Since(start), cpuTime()
		reportPair(b, "", direct, via)
		b.ReportMetric(float64(derr), "errors-direct")
		b.ReportMetric(float64(gerr), "errors-gateway")
		b.ReportMetric(float64(len(direct)+len(via)+derr+gerr)/elapsed.Seconds(), "req/s")
		if cpu0 > 0 {
			b.ReportMetric(us(cpu1-cpu0)/float64(len(direct)+len(via)), "cpu-µs/req")
		}
	}
}

// BenchmarkHandlerInProcess is the gateway's own work per call with no network at all: the
// handler called directly, its upstream a RoundTripper that calls the fake in process. It is the
// floor of the added latency, and what to profile (-cpuprofile) to see where the time goes.
func BenchmarkHandlerInProcess(b *testing.B) {
	for _, tc := range []struct {
		name              string
		stream, recording bool
	}{{"messages", false, false}, {"messages-stream", true, false}, {"messages-recorded", false, true}, {"messages-stream-recorded", true, true}} {
		stream := tc.stream
		b.Run(tc.name, func(b *testing.B) {
			s, _ := fakemodel.ParseScript("bench.yaml", []byte(benchScript))
			fake := fakemodel.New(s)
			fake.KeepRequests = -1
			keys := NewMemResolver()
			g, _ := New(Config{Resolver: keys, Secrets: MapSecrets{"K": tenantKey}, Meter: MeterFunc(func(Call) {}),
				Transport: inProcess{fake}})
			rec := FakeRecord("http://fake.invalid")
			rec.Secret = "K"
			key := keys.Issue(Grant{Job: "job_bench", Agent: "bench", Record: rec, Recording: tc.recording})
			body := anthBody
			if stream {
				body = `{"model":"fake-model","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hello"}]}`
			}
			// The fake's own cost, to subtract.
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequestWithContext(context.Background(), "POST", "/anthropic/v1/messages", strings.NewReader(body))
				r.Header.Set("x-api-key", key)
				r.Header.Set("anthropic-version", "2023-06-01")
				w := httptest.NewRecorder()
				g.ServeHTTP(w, r)
				if w.Code != 200 {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
			}
		})
	}
}

// BenchmarkFakeInProcess is the fake's own cost per call, to subtract from BenchmarkHandlerInProcess.
func BenchmarkFakeInProcess(b *testing.B) {
	s, _ := fakemodel.ParseScript("bench.yaml", []byte(benchScript))
	fake := fakemodel.New(s)
	fake.KeepRequests = -1
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequestWithContext(context.Background(), "POST", "/v1/messages", strings.NewReader(anthBody))
		r.Header.Set("x-api-key", tenantKey)
		r.Header.Set("anthropic-version", "2023-06-01")
		w := httptest.NewRecorder()
		fake.ServeHTTP(w, r)
	}
}

// inProcess is an http.RoundTripper that serves requests with a handler, in process.
type inProcess struct{ h http.Handler }

func (p inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	w := httptest.NewRecorder()
	p.h.ServeHTTP(w, r)
	resp := w.Result()
	resp.Request = r
	return resp, nil
}

// BenchmarkKillToStreamEnd is the kill switch's latency: a live stream (the fake sends an event
// every 50 ms) is cut by Kill, timed from Kill to the client's read ending. The goal is 100 ms;
// the tests check only that Kill ends the stream long before the upstream would have.
func BenchmarkKillToStreamEnd(b *testing.B) {
	killToStreamEnd(b, func(gw *Gateway, job string) { gw.Kill(job) })
}

// BenchmarkTenantKillToStreamEnd is the same with the tenant's kill switch (oz0 tenant kill),
// thrown and taken back for each stream.
func BenchmarkTenantKillToStreamEnd(b *testing.B) {
	killToStreamEnd(b, func(gw *Gateway, _ string) { gw.KillTenant("", time.Time{}) })
}

func killToStreamEnd(b *testing.B, kill func(gw *Gateway, job string)) {
	s, err := fakemodel.ParseScript("kill.yaml", []byte("rules:\n  - reply: {text: \"a b c d e f g h i j k l m n o p q r s t u v w x y z\", stream_delay: 50ms}\n"))
	if err != nil {
		b.Fatal(err)
	}
	up := httptest.NewServer(fakemodel.New(s))
	b.Cleanup(up.Close)
	keys := NewMemResolver()
	gw, err := New(Config{Resolver: keys})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(http.StripPrefix("/gateway", gw))
	b.Cleanup(srv.Close)
	body := `{"model":"fake-model","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	var lat []time.Duration
	i := 0
	for b.Loop() {
		i++
		job := "job_kill" + strings.Repeat("x", i%7) + time.Now().Format("150405.000000000")
		key := keys.Issue(Grant{Job: job, Agent: "a", Record: FakeRecord(up.URL)})
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/gateway/anthropic/v1/messages", strings.NewReader(body))
		req.Header.Set("x-api-key", key)
		req.Header.Set("anthropic-version", "2023-06-01")
		req.Header.Set("content-type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		if _, err := br.ReadString('\n'); err != nil { // the stream has begun
			b.Fatal(err)
		}
		ended := make(chan time.Time, 1)
		go func() {
			io.Copy(io.Discard, br)
			ended <- time.Now()
		}()
		killed := time.Now()
		kill(gw, job)
		lat = append(lat, (<-ended).Sub(killed))
		resp.Body.Close()
		gw.ResumeTenant("")
		gw.Forget(job)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-p50-kill")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ms-p99-kill")
}
