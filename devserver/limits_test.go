package devserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

// liveness bounds a wait for something that must happen, so that a broken server fails a test
// instead of hanging it; no test asserts that anything happens within it.
const liveness = 60 * time.Second

// sessionKeys is what the test harness's keyfile mode writes: a live session's gateway URLs and
// keys.
type sessionKeys struct {
	Job              string `json:"job"`
	AnthropicBaseURL string `json:"anthropic_base_url"`
	AnthropicAPIKey  string `json:"anthropic_api_key"`
}

// startLimited starts a dev server with limits and one agent, keys, whose session writes its keys
// to a file and then waits to be cancelled (sandbox none: the harness writes beside the test).
func startLimited(t *testing.T, limits portLimits) (*Server, string) {
	t.Helper()
	keyFile := filepath.Join(t.TempDir(), "keys.json")
	s, err := Start(Config{PluginDirs: []string{goPlugin(t, "keys", buildTestHarness(t), "keyfile", keyFile)},
		Ephemeral: true, Poll: -1, Sandbox: sandbox.None, limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, keyFile
}

// startKeyJob starts a job of the keys agent, on a connection it closes, and returns its
// session's keys once written.
func startKeyJob(t *testing.T, s *Server, keyFile string) sessionKeys {
	t.Helper()
	os.Remove(keyFile)
	if status, body := apiCall(t, s, "POST", "/api/v1/jobs", `{"agent":"keys","input":"go"}`); status != 201 {
		t.Fatalf("%d %s", status, body)
	}
	var k sessionKeys
	waitUntil(t, "the session's keys", func() bool {
		data, err := os.ReadFile(keyFile)
		return err == nil && json.Unmarshal(data, &k) == nil
	})
	return k
}

// apiCall makes a control API call on a connection of its own, closed after it.
func apiCall(t *testing.T, s *Server, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitUntil polls cond until it holds, failing the test after liveness.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(liveness)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", liveness, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// trickle sends a request's head and 9 bytes of a body of 1,000,000 on a connection of its own,
// and returns it.
func trickle(t *testing.T, base, path string, header map[string]string) (net.Conn, *bufio.Reader) {
	t.Helper()
	host := strings.TrimPrefix(base, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var b strings.Builder
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n", path, host)
	for k, v := range header {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	b.WriteString("\r\n{\"model\":")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(liveness))
	return conn, bufio.NewReader(conn)
}

// Every part of the port (the gateway and the sessions' OTLP receiver, with a session's key; the
// control API, with the token; the dev UI; the fake model; any other path) answers a request whose body trickles in, and
// closes its connection, once the body timeout has passed or at once.
func TestTricklingBodiesCutOff(t *testing.T) {
	s, keyFile := startLimited(t, portLimits{bodyTimeout: 200 * time.Millisecond})
	k := startKeyJob(t, s, keyFile)
	for _, tc := range []struct {
		name   string
		path   string
		header map[string]string
		status int // 0: any
		says   string
	}{
		{"gateway", "/gateway/anthropic/v1/messages", map[string]string{"x-api-key": k.AnthropicAPIKey, "anthropic-version": "2023-06-01"}, 408, "did not come within 200ms (9 of 1000000 bytes came)"},
		{"spans", "/gateway/otlp/v1/traces", map[string]string{"Authorization": "Bearer " + k.AnthropicAPIKey, "Content-Type": "application/x-protobuf"}, 408, "did not come within 200ms"},
		{"api", "/api/v1/jobs", map[string]string{"Authorization": "Bearer " + s.Token}, 408, "did not come within 200ms"},
		{"ui", "/ui/api/v1/jobs", nil, 401, ""},
		{"fake model", "/fake/v1/messages", map[string]string{"x-api-key": "guess", "anthropic-version": "2023-06-01"}, 0, ""},
		{"elsewhere", "/elsewhere", nil, 401, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, br := trickle(t, s.URL, tc.path, tc.header)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Errorf("%s: no answer to a trickling body: %v", tc.path, err)
				return
			}
			body, _ := io.ReadAll(resp.Body)
			if tc.status != 0 && resp.StatusCode != tc.status || !strings.Contains(string(body), tc.says) {
				t.Errorf("%s: %d %s", tc.path, resp.StatusCode, body)
			}
			if _, err := br.ReadByte(); err == nil {
				t.Errorf("%s: the connection was left open", tc.path)
			}
		})
	}
	// The session's key still works: the refusal cost the job nothing.
	if got := sessionCall(t, k, `{"model":"fake-model","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`); got != 200 {
		t.Errorf("a model call after the trickling ones: %d", got)
	}
}

// sessionCall makes a model call with the session's key and returns its status.
func sessionCall(t *testing.T, k sessionKeys, body string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", k.AnthropicBaseURL+"/v1/messages", strings.NewReader(body))
	req.Header.Set("x-api-key", k.AnthropicAPIKey)
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("content-type", "application/json")
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// infoInBackground asks the API for its info in the background; the channel gets "STATUS BODY".
func infoInBackground(t *testing.T, s *Server) <-chan string {
	done := make(chan string, 1)
	go func() {
		status, body := apiCall(t, s, "GET", "/api/v1/info", "")
		done <- fmt.Sprintf("%d %s", status, body)
	}()
	return done
}

// wantThrough fails the test unless what, the request of done, gets a 200 within liveness.
func wantThrough(t *testing.T, done <-chan string, what string) {
	t.Helper()
	select {
	case got := <-done:
		if !strings.HasPrefix(got, "200 ") {
			t.Errorf("%s: %s", what, got)
		}
	case <-time.After(liveness):
		t.Fatalf("%s never got through", what)
	}
}

// The port serves at most maxConns connections at once: with three trickling requests held, an
// honest request and a model call still get through on the fourth; with more trickling than that
// the others wait, and get through once the held ones go. The gateway's calls to the fake model
// take no connection of the port.
func TestConnectionsBounded(t *testing.T) {
	s, keyFile := startLimited(t, portLimits{maxConns: 4, bodyTimeout: 10 * time.Minute})
	k := startKeyJob(t, s, keyFile)
	open := func() int { n, _ := s.conns.now(); return n }
	var held []net.Conn
	hold := func() {
		conn, _ := trickle(t, s.URL, "/api/v1/jobs", map[string]string{"Authorization": "Bearer " + s.Token})
		held = append(held, conn)
	}
	waitUntil(t, "no connection open", func() bool { return open() == 0 })
	for range 3 {
		hold()
	}
	waitUntil(t, "three trickling requests held", func() bool { return open() == 3 })
	if status, body := apiCall(t, s, "GET", "/api/v1/info", ""); status != 200 {
		t.Fatalf("an honest request with three held: %d %s", status, body)
	}
	if got := sessionCall(t, k, `{"model":"fake-model","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`); got != 200 {
		t.Fatalf("a model call with three held: %d", got)
	}

	for range 3 {
		hold()
	}
	waitUntil(t, "the port full", func() bool { return open() >= 4 })
	done := infoInBackground(t, s)
	for _, conn := range held {
		conn.Close()
	}
	wantThrough(t, done, "the honest request once the held ones went")
	if _, peak := s.conns.now(); peak > 4 {
		t.Errorf("%d connections open at once, over the limit of 4", peak)
	}
}

// Connections kept alive, idle between requests, cannot hold the port: once the port is full,
// those idle are closed (a client that sends a request on each now and then, as a hostile
// harness on the same loopback can, held it), and a new client gets through at once, not after
// idleTimeout.
func TestIdleConnectionsGiveWayWhenThePortIsFull(t *testing.T) {
	s, _ := startLimited(t, portLimits{maxConns: 4})
	open := func() int { n, _ := s.conns.now(); return n }
	waitUntil(t, "no connection open", func() bool { return open() == 0 })
	host := strings.TrimPrefix(s.URL, "http://")
	var kept []*bufio.Reader
	var conns []net.Conn
	for range 4 {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		fmt.Fprintf(conn, "GET /api/v1/info HTTP/1.1\r\nHost: %s\r\n\r\n", host)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		kept, conns = append(kept, br), append(conns, conn)
	}
	wantThrough(t, infoInBackground(t, s), "a new client with the port full of idle connections")
	// The fourth filled the port: the connections idle then, or that went idle while it was
	// full, were closed; at least one of the three before it (the server marks a connection idle
	// a moment after its answer, so which ones depends on when). They were closed before the new
	// client got in: what is closed reads its end at once.
	closed := 0
	for i, br := range kept[:3] {
		// Closed, its end is there already; open, it is idle for good: a second tells them apart.
		conns[i].SetReadDeadline(time.Now().Add(time.Second))
		if _, err := br.ReadByte(); err == io.EOF {
			closed++
		}
	}
	if closed == 0 {
		t.Error("no idle connection was closed: the new client got in some other way")
	}
}

// The body timeout limits bodies, not answers: a job's live stream and the feed last longer than
// it, through a job's whole life.
func TestLiveStreamsOutliveBodyTimeout(t *testing.T) {
	const bodyTimeout = 50 * time.Millisecond
	s, keyFile := startLimited(t, portLimits{bodyTimeout: bodyTimeout})
	k := startKeyJob(t, s, keyFile)
	c := client.New(s.Context())
	feed, err := http.NewRequestWithContext(t.Context(), "GET", s.URL+"/api/v1/feed?job="+k.Job, nil)
	if err != nil {
		t.Fatal(err)
	}
	feed.Header.Set("Authorization", "Bearer "+s.Token)
	feedResp, err := http.DefaultClient.Do(feed)
	if err != nil {
		t.Fatal(err)
	}
	defer feedResp.Body.Close()
	var types []string
	streamed := make(chan error, 1)
	go func() {
		streamed <- c.Events(t.Context(), k.Job, 0, func(ev apiv1.Event) error {
			types = append(types, ev.Type)
			if ev.Type == apiv1.EventSay {
				// The condition under test: the streams stay open for several body timeouts
				// before the job ends.
				time.Sleep(6 * bodyTimeout)
				go c.Cancel(t.Context(), k.Job)
			}
			return nil
		}, func(err error) { t.Errorf("the live stream broke: %v", err) })
	}()
	select {
	case err := <-streamed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(liveness):
		t.Fatal("the live stream never ended")
	}
	if types[len(types)-1] != apiv1.EventStatus {
		t.Errorf("the live stream's events: %v", types)
	}
	// The feed is still open and tells the job's end.
	br := bufio.NewReader(feedResp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the feed ended: %v", err)
		}
		if strings.Contains(line, `"status":"cancelled"`) {
			break
		}
	}
}

// idleFlood holds n connections to the server that send nothing and connect again as soon as
// the server closes one, as a hostile local client may; it returns once each has connected, and
// stop ends them. dials counts the connections made.
func idleFlood(tb testing.TB, url string, n int) (dials *atomic.Int64, stop func()) {
	host := strings.TrimPrefix(url, "http://")
	done := make(chan struct{})
	dials = new(atomic.Int64)
	var wg, first sync.WaitGroup
	first.Add(n)
	for range n {
		wg.Go(func() {
			buf := make([]byte, 512)
			once := sync.OnceFunc(first.Done)
			defer once()
			for {
				select {
				case <-done:
					return
				default:
				}
				conn, err := net.Dial("tcp", host)
				if err != nil {
					select {
					case <-done:
						return
					case <-time.After(10 * time.Millisecond): // out of ports or descriptors for a moment
					}
					continue
				}
				dials.Add(1)
				once()
				closed := make(chan struct{})
				go func() {
					select {
					case <-done:
						conn.Close()
					case <-closed:
					}
				}()
				for {
					if _, err := conn.Read(buf); err != nil {
						break
					}
				}
				conn.Close()
				close(closed)
			}
		})
	}
	first.Wait()
	return dials, func() { close(done); wg.Wait() }
}

// Connections that send nothing and connect again as soon as they are closed, more of them than
// the port serves, from the address every local client shares: honest requests are still
// answered, one after another, however long the idle ones would be held (the header timeout is
// 10 minutes here: they held the port until it, and an API call waited as long, 9 s with the
// default 10 s). The flood holds at most its address's share of idle connections past the moment
// each has to send its request.
func TestIdleFloodGivesWay(t *testing.T) {
	s, _ := startLimited(t, portLimits{maxConns: 16, headerTimeout: 10 * time.Minute})
	_, stop := idleFlood(t, s.URL, 40)
	defer stop()
	for i := range 5 {
		wantThrough(t, infoInBackground(t, s), fmt.Sprintf("honest request %d with the port flooded", i+1))
	}
	if _, peak := s.conns.now(); peak > 16 {
		t.Errorf("%d connections open at once, over the limit of 16", peak)
	}
}

// An honest `oz0 job list` (a client of its own, a connection of its own) while 1,100 idle
// connections from the same address hold the port and connect again as soon as one is closed.
// docs/reliability.md has its figures.
func BenchmarkHonestCallUnderIdleFlood(b *testing.B) {
	s, err := Start(Config{PluginDirs: []string{goPlugin(b, "ok", buildTestHarness(b), "ok")}, Ephemeral: true, Poll: -1, Sandbox: sandbox.None})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	dials, stop := idleFlood(b, s.URL, 1100)
	defer stop()
	before := dials.Load()
	var worst time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := client.New(s.Context()).Jobs(b.Context(), "", "", 0); err != nil {
			b.Fatal(err)
		}
		worst = max(worst, time.Since(start))
	}
	b.ReportMetric(float64(worst.Milliseconds()), "worst-ms")
	b.ReportMetric(float64(dials.Load()-before)/float64(b.N), "flood-dials/op")
}
