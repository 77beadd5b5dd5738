package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// faceCall is a call of each face: its URL under the env, headers and a body of n bytes or more
// (the user message padded).
func faceCall(e *env, face Format, key string, n int) (string, map[string]string, string) {
	if face == OpenAIChat {
		pad := strings.Repeat("x", max(0, n-len(openaiBody)))
		return e.openaiURL() + "/chat/completions", openaiHeaders(key), `{"model":"fake-model","messages":[{"role":"user","content":"hello` + pad + `"}]}`
	}
	pad := strings.Repeat("x", max(0, n-len(anthBody)))
	return e.anthropicURL() + "/v1/messages", anthHeaders(key), `{"model":"fake-model","max_tokens":100,"messages":[{"role":"user","content":"hello` + pad + `"}]}`
}

// doHeaders sends a request whose headers may repeat.
func doHeaders(t *testing.T, method, u string, header [][2]string, body io.Reader) rawResponse {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range header {
		req.Header.Add(kv[0], kv[1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return rawResponse{resp.StatusCode, resp.Header, data}
}

func pairs(h map[string]string) [][2]string {
	var out [][2]string
	for k, v := range h {
		out = append(out, [2]string{k, v})
	}
	return out
}

// A header the gateway checks comes once: a second Oz0-Job (the first matching the key) or a
// second session key is refused, in the provider's shape, before anything goes upstream.
func TestRepeatedHeadersRefused(t *testing.T) {
	e := newEnv(t, helloScript)
	key := e.issue("job_rep", "acme-triage", Limits{MaxSteps: 100}, Budget{})
	other := e.issue("job_other", "acme-triage", Limits{}, Budget{})
	for _, face := range Formats {
		u, h, body := faceCall(e, face, key, 0)
		for _, tc := range []struct {
			name, header string
			extra        [][2]string
			refused      string
		}{
			{"two Oz0-Job, the first matching", "Oz0-Job", [][2]string{{"Oz0-Job", "job_rep"}, {"Oz0-Job", "job_other"}}, "Oz0-Job"},
			{"two Oz0-Agent, both matching", "Oz0-Agent", [][2]string{{"Oz0-Agent", "acme-triage"}, {"oz0-agent", "acme-triage"}}, "Oz0-Agent"},
			{"two x-api-key, the first valid", "X-Api-Key", [][2]string{{"X-Api-Key", key}, {"X-Api-Key", other}}, ""},
			{"two Authorization, the first valid", "Authorization", [][2]string{{"Authorization", "Bearer " + key}, {"Authorization", "Bearer " + other}}, ""},
		} {
			t.Run(string(face)+" "+tc.name, func(t *testing.T) {
				hdr := pairs(h)
				if tc.header == "X-Api-Key" || tc.header == "Authorization" {
					hdr = [][2]string{{"content-type", "application/json"}, {"anthropic-version", "2023-06-01"}}
				}
				r := doHeaders(t, "POST", u, append(hdr, tc.extra...), strings.NewReader(body))
				typ, msg, _ := errorShape(t, face, r.body)
				if r.status != 400 || face == AnthropicMessages && typ != "invalid_request_error" || !strings.Contains(msg, "the "+tc.header+" header comes 2 times") {
					t.Errorf("%s, %s: %d %s", face, tc.name, r.status, r.body)
				}
			})
		}
	}
	if n := len(e.upstreamRequests("")); n != 0 {
		t.Errorf("%d calls went upstream", n)
	}
	for _, c := range e.calls("job_rep", 4) {
		if c.Step != 0 || c.Status != 400 || c.Refused != "Oz0-Job" && c.Refused != "Oz0-Agent" {
			t.Errorf("metered: %+v", c)
		}
	}
}

// A body over the per-call limit gets 413 naming the limit, whether it declares its length or
// not.
func TestBodyOverTheLimit(t *testing.T) {
	e := newEnv(t, helloScript, withConfig(func(c *Config) { c.MaxRequestBytes = 4000 }))
	key := e.issue("job_big", "a", Limits{}, Budget{})
	for _, face := range Formats {
		u, h, body := faceCall(e, face, key, 4001)
		for _, sized := range []bool{true, false} {
			var rd io.Reader = strings.NewReader(body)
			if !sized {
				rd = io.MultiReader(rd) // no length: sent chunked
			}
			r := doHeaders(t, "POST", u, pairs(h), rd)
			typ, msg, _ := errorShape(t, face, r.body)
			if r.status != 413 || face == AnthropicMessages && typ != "request_too_large" || !strings.Contains(msg, "larger than the gateway's limit of 4000 bytes (4000 bytes)") {
				t.Errorf("%s, sized %v: %d %s", face, sized, r.status, r.body)
			}
		}
		if u, h, body := faceCall(e, face, key, 3900); doHeaders(t, "POST", u, pairs(h), io.MultiReader(strings.NewReader(body))).status != 200 {
			t.Errorf("%s: a chunked body under the limit was refused", face)
		}
	}
}

// blockingUpstream answers each call once the test lets it, counting the calls that arrived.
type blockingUpstream struct {
	arrived atomic.Int32
	release chan struct{}
}

func (b *blockingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	b.arrived.Add(1)
	select {
	case <-b.release:
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":1,"output_tokens":1}}`)
}

// waitFor polls cond until it holds; a gateway that never gets there fails the test after
// liveness.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(liveness)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", liveness, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// The bodies held at once are bounded over all calls: a call whose body does not fit waits in
// line, and goes on once a call ahead has its answer; one that waits past the queue timeout gets
// 503 in the provider's shape, with Retry-After, and is not a step.
func TestBodiesInFlightBounded(t *testing.T) {
	up := &blockingUpstream{release: make(chan struct{})}
	e := newEnv(t, helloScript, withUpstream(up), withConfig(func(c *Config) {
		c.MaxRequestBytes, c.MaxBodyBytesInFlight = 10000, 15000
	}))
	key := e.issue("job_room", "a", Limits{}, Budget{})
	u, h, body := faceCall(e, AnthropicMessages, key, 9000)
	first := make(chan rawResponse)
	go func() { first <- do(t, "POST", u, h, body) }()
	waitFor(t, "the first call upstream", func() bool { return up.arrived.Load() == 1 })

	// Room for 6000 more: the second call waits for it.
	second := make(chan rawResponse)
	go func() { second <- do(t, "POST", u, h, body) }()
	waitFor(t, "the second call to wait for room", func() bool { return e.gw.budget.Waiting() == 1 })
	if n := up.arrived.Load(); n != 1 {
		t.Fatalf("%d calls upstream while the second should wait", n)
	}
	// A small call waits behind it too: first come, first served.
	small := make(chan rawResponse)
	_, _, smallBody := faceCall(e, AnthropicMessages, key, 0)
	go func() { small <- do(t, "POST", u, h, smallBody) }()
	waitFor(t, "the small call to wait behind it", func() bool { return e.gw.budget.Waiting() == 2 })
	close(up.release)
	for name, ch := range map[string]chan rawResponse{"first": first, "second": second, "small": small} {
		if r := <-ch; r.status != 200 {
			t.Errorf("the %s call: %d %s", name, r.status, r.body)
		}
	}

	e.gw.Flush()
	if held := e.gw.budget.Held(); held != 0 {
		t.Errorf("%d bytes still held", held)
	}

	// With (almost) no wait, a call that does not fit is refused.
	up = &blockingUpstream{release: make(chan struct{})}
	e = newEnv(t, helloScript, withUpstream(up), withConfig(func(c *Config) {
		c.MaxRequestBytes, c.MaxBodyBytesInFlight, c.BodyQueueTimeout = 10000, 15000, time.Millisecond
	}))
	key = e.issue("job_full", "a", Limits{}, Budget{})
	u, h, body = faceCall(e, AnthropicMessages, key, 9000)
	go func() { first <- do(t, "POST", u, h, body) }()
	waitFor(t, "the first call upstream", func() bool { return up.arrived.Load() == 1 })
	for _, face := range Formats {
		u, h, body := faceCall(e, face, key, 9000)
		r := do(t, "POST", u, h, body)
		typ, msg, code := errorShape(t, face, r.body)
		if r.status != 503 || r.header.Get("Retry-After") == "" || !strings.Contains(msg, "too many request bytes in flight") ||
			face == AnthropicMessages && typ != "overloaded_error" || face == OpenAIChat && (typ != "server_error" || code != "server_overloaded") {
			t.Errorf("%s: %d %v %s", face, r.status, r.header, r.body)
		}
	}
	close(up.release)
	if r := <-first; r.status != 200 {
		t.Errorf("the first call: %d %s", r.status, r.body)
	}
	e.gw.Flush()
	if u := e.gw.JobUsage("job_full"); u.Steps != 1 {
		t.Errorf("%d steps, want the one call that went upstream", u.Steps)
	}
}

// After a burst of large bodies, once they are all answered, the gateway gives the memory back to
// the system; small calls do not.
func TestMemoryGivenBackAfterABurst(t *testing.T) {
	e := newEnv(t, helloScript)
	var freed atomic.Int32
	e.gw.budget.FreeMemory = func() { freed.Add(1) }
	e.gw.budget.FreeAfter, e.gw.budget.FreeBelow = 20000, 0
	key := e.issue("job_mem", "a", Limits{}, Budget{})
	u, h, body := faceCall(e, AnthropicMessages, key, 1000)
	for range 3 {
		if r := do(t, "POST", u, h, body); r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
	}
	if n := freed.Load(); n != 0 {
		t.Errorf("small calls gave memory back %d times", n)
	}
	u, h, body = faceCall(e, AnthropicMessages, key, 30000)
	if r := do(t, "POST", u, h, body); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	waitFor(t, "the memory to be given back", func() bool { return freed.Load() == 1 })
}

// rawRequest writes a request's head and the first part of its body on a connection of its own,
// and returns the connection, for the rest of the test to trickle or read.
func rawRequest(t *testing.T, base, path string, header map[string]string, contentLength int, part string) (net.Conn, *bufio.Reader) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var b strings.Builder
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", path, u.Host, contentLength)
	for k, v := range header {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	b.WriteString("\r\n" + part)
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(liveness)) // a gateway that never answers fails the test
	return conn, bufio.NewReader(conn)
}

// A request that sends its head and then trickles its body is answered 408, in the provider's
// shape, once the body timeout has passed, and its connection is closed; it is no step.
func TestTricklingBodyCutOff(t *testing.T) {
	e := newEnv(t, helloScript, withConfig(func(c *Config) { c.BodyReadTimeout = 100 * time.Millisecond }))
	key := e.issue("job_slow", "a", Limits{}, Budget{})
	for _, face := range Formats {
		u, h, _ := faceCall(e, face, key, 0)
		path := strings.TrimPrefix(u, e.srv.URL)
		conn, br := rawRequest(t, e.srv.URL, path, h, 1000000, `{"model":`)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: no answer to a trickling body: %v", face, err)
		}
		data, _ := io.ReadAll(resp.Body)
		typ, msg, code := errorShape(t, face, data)
		if resp.StatusCode != 408 || !strings.Contains(msg, "did not come within 100ms (9 of 1000000 bytes came)") ||
			face == AnthropicMessages && typ != "timeout_error" || face == OpenAIChat && code != "request_timeout" {
			t.Errorf("%s: %d %s", face, resp.StatusCode, data)
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("%s: the connection was left open: %v", face, err)
		}
		conn.Close()
	}
	e.gw.Flush()
	if u := e.gw.JobUsage("job_slow"); u.Steps != 0 {
		t.Errorf("%d steps", u.Steps)
	}
}

// The body timeout is a deadline on reading the body only: an answer that takes longer than it,
// streamed or not, comes whole.
func TestLongAnswerOutlivesBodyTimeout(t *testing.T) {
	const bodyTimeout = 50 * time.Millisecond
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		// The answer's head, then a pause of several body timeouts before its end: the
		// condition under test, not an ordering of the test's events.
		if strings.Contains(r.URL.Path, "messages") && r.Header.Get("X-Stream") == "yes" {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\n")
			w.(http.Flusher).Flush()
			time.Sleep(6 * bodyTimeout)
			io.WriteString(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
			return
		}
		time.Sleep(6 * bodyTimeout)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"m","type":"message","content":[],"usage":{"input_tokens":1,"output_tokens":1}}`)
	})
	e := newEnv(t, helloScript, withUpstream(slow), withConfig(func(c *Config) { c.BodyReadTimeout = bodyTimeout }))
	key := e.issue("job_long", "a", Limits{}, Budget{})
	u, h, body := faceCall(e, AnthropicMessages, key, 0)
	if r := do(t, "POST", u, h, body); r.status != 200 || !strings.Contains(string(r.body), `"usage"`) {
		t.Errorf("a slow answer: %d %s", r.status, r.body)
	}
	h["X-Stream"] = "yes"
	resp, events := openStream(t, context.Background(), u, h, strings.Replace(body, `"max_tokens"`, `"stream":true,"max_tokens"`, 1))
	var got []string
	for {
		ev, err := events.next()
		if err != nil {
			break
		}
		got = append(got, ev)
	}
	if resp.StatusCode != 200 || len(got) != 2 || !strings.Contains(got[1], "message_stop") {
		t.Errorf("a slow stream: %d %q", resp.StatusCode, got)
	}
}

// The body goes upstream with the gateway's edits spliced in; it can be read again from its start
// (the transport does, on a connection that turned out dead) until it is released.
func TestUpstreamBodySplicesEdits(t *testing.T) {
	body := []byte(`{"model":"a","stream":true,"messages":[]}`)
	edits, info := planRequest(body, OpenAIChat, map[string]string{"a": "b"})
	up := newUpstreamBody(body, edits)
	want, _ := rewriteRequest(body, OpenAIChat, map[string]string{"a": "b"})
	for range 2 {
		rc, err := up.open()
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		if string(got) != string(want) || up.size != int64(len(want)) || !info.injected {
			t.Errorf("got %s (%d), want %s", got, up.size, want)
		}
	}
	up.release()
	if _, err := up.open(); err == nil {
		t.Error("opened after release")
	}
}
