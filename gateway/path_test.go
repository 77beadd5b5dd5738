package gateway

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// writeCounter counts the writes made on the connections it dials.
type writeCounter struct {
	mu     sync.Mutex
	writes int
}

type countedConn struct {
	net.Conn
	wc *writeCounter
}

func (c countedConn) Write(p []byte) (int, error) {
	c.wc.mu.Lock()
	c.wc.writes++
	c.wc.mu.Unlock()
	return c.Conn.Write(p)
}

func (wc *writeCounter) count() int {
	wc.mu.Lock()
	defer wc.mu.Unlock()
	return wc.writes
}

// A request of the usual size goes upstream in one write, headers and body together, as net/http
// sends an in-memory body; a reader it does not know had the headers flushed first, a write (and
// a wake of the upstream) more on every call.
func TestSmallRequestGoesUpstreamInOneWrite(t *testing.T) {
	wc := &writeCounter{}
	e := newEnv(t, helloScript, withConfig(func(c *Config) {
		tr := NewTransport()
		dial := tr.DialContext
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countedConn{conn, wc}, nil
		}
		c.Transport = tr
	}))
	key := e.issue("job-1", "triage", Limits{}, Budget{})
	for i, body := range []string{anthBody, `{"model":"fake-model","max_tokens":100,"messages":[{"role":"user","content":"` + strings.Repeat("x", 16<<10) + `"}]}`} {
		before := wc.count()
		if r := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), body); r.status != 200 {
			t.Fatalf("call %d: %d %s", i+1, r.status, r.body)
		}
		if n := wc.count() - before; n != 1 {
			t.Errorf("call %d (%d bytes): the request went upstream in %d writes, want 1", i+1, len(body), n)
		}
	}
}

// A call's answer is on its way to the client before the gateway's handler returns: what the
// gateway does after the answer (the recording, the hand-over to the meter) is not between the
// upstream's answer and the client, and nothing a server around it does after the handler is.
func TestAnswerLeavesBeforeTheHandlerReturns(t *testing.T) {
	e := newEnv(t, helloScript)
	key := e.issue("job-1", "triage", Limits{}, Budget{})
	got := make(chan struct{}, 1) // never blocks: a handler that gave up waiting receives nothing
	srv := httptest.NewServer(http.StripPrefix("/gateway", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.gw.ServeHTTP(w, r)
		// Held until the client has the whole answer: an answer sent only on return never comes.
		select {
		case <-got:
		case <-time.After(liveness):
		}
	})))
	t.Cleanup(srv.Close)
	for _, stream := range []bool{false, true} {
		body := anthBody
		if stream {
			body = strings.Replace(anthBody, `{`, `{"stream":true,`, 1)
		}
		req, _ := http.NewRequest("POST", srv.URL+"/gateway/anthropic/v1/messages", strings.NewReader(body))
		for k, v := range anthHeaders(key) {
			req.Header.Set(k, v)
		}
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var data []byte
		if stream { // its last event; its end comes as the handler returns
			events := &sseReader{br: bufio.NewReader(resp.Body)}
			for !strings.Contains(string(data), "message_stop") {
				ev, err := events.next()
				if err != nil {
					break
				}
				data = append(data, ev...)
			}
		} else {
			data, err = io.ReadAll(resp.Body)
		}
		got <- struct{}{}
		resp.Body.Close()
		switch {
		case time.Since(start) >= liveness:
			t.Fatalf("stream %v: the answer came only once the handler returned", stream)
		case err != nil:
			t.Fatalf("reading the answer: %v", err)
		case stream && !strings.Contains(string(data), "message_stop"):
			t.Errorf("the stream's last event did not come before the handler returned: %q", data)
		case !stream && !strings.Contains(string(data), `"usage"`):
			t.Errorf("the answer: %q", data)
		}
	}
}

// A stream's headers wait a little for its first events, to go out with them; an upstream that
// sends its headers and then nothing for a while still has them reach the client.
func TestStreamHeadersReachTheClientBeforeTheFirstEvent(t *testing.T) {
	release := make(chan struct{})
	e := newEnv(t, helloScript, withUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		<-release
		io.WriteString(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	})))
	defer close(release)
	key := e.issue("job-1", "triage", Limits{}, Budget{})
	ctx, cancel := context.WithTimeout(context.Background(), liveness)
	defer cancel()
	resp, _ := openStream(t, ctx, e.anthropicURL()+"/v1/messages", anthHeaders(key), strings.Replace(anthBody, `{`, `{"stream":true,`, 1))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("the stream's headers: %d %v", resp.StatusCode, resp.Header)
	}
}

// Hurry has the calls that ended metered without the rest of the meter's linger: a job about to
// end does not wait for it.
func TestHurryCutsTheLinger(t *testing.T) {
	m := &batchMeter{}
	e := newEnv(t, helloScript, withConfig(func(c *Config) { c.Meter = m; c.MeterLinger = 10 * liveness }))
	key := e.issue("job_h", "agent", Limits{}, Budget{})
	if r := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), anthBody); r.status != 200 {
		t.Fatalf("call: %d", r.status)
	}
	e.gw.Hurry()
	for deadline := time.Now().Add(liveness); ; time.Sleep(5 * time.Millisecond) {
		m.mu.Lock()
		n := len(m.batches)
		m.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the call was not metered in %s of a %s linger, hurried", liveness, 10*liveness)
		}
	}
}
