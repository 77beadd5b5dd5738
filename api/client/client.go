// Package client is the command-line side of the dev server's control API: the HTTP calls with
// the bearer token of OZ0_CONTEXT, and a job's live stream followed with resume. The bodies are
// the wire types of apiv1.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/discovery"
)

// Client calls the dev server's control API.
type Client struct {
	mu            sync.Mutex
	ctx           apiv1.Context
	http          *http.Client
	answerTimeout time.Duration
	// fromEnv: the context is OZ0_CONTEXT's, which Find took over the oz0 dev that runs for the
	// plugin in dir; an error that the server is not there says to unset it. Otherwise dir is
	// the plugin whose discovery file named the server: a live stream that breaks reads it
	// again, as a restarted oz0 dev may listen elsewhere.
	fromEnv bool
	dir     string
}

// AnswerTimeout is how long a call waits for the dev server to begin its answer. Every call
// answers at once but a cancel, which waits at most 30 s for its job to end; a server that takes
// longer is stopped (Ctrl-Z) or not oz0 dev.
const AnswerTimeout = time.Minute

// New returns a client for the dev server of ctx.
func New(ctx apiv1.Context) *Client {
	return newClient(ctx, AnswerTimeout)
}

func newClient(ctx apiv1.Context, answerTimeout time.Duration) *Client {
	return &Client{ctx: ctx, answerTimeout: answerTimeout, http: &http.Client{
		Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4, ResponseHeaderTimeout: answerTimeout},
		// The control API never redirects: a redirect is another server's, and following one
		// would take a call somewhere it was not meant to go.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// NewDial returns a client for the dev server of ctx that connects with dial: the dev server's
// calls to itself (its eval runs), in memory, take none of its port's connections.
func NewDial(ctx apiv1.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *Client {
	c := New(ctx)
	c.http.Transport.(*http.Transport).DialContext = dial
	return c
}

// FromEnv returns a client for the dev server in OZ0_CONTEXT, read with getenv. The error of an
// unset or malformed OZ0_CONTEXT says how to mend it.
func FromEnv(getenv func(string) string) (*Client, error) {
	c, err := apiv1.ParseContext(getenv(apiv1.ContextEnv))
	if err != nil {
		return nil, err
	}
	return New(c), nil
}

// StartMend is what to do when no dev server is found: the commands' error and oz0 doctor's
// check say it alike.
const StartMend = "start `oz0 dev` in your plugin (commands in its folder find it), or run the `export " + apiv1.ContextEnv + "=...` line it prints"

// ErrNoServer is Find's error when there is neither OZ0_CONTEXT nor a running oz0 dev of the
// plugin the command runs in.
var ErrNoServer = errors.New(apiv1.ContextEnv + " is not set and no oz0 dev runs for a plugin in this folder; " + StartMend)

// Find returns a client for the dev server a command talks to: the one in OZ0_CONTEXT when it is
// set, else the oz0 dev that runs on the plugin dir is in (its discovery file). A discovery file
// left by an oz0 dev that crashed is said to be ignored (*discovery.StaleError).
func Find(getenv func(string) string, dir string) (*Client, error) {
	if getenv(apiv1.ContextEnv) != "" {
		c, err := FromEnv(getenv)
		if err != nil {
			return nil, err
		}
		c.fromEnv, c.dir = true, dir
		return c, nil
	}
	ctx, pluginDir, err := discovery.Find(dir)
	if errors.Is(err, discovery.ErrNone) {
		return nil, ErrNoServer
	}
	if err != nil {
		return nil, err
	}
	c := New(ctx)
	c.dir = pluginDir
	return c, nil
}

// context is the server's address and token, which a rediscovery may change.
func (c *Client) context() apiv1.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ctx
}

// rediscover reads the discovery file again when the server was found through it: an oz0 dev
// started again while its port was taken listens on another one (and says so in the file).
func (c *Client) rediscover() {
	if c.fromEnv || c.dir == "" {
		return
	}
	if ctx, _, err := discovery.Find(c.dir); err == nil {
		c.mu.Lock()
		c.ctx = ctx
		c.mu.Unlock()
	}
}

// URL is the server's base URL.
func (c *Client) URL() string { return c.context().URL }

// APIError is an error answer of the control API: its HTTP status, and the apiv1.Error it gave.
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string { return e.Message }

func (c *Client) do(ctx context.Context, method, path string, body any, out any) error {
	resp, err := c.send(ctx, method, path, body, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return c.readError(err)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		if errors.As(err, &syntax) || errors.As(err, &typ) {
			return c.notDevServer("answered with something that is not the control API's JSON")
		}
		return c.readError(err)
	}
	return nil
}

// send makes a call and turns error statuses into *APIError, and an unreachable server, or one
// that is not oz0 dev, into an error that says so and how to mend it.
func (c *Client) send(ctx context.Context, method, path string, body any, header http.Header) (*http.Response, error) {
	// An empty ID would make a path with an empty segment, which the server's router cleans into
	// another call's path (jobs//cancel is jobs/cancel): refused here, whoever the caller is.
	if p, _, _ := strings.Cut(path, "?"); strings.Contains(p, "//") || strings.HasSuffix(p, "/") {
		return nil, fmt.Errorf("an empty ID in %s %s; give the ID", method, p)
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.context().URL+path, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+c.context().Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, c.unreachable(err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		var body apiv1.ErrorBody
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if json.Unmarshal(b, &body) != nil || body.Error.Message == "" || resp.Header.Get(apiv1.ServerHeader) == "" {
			if resp.StatusCode == http.StatusRequestEntityTooLarge || resp.StatusCode == http.StatusRequestHeaderFieldsTooLarge {
				// Go's HTTP server refuses these before the API sees them.
				return nil, &APIError{Status: resp.StatusCode, Message: fmt.Sprintf("the dev server at %s refused a request this large (%s); give shorter values", c.context().URL, resp.Status)}
			}
			// Every answer of the control API carries apiv1.ServerHeader, and an error an
			// apiv1.ErrorBody: this is another server.
			return nil, c.notDevServer("answered " + resp.Status)
		}
		apiErr := &APIError{Status: resp.StatusCode, Code: body.Error.Code, Message: body.Error.Message}
		if resp.StatusCode == http.StatusUnauthorized {
			apiErr.Message = c.refusedToken(apiErr.Message)
		}
		return nil, apiErr
	}
	return resp, nil
}

// refusedToken is the message of a 401: the token is the context's, which came from
// OZ0_CONTEXT or from the discovery file of the plugin's oz0 dev; the message says which.
func (c *Client) refusedToken(why string) string {
	url := c.context().URL
	if c.fromEnv || c.dir == "" {
		return fmt.Sprintf("the dev server at %s refused the token in %s (%s); export the line the running `oz0 dev` printed", url, apiv1.ContextEnv, why)
	}
	running := filepath.Join(discovery.StateDir(c.dir), discovery.RunningFile)
	return fmt.Sprintf("the dev server at %s refused the token that %s gave (%s): another oz0 dev answers at that address, not the one that runs for the plugin in %s; start `oz0 dev` there again, or run the command in the folder of the plugin whose oz0 dev answers", url, running, why, c.dir)
}

// mendedError is an error that says what went wrong, then how to mend it.
type mendedError struct{ what, mend string }

func (e *mendedError) Error() string { return e.what + "; " + e.mend }

// unreachable says why a call got no answer at all, in a person's words rather than the
// transport's chain ("Get \"http://…\": read tcp …: connection reset by peer").
func (c *Client) unreachable(err error) error {
	mend := c.mend()
	var netErr net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return &mendedError{fmt.Sprintf("no dev server at %s (connection refused)", c.context().URL), mend}
	case errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Errorf("the dev server at %s did not answer within %s; is `oz0 dev` stopped (Ctrl-Z in its terminal: fg resumes it)?", c.context().URL, c.answerTimeout)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return c.closedWithoutAnswer()
	case strings.Contains(err.Error(), "server closed idle connection"):
		// net/http's words (its error is unexported) for a connection the server closed before
		// the request was written: a kept-alive one the dev server let go at that moment, or a
		// server that closes every connection at once. Which, one more try tells.
		return fmt.Errorf("the dev server at %s closed the connection before the request reached it; run the command again, and if this repeats, check that %s names a running oz0 dev", c.context().URL, apiv1.ContextEnv)
	case strings.Contains(err.Error(), "malformed HTTP"):
		return c.notDevServer("does not speak HTTP")
	}
	return &mendedError{fmt.Sprintf("cannot reach the dev server at %s (%s)", c.context().URL, cause(err)), mend}
}

// closedWithoutAnswer is the error of a connection closed before an answer came: a dev server
// that stopped while it answered (killed, crashed), one that restarted meanwhile, or something
// that is not oz0 dev. A second look at the address tells which.
func (c *Client) closedWithoutAnswer() error {
	url := c.context().URL
	switch c.probe() {
	case probeNothing:
		return &mendedError{fmt.Sprintf("the dev server at %s stopped before it answered (it was stopped, or it crashed), so what was asked may not have been done", url),
			"start `oz0 dev` again (its live jobs are marked interrupted) and look with `oz0 job list`"}
	case probeDevServer:
		return fmt.Errorf("the dev server at %s closed the connection before it answered (it was stopping, or has restarted since); run the command again", url)
	}
	return c.notDevServer("closed the connection without an answer")
}

type probeResult int

const (
	probeNothing   probeResult = iota // nothing listens there (any more)
	probeDevServer                    // an oz0 dev answers there
	probeOther                        // something else does
)

// probe asks the context's address, briefly, whether an oz0 dev answers there: every answer of
// the control API, a refusal included, carries apiv1.ServerHeader. A connection closed again is
// asked again, twice: a process that dies closes its connections before its listener, and one
// that connects in between is let in and then dropped.
func (c *Client) probe() probeResult {
	ctx := c.context()
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for try := 0; ; try++ {
		req, err := http.NewRequest(http.MethodGet, ctx.URL+"/api/v1/info", nil)
		if err != nil {
			return probeOther
		}
		req.Header.Set("Authorization", "Bearer "+ctx.Token)
		resp, err := hc.Do(req)
		switch {
		case err == nil:
			resp.Body.Close()
			if resp.Header.Get(apiv1.ServerHeader) != "" {
				return probeDevServer
			}
			return probeOther
		case errors.Is(err, syscall.ECONNREFUSED):
			return probeNothing
		case try < 2 && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)):
			time.Sleep(100 * time.Millisecond)
		default:
			return probeOther
		}
	}
}

// readError is an answer that broke off while it was read.
func (c *Client) readError(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("the answer of the dev server at %s broke off (%s); run the command again, and if it fails again, look at the terminal of `oz0 dev`", c.context().URL, cause(err))
}

// notDevServer is the error for something at the context's address that does not answer as oz0
// dev does.
func (c *Client) notDevServer(what string) error {
	return &mendedError{fmt.Sprintf("what listens at %s %s: it is not an oz0 dev server", c.context().URL, what), c.mend()}
}

// mend is what to do when the context's server is not there (or is not oz0 dev). OZ0_CONTEXT
// wins over the oz0 dev that commands find in a plugin's folder: a stale one is mended by
// unsetting it, and when the plugin's oz0 dev runs, that is the whole mend.
func (c *Client) mend() string {
	if c.fromEnv {
		if found, _, err := discovery.Find(c.dir); err == nil && found.URL != c.context().URL {
			return fmt.Sprintf("%s names it, and wins over the oz0 dev that runs for the plugin in this folder (at %s): `unset %s` to use that one", apiv1.ContextEnv, found.URL, apiv1.ContextEnv)
		}
	}
	return fmt.Sprintf("start `oz0 dev` and export the %s line it prints%s", apiv1.ContextEnv, c.orUnset())
}

// orUnset is the other mend of a context from OZ0_CONTEXT.
func (c *Client) orUnset() string {
	if !c.fromEnv {
		return ""
	}
	return fmt.Sprintf(", or `unset %s` (commands in a plugin's folder find the oz0 dev that runs for it)", apiv1.ContextEnv)
}

// cause is the innermost error of a transport's chain, as the system says it
// ("connection reset by peer").
func cause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// Info asks the server what it runs.
func (c *Client) Info(ctx context.Context) (apiv1.Info, error) {
	var i apiv1.Info
	return i, c.do(ctx, http.MethodGet, "/api/v1/info", nil, &i)
}

// UILogin asks for a fresh one-time link that logs a browser in to the dev UI.
func (c *Client) UILogin(ctx context.Context) (string, error) {
	var l apiv1.UILogin
	return l.URL, c.do(ctx, http.MethodPost, "/api/v1/ui/login", nil, &l)
}

// JobPage is the address of a job's page in the dev UI.
func (c *Client) JobPage(job string) string { return c.context().URL + apiv1.UIJobPath(job) }

// CreateJob starts a job.
func (c *Client) CreateJob(ctx context.Context, r apiv1.JobRequest) (apiv1.Job, error) {
	var j apiv1.Job
	return j, c.do(ctx, http.MethodPost, "/api/v1/jobs", r, &j)
}

// Job fetches a job's record.
func (c *Client) Job(ctx context.Context, id string) (apiv1.Job, error) {
	var j apiv1.Job
	return j, c.do(ctx, http.MethodGet, "/api/v1/jobs/"+url.PathEscape(id), nil, &j)
}

// Calls is a job's model calls with what was kept of each, read as conversations.
func (c *Client) Calls(ctx context.Context, id string) (apiv1.Calls, error) {
	var cs apiv1.Calls
	return cs, c.do(ctx, http.MethodGet, "/api/v1/jobs/"+url.PathEscape(id)+"/calls", nil, &cs)
}

// Jobs lists jobs, newest first.
func (c *Client) Jobs(ctx context.Context, status, agent string, limit int) ([]apiv1.Job, error) {
	q := url.Values{}
	if status != "" {
		q.Set("status", status)
	}
	if agent != "" {
		q.Set("agent", agent)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out apiv1.JobList
	return out.Jobs, c.do(ctx, http.MethodGet, "/api/v1/jobs?"+q.Encode(), nil, &out)
}

// Cancel cancels a job.
func (c *Client) Cancel(ctx context.Context, id string) (apiv1.Job, error) {
	var j apiv1.Job
	return j, c.do(ctx, http.MethodPost, "/api/v1/jobs/"+url.PathEscape(id)+"/cancel", nil, &j)
}

// Replay starts a new job like id, its model calls answered from id's recording; with upstream,
// those from the first that departs from the recording go to the model's upstream.
func (c *Client) Replay(ctx context.Context, id string, upstream bool) (apiv1.Job, error) {
	var j apiv1.Job
	return j, c.do(ctx, http.MethodPost, "/api/v1/jobs/"+url.PathEscape(id)+"/replay", apiv1.ReplayRequest{Upstream: upstream}, &j)
}

// Script returns a job's recorded model calls as a fake model script (YAML).
func (c *Client) Script(ctx context.Context, id string) ([]byte, error) {
	resp, err := c.send(ctx, http.MethodGet, "/api/v1/jobs/"+url.PathEscape(id)+"/script", nil, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return data, c.readError(err)
}

// Trace copies a job's whole record, as JSON lines, to w.
func (c *Client) Trace(ctx context.Context, id string, w io.Writer) error {
	resp, err := c.send(ctx, http.MethodGet, "/api/v1/jobs/"+url.PathEscape(id)+"/trace", nil, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body := &readErrs{r: resp.Body}
	if _, err = io.Copy(w, body); body.err != nil {
		return c.readError(body.err)
	}
	return err // writing it out failed
}

// readErrs keeps the error of reading r, to tell it from the error of writing what was read.
type readErrs struct {
	r   io.Reader
	err error
}

func (e *readErrs) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF {
		e.err = err
	}
	return n, err
}

// SetSecret sets a secret; baseURL, for a provider key, overrides the provider's upstream.
func (c *Client) SetSecret(ctx context.Context, name, value, baseURL string) (apiv1.SecretChange, error) {
	body := apiv1.SetSecretRequest{Value: value, BaseURL: baseURL}
	var out apiv1.SecretChange
	return out, c.do(ctx, http.MethodPut, "/api/v1/secrets/"+url.PathEscape(name), body, &out)
}

// Secrets lists the secrets' names.
func (c *Client) Secrets(ctx context.Context) ([]apiv1.SecretMeta, error) {
	var out apiv1.SecretList
	return out.Secrets, c.do(ctx, http.MethodGet, "/api/v1/secrets", nil, &out)
}

// RemoveSecret removes a secret.
func (c *Client) RemoveSecret(ctx context.Context, name string) (apiv1.SecretChange, error) {
	var out apiv1.SecretChange
	return out, c.do(ctx, http.MethodDelete, "/api/v1/secrets/"+url.PathEscape(name), nil, &out)
}

// RawEvent is one event of a live stream as the server sent it: its seq and type (the stream's id
// and event fields) and its JSON, an apiv1.Event as the server encoded it. JSON is valid only until
// the callback returns. More says another event has already arrived, so a printer may wait before
// it flushes.
type RawEvent struct {
	Seq  int64
	Type string
	JSON []byte
	More bool
}

// Event decodes the event.
func (r RawEvent) Event() (apiv1.Event, error) {
	var ev apiv1.Event
	err := json.Unmarshal(r.JSON, &ev)
	return ev, err
}

// Terminal reports whether the event is its job's last: a status event with a terminal status.
// Only status events are decoded.
func (r RawEvent) Terminal() bool {
	if r.Type != apiv1.EventStatus {
		return false
	}
	ev, err := r.Event()
	return err == nil && ev.Terminal()
}

// ResumeFor is how long a broken live stream is tried again without getting an event: long enough
// for `oz0 dev` to be stopped and started again.
const ResumeFor = time.Minute

// Events follows a job's live stream from after the event numbered after, calling fn for each
// event in order until the job's last event. A dropped connection is resumed from the last event
// seen, so no event is lost or repeated; reconnects is told of each resume (may be nil).
func (c *Client) Events(ctx context.Context, job string, after int64, fn func(apiv1.Event) error, reconnects func(err error)) error {
	return c.EventsRaw(ctx, job, after, func(r RawEvent) error {
		ev, err := r.Event()
		if err != nil {
			return fmt.Errorf("the dev server sent a bad event: %w", err)
		}
		return fn(ev)
	}, reconnects)
}

// EventsRaw is Events without decoding the events: what a printer of JSON lines needs, at a
// fraction of the cost.
func (c *Client) EventsRaw(ctx context.Context, job string, after int64, fn func(RawEvent) error, reconnects func(err error)) error {
	failures := 0
	var since time.Time // of the first failure since the last event
	for {
		last, done, err := c.follow(ctx, job, after, fn)
		if done || ctx.Err() != nil {
			return err
		}
		// A 401 while resuming is another oz0 dev that took the port while this one was down
		// (its token is its own): this one may yet come back, here or, found through the
		// discovery file, elsewhere. Any other answer of the API ends the stream.
		var apiErr *APIError
		if errors.As(err, &apiErr) && (failures == 0 || apiErr.Status != http.StatusUnauthorized) {
			return err
		}
		if last > after {
			after, failures, since = last, 0, time.Time{}
		}
		failures++
		if since.IsZero() {
			since = time.Now()
		}
		// A restarted oz0 dev is back with the same token, at the same address unless its port
		// was taken meanwhile (it keeps both in its state directory; rediscover reads where it
		// went): the stream resumes after the last event seen.
		if time.Since(since) > ResumeFor {
			return fmt.Errorf("lost the live stream of %s: %w", job, err)
		}
		if reconnects != nil {
			reconnects(c.resumeNote(err))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(min(failures, 10)) * 100 * time.Millisecond):
		}
		c.rediscover()
	}
}

// resumeNote is what a stream that tries again says of err: what happened, without the mend a
// command that gives up says (the token and the discovery file stay as they are while oz0 dev
// restarts, so there is nothing to export).
func (c *Client) resumeNote(err error) error {
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusUnauthorized {
		return fmt.Errorf("another dev server answers at %s: it refused this job's token; waiting for the oz0 dev that runs the job", c.context().URL)
	}
	var mended *mendedError
	if errors.As(err, &mended) {
		return errors.New(mended.what)
	}
	return err
}

// follow reads one SSE connection. done is true when the job's terminal event was delivered or
// fn failed. The stream's id and event fields give each event's seq and type, so the JSON of an
// event is decoded only when fn asks.
func (c *Client) follow(ctx context.Context, job string, after int64, fn func(RawEvent) error) (last int64, done bool, err error) {
	h := http.Header{"Accept": {"text/event-stream"}}
	resp, err := c.send(ctx, http.MethodGet, "/api/v1/jobs/"+url.PathEscape(job)+"/events?after="+strconv.FormatInt(after, 10), nil, h)
	if err != nil {
		return after, false, err
	}
	defer resp.Body.Close()
	last = after
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var data []byte
	var ev RawEvent
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A line longer than the buffer (a large event): gather the rest.
			long := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return last, false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if len(data) == 0 {
				continue
			}
			ev.JSON = data
			data = data[:0]
			if ev.Seq == 0 || ev.Type == "" { // a server that sends no id or event field
				full, err := ev.Event()
				if err != nil {
					return last, true, fmt.Errorf("the dev server sent a bad event: %w", err)
				}
				ev.Seq, ev.Type = full.Seq, full.Type
			}
			seq, terminal := ev.Seq, ev.Terminal()
			ev.More = br.Buffered() > 0
			if seq > last {
				last = seq
				if err := fn(ev); err != nil {
					return last, true, err
				}
				if terminal {
					return last, true, nil
				}
			} // else already seen before a reconnect
			ev = RawEvent{}
		case bytes.HasPrefix(line, []byte("data:")):
			data = append(data, bytes.TrimPrefix(line[5:], []byte(" "))...)
		case bytes.HasPrefix(line, []byte("id:")):
			ev.Seq, _ = strconv.ParseInt(string(bytes.TrimSpace(line[3:])), 10, 64)
		case bytes.HasPrefix(line, []byte("event:")):
			ev.Type = string(bytes.TrimSpace(line[6:]))
			if ev.Type == "end" { // the server's own: the stream is over
				return last, true, nil
			}
		}
	}
}

// Approvals lists the pending approvals (all of them with all).
func (c *Client) Approvals(ctx context.Context, all bool) ([]apiv1.Approval, error) {
	q := ""
	if all {
		q = "?all=1"
	}
	var out apiv1.ApprovalList
	return out.Approvals, c.do(ctx, http.MethodGet, "/api/v1/approvals"+q, nil, &out)
}

// Approve approves a pending approval with a scope (once, job, always); an "always" answer
// returns the rule it made.
func (c *Client) Approve(ctx context.Context, id, scope string) (apiv1.Approval, *apiv1.Rule, error) {
	var out apiv1.ApproveResponse
	err := c.do(ctx, http.MethodPost, "/api/v1/approvals/"+url.PathEscape(id)+"/approve", apiv1.ApproveRequest{Scope: scope}, &out)
	return out.Approval, out.Rule, err
}

// Deny denies a pending approval; the reason reaches the harness.
func (c *Client) Deny(ctx context.Context, id, reason string) (apiv1.Approval, error) {
	var out apiv1.DenyResponse
	err := c.do(ctx, http.MethodPost, "/api/v1/approvals/"+url.PathEscape(id)+"/deny", apiv1.DenyRequest{Reason: reason}, &out)
	return out.Approval, err
}

// Rules lists the "always" rules.
func (c *Client) Rules(ctx context.Context) ([]apiv1.Rule, error) {
	var out apiv1.RuleList
	return out.Rules, c.do(ctx, http.MethodGet, "/api/v1/approval-rules", nil, &out)
}

// RevokeRule removes a rule by id or target.
func (c *Client) RevokeRule(ctx context.Context, id string) (apiv1.Rule, error) {
	var r apiv1.Rule
	return r, c.do(ctx, http.MethodDelete, "/api/v1/approval-rules/"+url.PathEscape(id), nil, &r)
}

// Tenant is the tenant's quotas with their use, and its kill switches thrown.
func (c *Client) Tenant(ctx context.Context) (apiv1.Tenant, error) {
	var out apiv1.Tenant
	return out, c.do(ctx, http.MethodGet, "/api/v1/tenant", nil, &out)
}

// SetQuota sets one of the tenant's quotas, in place of the one of its name and record.
func (c *Client) SetQuota(ctx context.Context, q apiv1.Quota) (apiv1.Tenant, error) {
	var out apiv1.Tenant
	return out, c.do(ctx, http.MethodPut, "/api/v1/tenant/quotas", q, &out)
}

// RemoveQuota removes the quota name of record ("" the tenant's).
func (c *Client) RemoveQuota(ctx context.Context, record, name string) (apiv1.Tenant, error) {
	var out apiv1.Tenant
	path := "/api/v1/tenant/quotas/" + url.PathEscape(name)
	if record != "" {
		path += "?record=" + url.QueryEscape(record)
	}
	return out, c.do(ctx, http.MethodDelete, path, nil, &out)
}

// KillTenant throws the kill switch of every model call of record ("" the tenant's).
func (c *Client) KillTenant(ctx context.Context, record string) (apiv1.TenantKillAnswer, error) {
	var out apiv1.TenantKillAnswer
	return out, c.do(ctx, http.MethodPost, "/api/v1/tenant/kill", apiv1.TenantKillRequest{Record: record}, &out)
}

// ResumeTenant takes back the kill switch of record ("" the tenant's).
func (c *Client) ResumeTenant(ctx context.Context, record string) (apiv1.TenantKillAnswer, error) {
	var out apiv1.TenantKillAnswer
	return out, c.do(ctx, http.MethodPost, "/api/v1/tenant/resume", apiv1.TenantKillRequest{Record: record}, &out)
}

// TenantUsage is the calendar month's model calls grouped by record, agent or day, with the
// quotas' use.
func (c *Client) TenantUsage(ctx context.Context, by string) (apiv1.TenantUsage, error) {
	var out apiv1.TenantUsage
	return out, c.do(ctx, http.MethodGet, "/api/v1/tenant/usage?by="+url.QueryEscape(by), nil, &out)
}

// EvalFiles lists the eval files of the plugins the dev server serves.
func (c *Client) EvalFiles(ctx context.Context) (apiv1.EvalFiles, error) {
	var fs apiv1.EvalFiles
	return fs, c.do(ctx, http.MethodGet, "/api/v1/evals", nil, &fs)
}

// EvalCase proposes job id as an eval case of its plugin, written when req.Write.
func (c *Client) EvalCase(ctx context.Context, id string, req apiv1.EvalCaseRequest) (apiv1.EvalCase, error) {
	var ec apiv1.EvalCase
	return ec, c.do(ctx, http.MethodPost, "/api/v1/jobs/"+url.PathEscape(id)+"/eval-case", req, &ec)
}

// StartEvalRun starts running the eval cases req names on the dev server.
func (c *Client) StartEvalRun(ctx context.Context, req apiv1.EvalRunRequest) (apiv1.EvalRun, error) {
	var r apiv1.EvalRun
	return r, c.do(ctx, http.MethodPost, "/api/v1/eval-runs", req, &r)
}

// EvalRuns lists the eval runs the dev server keeps, newest first.
func (c *Client) EvalRuns(ctx context.Context) (apiv1.EvalRuns, error) {
	var rs apiv1.EvalRuns
	return rs, c.do(ctx, http.MethodGet, "/api/v1/eval-runs", nil, &rs)
}

// EvalRun reads eval run id with its report.
func (c *Client) EvalRun(ctx context.Context, id int64) (apiv1.EvalRun, error) {
	var r apiv1.EvalRun
	return r, c.do(ctx, http.MethodGet, "/api/v1/eval-runs/"+strconv.FormatInt(id, 10), nil, &r)
}

// StopEvalRun stops eval run id if it runs.
func (c *Client) StopEvalRun(ctx context.Context, id int64) (apiv1.EvalRun, error) {
	var r apiv1.EvalRun
	return r, c.do(ctx, http.MethodPost, "/api/v1/eval-runs/"+strconv.FormatInt(id, 10)+"/stop", nil, &r)
}
