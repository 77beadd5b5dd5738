package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/internal/testbin"
)

// listener serves each connection with serve, until the test ends.
func listener(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); serve(c) }()
		}
	}()
	return "http://" + ln.Addr().String()
}

// What is at OZ0_CONTEXT's address but is not a dev server that answers is said in words, with
// how to mend it: never the transport's chain (`Get "http://…": read tcp …: connection reset`).
func TestCallsThatGetNoAnswer(t *testing.T) {
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/api/v1/jobs" {
			w.Write([]byte("<html>a page</html>")) // 200, not JSON
			return
		}
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte("<html>Not Found</html>"))
	}))
	defer html.Close()
	redirect := httptest.NewServer(http.RedirectHandler("http://127.0.0.1:1/elsewhere", http.StatusMovedPermanently))
	defer redirect.Close()
	stopped := make(chan struct{})
	defer close(stopped)
	goneURL := "http://" + testbin.RefusedAddr(t)

	for _, c := range []struct {
		what, url string
		timeout   time.Duration
		call      func(*Client) error
		want      string
	}{
		{"nothing listens", goneURL, 0, list, "no dev server at " + goneURL + " (connection refused); start `oz0 dev` and export the OZ0_CONTEXT line it prints"},
		// It reads the request first: closed before, net/http may say it as a closed idle
		// connection, which is the next case's.
		{"the connection is closed", listener(t, func(c net.Conn) { c.Read(make([]byte, 4096)) }), 0, list, "closed the connection without an answer: it is not an oz0 dev server; start `oz0 dev`"},
		{"the answer is not HTTP", listener(t, func(c net.Conn) { c.Read(make([]byte, 4096)); c.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n")) }), 0, list, "does not speak HTTP: it is not an oz0 dev server"},
		{"an error that is not the API's", html.URL, 0, show, "answered 404 Not Found: it is not an oz0 dev server"},
		{"an answer that is not JSON", html.URL, 0, list, "answered with something that is not the control API's JSON: it is not an oz0 dev server"},
		{"a redirect", redirect.URL, 0, list, "answered 301 Moved Permanently: it is not an oz0 dev server"},
		{"no answer in time", listener(t, func(net.Conn) { <-stopped }), 50 * time.Millisecond, list, "did not answer within 50ms; is `oz0 dev` stopped"},
		// A dev server killed while it answered: the connection closes, and nothing listens after.
		{"killed mid-request", killedMidRequest(t), 0, list, "stopped before it answered (it was stopped, or it crashed), so what was asked may not have been done; start `oz0 dev` again"},
		// One that closed the connection and answers the next (restarted): try again.
		{"restarted mid-request", devServerThatDropsOne(t), 0, list, "closed the connection before it answered (it was stopping, or has restarted since); run the command again"},
	} {
		t.Run(c.what, func(t *testing.T) {
			cl := newClient(apiv1.Context{URL: c.url, Token: apiv1.NewToken()}, c.timeout)
			err := c.call(cl)
			var apiErr *APIError
			switch {
			case err == nil:
				t.Errorf("%s: no error", c.what)
			case errors.As(err, &apiErr):
				t.Errorf("%s: an APIError (%v): what the dev server refused, not that there is none", c.what, err)
			case !strings.Contains(err.Error(), c.want):
				t.Errorf("%s: %v\nwant %q in it", c.what, err, c.want)
			case strings.Contains(err.Error(), `"http://`) || strings.Contains(err.Error(), "tcp "):
				t.Errorf("%s: the transport's chain: %v", c.what, err)
			}
		})
	}
}

// killedMidRequest is a server that reads a request and dies: its listener and the connection
// close, without an answer.
func killedMidRequest(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Read(make([]byte, 4096))
		ln.Close()
		c.Close()
	}()
	t.Cleanup(func() { ln.Close() })
	return "http://" + ln.Addr().String()
}

// devServerThatDropsOne closes the connection of its first request without an answer, and
// answers the next as the control API does.
func devServerThatDropsOne(t *testing.T) string {
	var dropped atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !dropped.Swap(true) {
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
			return
		}
		w.Header().Set(apiv1.ServerHeader, "v1")
		w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func list(c *Client) error { _, err := c.Jobs(context.Background(), "", "", 0); return err }
func show(c *Client) error { _, err := c.Job(context.Background(), "job_a"); return err }

// An empty ID is refused before it makes a path with an empty segment, which the server's router
// would clean into another call's path (jobs//cancel is jobs/cancel).
func TestEmptyIDIsRefused(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls++ }))
	defer srv.Close()
	c := New(apiv1.Context{URL: srv.URL, Token: apiv1.NewToken()})
	ctx := context.Background()
	for what, call := range map[string]func() error{
		"Job":        func() error { _, err := c.Job(ctx, ""); return err },
		"Cancel":     func() error { _, err := c.Cancel(ctx, ""); return err },
		"Trace":      func() error { return c.Trace(ctx, "", nil) },
		"Approve":    func() error { _, _, err := c.Approve(ctx, "", "once"); return err },
		"RevokeRule": func() error { _, err := c.RevokeRule(ctx, ""); return err },
		"SetSecret":  func() error { _, err := c.SetSecret(ctx, "", "v", ""); return err },
	} {
		if err := call(); err == nil || !strings.Contains(err.Error(), "an empty ID") {
			t.Errorf("%s(\"\"): %v", what, err)
		}
	}
	if calls != 0 {
		t.Errorf("the server was called %d times", calls)
	}
}

// net/http's closed idle connection (a server that let the connection go before the request
// reached it) is not said to be "not a dev server": a running dev server's keep-alive can end so.
func TestClosedIdleConnectionSaysTryAgain(t *testing.T) {
	c := New(apiv1.Context{URL: "http://127.0.0.1:9", Token: apiv1.NewToken()})
	err := c.unreachable(&url.Error{Op: "Post", URL: "http://127.0.0.1:9/api/v1/jobs", Err: errors.New("http: server closed idle connection")})
	if msg := err.Error(); !strings.Contains(msg, "closed the connection before the request reached it; run the command again") || strings.Contains(msg, "not an oz0 dev server") {
		t.Errorf("got %q", msg)
	}
}
