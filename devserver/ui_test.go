package devserver

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is the banner's writer: the server writes to it from its own goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The dev UI as oz0 dev wires it: the banner's link logs a browser in once and the next link is
// printed; the UI has the API's calls but the secrets', behind its cookie, not the token; its
// feed ends when the server stops.
func TestUIWiring(t *testing.T) {
	out := &lockedBuffer{}
	s, err := Start(Config{PluginDirs: []string{goPlugin(t, "hello", buildTestHarness(t), "ok")}, Ephemeral: true, Poll: -1, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := regexp.MustCompile(`(?m)^  ui      (http://\S+/ui/login\?code=[a-z2-7]+) \(logs one browser in, once\)$`).FindStringSubmatch(out.String())
	if m == nil || !strings.HasPrefix(m[1], s.URL+"/ui/login?code=") {
		t.Fatalf("no ui line in the banner:\n%s", out)
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	resp, err := browser.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/ui/" || !bytes.Contains(page, []byte(`src="app.js"`)) {
		t.Fatalf("the login link: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	if !regexp.MustCompile(`(?m)^ui: a browser logged in; the next login link is ` + regexp.QuoteMeta(s.URL) + `/ui/login\?code=[a-z2-7]+$`).MatchString(out.String()) {
		t.Errorf("no next login link after the login:\n%s", out)
	}
	if resp, _ := browser.Get(m[1]); resp.StatusCode != http.StatusForbidden {
		t.Errorf("the link used again: %d", resp.StatusCode)
	}

	ui, _ := url.Parse(s.URL + "/ui/")
	cookies := jar.Cookies(ui)
	if len(cookies) != 1 {
		t.Fatalf("%d cookies for /ui/", len(cookies))
	}
	for path, want := range map[string]int{
		"/ui/api/v1/info":    200,
		"/ui/api/v1/jobs":    200,
		"/ui/api/v1/secrets": 404, // the UI has no secrets calls
		"/api/v1/jobs":       401, // the API takes the token, not the cookie
	} {
		req, _ := http.NewRequest("GET", s.URL+path, nil)
		req.AddCookie(cookies[0])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s with the cookie: %d, want %d", path, resp.StatusCode, want)
		}
	}

	// The feed follows changes for as long as the client stays, but ends when the server stops.
	resp, err = browser.Get(s.URL + "/ui/api/v1/feed")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the feed: %v %v", resp, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() || sc.Text() != "event: snapshot" {
		t.Fatalf("the feed begins with %q", sc.Text())
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	ended := make(chan struct{})
	go func() {
		for sc.Scan() {
		}
		close(ended)
	}()
	select {
	case <-ended:
	case <-time.After(60 * time.Second):
		t.Fatal("the feed did not end when the server stopped")
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}
