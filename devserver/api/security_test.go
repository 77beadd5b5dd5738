package api

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
)

// routeRequest is a request for route rt (its pattern's wildcards filled in) with body.
func (a *testAPI) routeRequest(rt Route, body io.Reader) *http.Request {
	a.t.Helper()
	method, path, _ := strings.Cut(rt.Pattern, " ")
	path = strings.NewReplacer("{id}", "job_nope", "{name}", "NOPE").Replace(path)
	req, err := http.NewRequest(method, a.url+path, body)
	if err != nil {
		a.t.Fatal(err)
	}
	return req
}

func send(t *testing.T, req *http.Request) (int, string, http.Header) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// Every call the API serves, a call added later included (RouteList), passes the guard: without
// the token 401; with a Host off loopback 403; a write from another origin 403; a second
// Authorization header (the first right) 400; the scheme in any case is the scheme.
func TestEveryRouteGuarded(t *testing.T) {
	a := newTestAPI(t)
	routes := RouteList(a.b)
	if len(routes) < 20 {
		t.Fatalf("only %d routes listed", len(routes))
	}
	for _, rt := range routes {
		req := a.routeRequest(rt, nil)
		status, body, h := send(t, req)
		a.wantError(rt.Pattern+" without the token", status, body, 401, apiv1.CodeUnauthorized)
		if h.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: no WWW-Authenticate", rt.Pattern)
		}

		req = a.routeRequest(rt, nil)
		req.Header.Set("Authorization", "Bearer "+a.token)
		req.Host = "attacker.example"
		status, body, _ = send(t, req)
		a.wantError(rt.Pattern+" with a Host off loopback", status, body, 403, apiv1.CodeForbiddenHost)

		if req.Method != http.MethodGet {
			req = a.routeRequest(rt, nil)
			req.Header.Set("Authorization", "Bearer "+a.token)
			req.Header.Set("Origin", "http://attacker.example")
			status, body, _ = send(t, req)
			a.wantError(rt.Pattern+" from another origin", status, body, 403, apiv1.CodeCrossOrigin)
		}

		req = a.routeRequest(rt, nil)
		req.Header.Add("Authorization", "Bearer "+a.token)
		req.Header.Add("Authorization", "Bearer oz0t_other")
		status, body, _ = send(t, req)
		a.wantError(rt.Pattern+" with two Authorization headers", status, body, 400, apiv1.CodeBadRequest)

		for _, scheme := range []string{"bearer", "BEARER", "BeArEr"} {
			req = a.routeRequest(rt, nil)
			req.Header.Set("Authorization", scheme+" "+a.token)
			if rt.Pattern == "GET /api/v1/feed" {
				req.URL.RawQuery = "limit=x" // answered at once, not followed
			}
			if status, body, _ = send(t, req); status == 401 || status == 403 || status == 400 && strings.Contains(body, "header") {
				t.Errorf("%s with the scheme %q: %d %s", rt.Pattern, scheme, status, body)
			}
		}
	}
	// An Oz0 header comes once too (the dev UI's X-Oz0-CSRF).
	req := a.routeRequest(routes[0], nil)
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Add("X-Oz0-CSRF", "a")
	req.Header.Add("X-Oz0-CSRF", "b")
	status, body, _ := send(t, req)
	a.wantError("two X-Oz0-CSRF headers", status, body, 400, apiv1.CodeBadRequest)
	if !strings.Contains(body, "the X-Oz0-Csrf header comes 2 times") {
		t.Errorf("the message: %s", body)
	}
}

// Every call that takes a body refuses one over its limit with 413, naming the limit, whether the
// body declares its length or not; a 50 MB job is no "unexpected EOF".
func TestBodyOverTheLimit(t *testing.T) {
	a := newTestAPI(t)
	for _, tc := range []struct {
		name  string
		route string
		limit string
		size  int
	}{
		{"create job", "POST /api/v1/jobs", "17 MiB", 50 << 20},
		{"replay", "POST /api/v1/jobs/{id}/replay", "1 MiB", 2 << 20},
		{"approve", "POST /api/v1/approvals/{id}/approve", "1 MiB", 2 << 20},
		{"deny", "POST /api/v1/approvals/{id}/deny", "1 MiB", 2 << 20},
		{"set secret", "PUT /api/v1/secrets/{name}", "132 KiB", 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, sized := range []bool{true, false} {
				big := `{"agent":"hello","input":"` + strings.Repeat("x", tc.size) + `"}`
				var body io.Reader = strings.NewReader(big)
				if !sized {
					body = io.MultiReader(body) // no length: sent chunked
				}
				req := a.routeRequest(Route{Pattern: tc.route}, body)
				req.Header.Set("Authorization", "Bearer "+a.token)
				status, got, _ := send(t, req)
				a.wantError(fmt.Sprintf("%s, sized %v", tc.route, sized), status, got, 413, apiv1.CodeTooLarge)
				if !strings.Contains(got, "larger than "+tc.limit+", the most "+strings.Replace(strings.Replace(tc.route, "{id}", "job_nope", 1), "{name}", "NOPE", 1)+" takes") {
					t.Errorf("%s: %s", tc.route, got)
				}
			}
		})
	}
	// The routes still take what they always took.
	if status, body := a.call("POST", "/api/v1/jobs", `{"agent":"hello","input":"`+strings.Repeat("x", 1<<20)+`"}`); status != 201 {
		t.Errorf("a 1 MB input: %d %.200s", status, body)
	}
}

// Under BodyDeadline, a body that is sent in part and then trickled is answered 408 and its
// connection closed; a request without a body is not limited.
func TestTricklingBodyAnswered(t *testing.T) {
	a := newTestAPI(t)
	srv := httptest.NewServer(BodyDeadline(100*time.Millisecond, Handler(a.b)))
	t.Cleanup(srv.Close)
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/jobs HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Length: 1000000\r\n\r\n{\"agent\":", strings.TrimPrefix(srv.URL, "http://"), a.token)
	conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // a server that never answers fails the test
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer to a trickling body: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	a.wantError("a trickling body", resp.StatusCode, string(body), 408, apiv1.CodeTimeout)
	if !strings.Contains(string(body), "did not come within 100ms") {
		t.Errorf("the message: %s", body)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("the connection was left open: %v", err)
	}
}
