// Package ui is the dev UI of `oz0 dev`: the jobs, a job's live stream and trace timeline (run
// again, replayed, saved as an eval case), the approvals inbox, a form to start a job, the agents
// drawn, the eval cases run, and usage charted, in the browser, served under /ui/ on the dev
// server's loopback port.
//
// The pages are static files embedded in the binary (plain HTML, CSS and JavaScript modules: no
// build step, nothing fetched from elsewhere). They read and write through the control API's own
// calls (api.Routes), mounted at /ui/api/, and keep live through its feed, one server-sent-events
// stream.
//
// Logging in: the bearer token of OZ0_CONTEXT never reaches the page. oz0 dev prints a login link
// with a one-time code (LoginPath); opening it exchanges the code for a session cookie (HttpOnly,
// SameSite=Strict, named after the port, as cookies do not tell ports apart) and the code is gone;
// OnLogin lets oz0 dev print the next link. Every request under /ui/ passes the API's checks (a
// loopback Host) and more: no Origin but the server's own, even for reads; the session cookie
// (but for the login link); and for a request that changes anything, the session's CSRF token in
// the X-Oz0-CSRF header (the page reads it from /ui/session, which another origin cannot read).
// Sessions live in memory: a restarted oz0 dev prints a new link.
package ui

import (
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base32"
	"html"
	"io/fs"
	"net/http"
	"strings"
	"sync"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/devserver/api"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
)

//go:embed static
var static embed.FS

// CSRFHeader carries a session's CSRF token on every request that changes anything.
const CSRFHeader = "X-Oz0-CSRF"

// Config says what the UI serves.
type Config struct {
	// API is the control API's calls (api.Routes), served to a logged-in browser under /ui/api/.
	API http.Handler
	// Port names the session cookie, so that two dev servers on one host keep theirs apart.
	Port string
	// OnLogin is called after a login link was used (not while the UI's lock is held), so that
	// oz0 dev can print the next one.
	OnLogin func()
}

// UI is the dev UI's handler and its sessions. It is safe for concurrent use.
type UI struct {
	cfg    Config
	cookie string
	files  http.Handler

	mu       sync.Mutex
	codes    []string            // unused login codes, oldest first
	sessions map[string]*session // by cookie value
	order    []string            // session ids, oldest first
}

type session struct{ csrf string }

// At most this many login links and sessions are kept; past that the oldest go.
const (
	maxCodes    = 8
	maxSessions = 64
)

// New returns the UI; mount its Handler at /ui/.
func New(cfg Config) *UI {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded directory is there at build time
	}
	return &UI{
		cfg: cfg, cookie: "oz0_ui_" + cfg.Port, files: http.FileServerFS(sub),
		sessions: map[string]*session{},
	}
}

// LoginPath makes a new one-time login code and returns the path that uses it:
// /ui/login?code=….
func (u *UI) LoginPath() string {
	code := randomString()
	u.mu.Lock()
	u.codes = append(u.codes, code)
	if len(u.codes) > maxCodes {
		u.codes = u.codes[len(u.codes)-maxCodes:]
	}
	u.mu.Unlock()
	return "/ui/login?code=" + code
}

func randomString() string {
	b := make([]byte, 20)
	rand.Read(b)
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// Handler serves the UI under /ui/, behind the API's guard (a loopback Host) and the UI's own
// checks.
func (u *UI) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ui/login", u.login)
	mux.Handle("GET /ui/style.css", http.StripPrefix("/ui", u.files)) // for the pages of the logged out too
	mux.HandleFunc("GET /ui/session", u.needSession(u.sessionInfo))
	mux.HandleFunc("POST /ui/logout", u.needSession(u.logout))
	mux.Handle("/ui/api/", u.needSession(http.StripPrefix("/ui", u.cfg.API).ServeHTTP))
	pages := http.StripPrefix("/ui", u.files)
	mux.HandleFunc("/ui/", u.needSession(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			writeError(w, http.StatusMethodNotAllowed, apiv1.CodeBadRequest, r.Method+" "+r.URL.Path+" is not served; the pages are read with GET")
			return
		}
		pages.ServeHTTP(w, r)
	}))
	return api.Guard("", u.sameOrigin(mux))
}

// sameOrigin refuses any request from another origin, reads included (the API allows
// cross-origin reads, as its token guards them; a cookie is sent by the browser on its own), and
// sets the headers of every answer: nothing of the page loads from elsewhere or is framed.
func (u *UI) sameOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if origin := r.Header.Get("Origin"); origin != "" && origin != "http://"+r.Host {
			writeError(w, http.StatusForbidden, apiv1.CodeCrossOrigin, "the dev UI answers only its own pages, not "+origin)
			return
		}
		// A login link may be opened from anywhere; it changes nothing but the browser's cookie.
		if r.Header.Get("Sec-Fetch-Site") == "cross-site" && r.URL.Path != "/ui/login" {
			writeError(w, http.StatusForbidden, apiv1.CodeCrossOrigin, "the dev UI answers only its own pages, not another site's")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// login exchanges a one-time code for a session cookie, then shows the UI.
func (u *UI) login(w http.ResponseWriter, r *http.Request) {
	code := r.URL.Query().Get("code")
	id, csrf := randomString(), randomString()
	u.mu.Lock()
	found := -1
	for i, c := range u.codes {
		if code != "" && subtle.ConstantTimeCompare([]byte(c), []byte(code)) == 1 {
			found = i
		}
	}
	// A HEAD (GET's pattern serves it too) is what link previewers and prefetchers send: it
	// must not spend the code, or the person who opens the link finds it used. It says only
	// whether the link is good.
	if r.Method == http.MethodHead {
		u.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if found < 0 {
			w.WriteHeader(http.StatusForbidden)
		}
		return
	}
	if found >= 0 {
		u.codes = append(u.codes[:found], u.codes[found+1:]...)
		u.sessions[id] = &session{csrf: csrf}
		u.order = append(u.order, id)
		if len(u.order) > maxSessions {
			delete(u.sessions, u.order[0])
			u.order = u.order[1:]
		}
	}
	u.mu.Unlock()
	if found < 0 {
		writePage(w, http.StatusForbidden, "This login link is not valid: it was used already, or it is from an earlier run of oz0 dev. Open the newest ui link oz0 dev printed in its terminal.")
		return
	}
	if u.cfg.OnLogin != nil {
		u.cfg.OnLogin()
	}
	http.SetCookie(w, &http.Cookie{Name: u.cookie, Value: id, Path: "/ui", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

// needSession serves next only with a session cookie, and a request that changes anything only
// with the session's CSRF token.
func (u *UI) needSession(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s := u.session(r)
		if s == nil {
			if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/ui/api/") && r.URL.Path != "/ui/session" {
				writePage(w, http.StatusUnauthorized, "You are not logged in. Open the ui link oz0 dev printed in its terminal: each link logs in one browser once, and oz0 dev prints the next one after it is used.")
				return
			}
			writeError(w, http.StatusUnauthorized, apiv1.CodeUnauthorized, "not logged in to the dev UI; open the ui link oz0 dev printed")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			got := r.Header.Get(CSRFHeader)
			if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) != 1 {
				writeError(w, http.StatusForbidden, apiv1.CodeCSRF, "the request has no valid "+CSRFHeader+" header; reload the page")
				return
			}
		}
		next(w, r)
	}
}

func (u *UI) session(r *http.Request) *session {
	c, err := r.Cookie(u.cookie)
	if err != nil {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.sessions[c.Value]
}

// SessionInfo is the answer of GET /ui/session: what the page needs to make requests.
type SessionInfo struct {
	CSRF string `json:"csrf"` // for the X-Oz0-CSRF header
}

func (u *UI) sessionInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, SessionInfo{CSRF: u.session(r).csrf})
}

func (u *UI) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(u.cookie); err == nil {
		u.mu.Lock()
		delete(u.sessions, c.Value)
		for i, id := range u.order {
			if id == c.Value {
				u.order = append(u.order[:i], u.order[i+1:]...)
				break
			}
		}
		u.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: u.cookie, Value: "", Path: "/ui", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	w.WriteHeader(http.StatusNoContent)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = jsonutil.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, apiv1.ErrorBody{Error: apiv1.Error{Code: code, Message: msg}})
}

// writePage answers a browser with a page of one message (no script, the UI's stylesheet).
func writePage(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	var b strings.Builder
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>oz0 dev</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/ui/style.css"></head><body><main class="notice"><h1>oz0 dev</h1><p>`)
	b.WriteString(html.EscapeString(msg))
	b.WriteString(`</p></main></body></html>`)
	w.Write([]byte(b.String()))
}
