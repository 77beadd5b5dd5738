package ui

import (
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/devserver/api"
	"github.com/orchestrator-zero/oz0/devserver/approvals"
	"github.com/orchestrator-zero/oz0/devserver/store"
)

// runner makes jobs in the store without running them.
type runner struct{ st *store.Store }

func (r runner) Submit(agent, input string) (store.Job, error) {
	in, _ := json.Marshal(input)
	return r.st.CreateJob(store.NewJob{Agent: agent, Input: in, InputText: input, Limits: store.Limits{MaxSteps: 10, Timeout: time.Minute}})
}

func (r runner) Waiting(string) string { return "" }

func (r runner) Cancel(id string) bool {
	return r.st.FinishJob(id, store.StatusCancelled, "cancelled", nil) == nil
}

type testUI struct {
	t      *testing.T
	ui     *UI
	url    string
	host   string
	st     *store.Store
	logins atomic.Int32
}

func newTestUI(t *testing.T) *testUI {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tu := &testUI{t: t, st: st}
	tu.ui = New(Config{
		API: api.Routes(&api.Backend{Store: st, Node: runner{st}, Inbox: approvals.New(st), Logger: slog.New(slog.DiscardHandler),
			Info: func() apiv1.Info { return apiv1.Info{Agents: []apiv1.AgentInfo{{Name: "hello"}}} }}),
		Port:    "7311",
		OnLogin: func() { tu.logins.Add(1) },
	})
	srv := httptest.NewServer(tu.ui.Handler())
	t.Cleanup(srv.Close)
	tu.url = srv.URL
	tu.host = strings.TrimPrefix(srv.URL, "http://")
	return tu
}

// do makes a request; header pairs set headers, "Host" the request's Host.
func (tu *testUI) do(method, path, body string, header ...string) (*http.Response, string) {
	tu.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, tu.url+path, rd)
	if err != nil {
		tu.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		tu.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// login uses a new login link and returns the session's cookie header and CSRF token.
func (tu *testUI) login() (cookie, csrf string) {
	tu.t.Helper()
	resp, _ := tu.do("GET", tu.ui.LoginPath(), "")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/" {
		tu.t.Fatalf("login: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	cookies := resp.Cookies()
	if len(cookies) != 1 {
		tu.t.Fatalf("login set %d cookies", len(cookies))
	}
	c := cookies[0]
	if c.Name != "oz0_ui_7311" || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/ui" || c.Value == "" {
		tu.t.Fatalf("the session cookie: %+v", c)
	}
	cookie = c.Name + "=" + c.Value
	resp, body := tu.do("GET", "/ui/session", "", "Cookie", cookie)
	var s SessionInfo
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &s) != nil || s.CSRF == "" {
		tu.t.Fatalf("session: %d %s", resp.StatusCode, body)
	}
	return cookie, s.CSRF
}

func wantError(t *testing.T, what string, resp *http.Response, body string, status int, code string) {
	t.Helper()
	var e apiv1.ErrorBody
	if resp.StatusCode != status || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != code || e.Error.Message == "" {
		t.Errorf("%s: %d %s, want %d with code %s", what, resp.StatusCode, body, status, code)
	}
}

func TestLoginLinkIsUsedOnce(t *testing.T) {
	tu := newTestUI(t)
	path := tu.ui.LoginPath()
	if !regexp.MustCompile(`^/ui/login\?code=[a-z2-7]{32}$`).MatchString(path) {
		t.Fatalf("login path %q", path)
	}
	// A HEAD (a link previewer's, a prefetcher's) neither logs in nor spends the code.
	for range 2 {
		resp, _ := tu.do("HEAD", path, "")
		if resp.StatusCode != http.StatusOK || len(resp.Cookies()) != 0 || tu.logins.Load() != 0 {
			t.Fatalf("HEAD: %d, %d cookies, %d logins", resp.StatusCode, len(resp.Cookies()), tu.logins.Load())
		}
	}
	if resp, _ := tu.do("HEAD", "/ui/login?code=nothing", ""); resp.StatusCode != http.StatusForbidden {
		t.Errorf("HEAD of a bad link: %d", resp.StatusCode)
	}
	resp, _ := tu.do("GET", path, "")
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 || tu.logins.Load() != 1 {
		t.Fatalf("first use: %d, %d cookies, %d logins", resp.StatusCode, len(resp.Cookies()), tu.logins.Load())
	}
	for _, p := range []string{path, "/ui/login?code=nothing", "/ui/login"} {
		resp, body := tu.do("GET", p, "")
		if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 || !strings.Contains(body, "This login link is not valid") {
			t.Errorf("%s: %d %s", p, resp.StatusCode, body)
		}
	}
	if tu.logins.Load() != 1 {
		t.Errorf("%d logins, want 1", tu.logins.Load())
	}
	// Only the newest links are good.
	first := tu.ui.LoginPath()
	for range maxCodes {
		tu.ui.LoginPath()
	}
	if resp, _ := tu.do("GET", first, ""); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a link %d links old: %d", maxCodes, resp.StatusCode)
	}
}

// Without the login cookie, from another origin, or a write without the CSRF token: refused.
func TestRefusals(t *testing.T) {
	tu := newTestUI(t)
	cookie, csrf := tu.login()
	job := `{"agent":"hello","input":"hi"}`
	own := "http://" + tu.host

	resp, body := tu.do("GET", "/ui/", "")
	if resp.StatusCode != 401 || !strings.Contains(body, "You are not logged in") || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("the page without the cookie: %d %s", resp.StatusCode, body)
	}
	for _, p := range []string{"/ui/api/v1/jobs", "/ui/api/v1/feed", "/ui/session", "/ui/app.js"} {
		resp, body := tu.do("GET", p, "", "Accept", "application/json")
		if resp.StatusCode != 401 {
			t.Errorf("%s without the cookie: %d %s", p, resp.StatusCode, body)
		}
	}
	resp, body = tu.do("GET", "/ui/api/v1/jobs", "", "Cookie", "oz0_ui_7311=forged")
	wantError(t, "a forged cookie", resp, body, 401, apiv1.CodeUnauthorized)
	resp, body = tu.do("GET", "/ui/api/v1/jobs", "", "Cookie", strings.Replace(cookie, "oz0_ui_7311", "oz0_ui_7312", 1))
	wantError(t, "another dev server's cookie", resp, body, 401, apiv1.CodeUnauthorized)
	resp, body = tu.do("POST", "/ui/api/v1/jobs", job, "Authorization", "Bearer oz0t_anything", "X-Oz0-CSRF", csrf)
	wantError(t, "a bearer token instead of the cookie", resp, body, 401, apiv1.CodeUnauthorized)

	resp, body = tu.do("POST", "/ui/api/v1/jobs", job, "Cookie", cookie, "Origin", own)
	wantError(t, "a write without the CSRF token", resp, body, 403, apiv1.CodeCSRF)
	resp, body = tu.do("POST", "/ui/api/v1/jobs", job, "Cookie", cookie, "Origin", own, "X-Oz0-CSRF", csrf+"x")
	wantError(t, "a write with a wrong CSRF token", resp, body, 403, apiv1.CodeCSRF)
	resp, body = tu.do("POST", "/ui/logout", "", "Cookie", cookie)
	wantError(t, "a logout without the CSRF token", resp, body, 403, apiv1.CodeCSRF)
	resp, body = tu.do("POST", "/ui/api/v1/jobs", job, "Cookie", cookie, "X-Oz0-CSRF", csrf, "Origin", "http://evil.example")
	wantError(t, "a write from another origin", resp, body, 403, apiv1.CodeCrossOrigin)
	resp, body = tu.do("POST", "/ui/api/v1/jobs", job, "Cookie", cookie, "X-Oz0-CSRF", csrf, "Origin", "http://127.0.0.1:1")
	wantError(t, "a write from another port of loopback (same site, another origin)", resp, body, 403, apiv1.CodeCrossOrigin)
	resp, body = tu.do("GET", "/ui/api/v1/jobs", "", "Cookie", cookie, "Origin", "http://evil.example")
	wantError(t, "a read from another origin", resp, body, 403, apiv1.CodeCrossOrigin)
	resp, body = tu.do("GET", "/ui/api/v1/jobs", "", "Cookie", cookie, "Sec-Fetch-Site", "cross-site")
	wantError(t, "a read from another site", resp, body, 403, apiv1.CodeCrossOrigin)
	resp, body = tu.do("GET", "/ui/api/v1/jobs", "", "Cookie", cookie, "Host", "evil.example")
	wantError(t, "a Host off loopback (DNS rebinding)", resp, body, 403, apiv1.CodeForbiddenHost)
	resp, body = tu.do("GET", "/ui/api/v1/secrets", "", "Cookie", cookie)
	wantError(t, "the secrets through the UI", resp, body, 404, apiv1.CodeNotFound)
	if jobs, _ := tu.st.ListJobs(store.ListFilter{}); len(jobs) != 0 {
		t.Fatalf("a refused request made %d jobs", len(jobs))
	}

	// All of it right: served.
	resp, body = tu.do("POST", "/ui/api/v1/jobs", job, "Cookie", cookie, "X-Oz0-CSRF", csrf, "Origin", own)
	if resp.StatusCode != 201 || !strings.Contains(body, `"agent":"hello"`) {
		t.Fatalf("a write with the cookie and the token: %d %s", resp.StatusCode, body)
	}
	if resp, body := tu.do("GET", "/ui/api/v1/jobs", "", "Cookie", cookie); resp.StatusCode != 200 || !strings.Contains(body, `"input_text":"hi"`) {
		t.Errorf("a read with the cookie: %d %s", resp.StatusCode, body)
	}
	resp, body = tu.do("DELETE", "/ui/app.js", "", "Cookie", cookie, "X-Oz0-CSRF", csrf)
	wantError(t, "a page written to", resp, body, 405, apiv1.CodeBadRequest)

	// Logged out: the cookie is dead.
	if resp, body := tu.do("POST", "/ui/logout", "", "Cookie", cookie, "X-Oz0-CSRF", csrf); resp.StatusCode != 204 || len(resp.Cookies()) != 1 || resp.Cookies()[0].MaxAge >= 0 {
		t.Fatalf("logout: %d %s %v", resp.StatusCode, body, resp.Cookies())
	}
	resp, body = tu.do("GET", "/ui/api/v1/jobs", "", "Cookie", cookie)
	wantError(t, "after logout", resp, body, 401, apiv1.CodeUnauthorized)
}

func TestPages(t *testing.T) {
	tu := newTestUI(t)
	cookie, _ := tu.login()
	resp, body := tu.do("GET", "/ui/", "", "Cookie", cookie)
	if resp.StatusCode != 200 || !strings.Contains(body, `<script type="module" src="app.js">`) {
		t.Fatalf("the page: %d %s", resp.StatusCode, body)
	}
	for h, want := range map[string]string{
		"Content-Security-Policy": "default-src 'none'; script-src 'self'",
		"X-Frame-Options":         "DENY",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
	} {
		if !strings.Contains(resp.Header.Get(h), want) {
			t.Errorf("%s: %q", h, resp.Header.Get(h))
		}
	}
	if resp, _ := tu.do("GET", "/ui/style.css", ""); resp.StatusCode != 200 {
		t.Errorf("the stylesheet of the logged-out page: %d", resp.StatusCode)
	}

	// Every file is served with its type, and every module a file imports is there.
	files, _ := fs.Glob(static, "static/*")
	imports := regexp.MustCompile(`from '\./([a-z]+\.js)'`)
	for _, f := range files {
		name := strings.TrimPrefix(f, "static/")
		resp, body := tu.do("GET", "/ui/"+name, "", "Cookie", cookie)
		if name == "index.html" {
			continue // served as /ui/
		}
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d", name, resp.StatusCode)
		}
		if strings.HasSuffix(name, ".js") && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
			t.Errorf("%s is served as %s", name, resp.Header.Get("Content-Type"))
		}
		for _, m := range imports.FindAllStringSubmatch(body, -1) {
			if _, err := fs.Stat(static, "static/"+m[1]); err != nil {
				t.Errorf("%s imports %s, which is not there", name, m[1])
			}
		}
	}
}

// The UI works offline: no file loads anything from elsewhere.
func TestNothingFromOutside(t *testing.T) {
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}|@import|url\(\s*['"]?(https?:|//)`)
	err := fs.WalkDir(static, "static", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(static, path)
		if err != nil {
			return err
		}
		for _, m := range external.FindAllString(string(b), -1) {
			// The SVG namespace names a kind of element; nothing fetches it (dom.js's svg).
			if path == "static/dom.js" && m == "http://www.w3.org" && strings.Contains(string(b), "const SVG = 'http://www.w3.org/2000/svg';") {
				continue
			}
			t.Errorf("%s refers to %s", path, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
