package gateway

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/orchestrator-zero/oz0/fakemodel"
)

// tenantKey is the provider key the tests' tenant holds: it must reach the upstream and nothing
// else.
const tenantKey = "sk-tenant-Zq9vLx3mN8pR2tW7yB4cF6hJ1kD5gS0a"

// syncBuffer is an io.Writer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// captured is everything the gateway sent to clients: headers and body bytes.
type captured struct {
	mu  sync.Mutex
	all bytes.Buffer
}

func (c *captured) add(p []byte) {
	c.mu.Lock()
	c.all.Write(p)
	c.mu.Unlock()
}

func (c *captured) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.all.String()
}

// captureWriter records what passes through an http.ResponseWriter.
type captureWriter struct {
	http.ResponseWriter
	c           *captured
	wroteHeader bool
}

func (w *captureWriter) header() {
	if !w.wroteHeader {
		w.wroteHeader = true
		var b bytes.Buffer
		w.ResponseWriter.Header().Write(&b)
		w.c.add(b.Bytes())
	}
}

func (w *captureWriter) WriteHeader(code int) {
	w.header()
	w.ResponseWriter.WriteHeader(code)
}

func (w *captureWriter) Write(p []byte) (int, error) {
	w.header()
	w.c.add(p)
	return w.ResponseWriter.Write(p)
}

func (w *captureWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// env is a fake upstream, a gateway in front of it mounted under /gateway, and what they saw.
type env struct {
	t       *testing.T
	fake    *fakemodel.Server
	up      *httptest.Server
	gw      *Gateway
	srv     *httptest.Server
	keys    *MemResolver
	meter   *MemMeter
	logs    *syncBuffer
	out     *captured
	record  Record
	secrets MapSecrets

	upHandler http.Handler
	recordFns []func(*Record)
	onRequest func(r *http.Request) // sees each request the gateway's server gets
}

type envOpt func(*env, *Config)

// withUpstream serves h instead of the fake (the fake still exists, unused).
func withUpstream(h http.Handler) envOpt {
	return func(e *env, _ *Config) { e.upHandler = h }
}

// withRequestHook has f see each request the gateway's server gets, before the gateway.
func withRequestHook(f func(r *http.Request)) envOpt {
	return func(e *env, _ *Config) { e.onRequest = f }
}

func withConfig(f func(*Config)) envOpt {
	return func(_ *env, c *Config) { f(c) }
}

func withRecord(f func(*Record)) envOpt {
	return func(e *env, _ *Config) { e.recordFns = append(e.recordFns, f) }
}

// newEnv starts the fake upstream with script (which requires the tenant key) and a gateway.
func newEnv(t *testing.T, script string, opts ...envOpt) *env {
	t.Helper()
	s, err := fakemodel.ParseScript("test.yaml", []byte("require_key: "+tenantKey+"\n"+script))
	if err != nil {
		t.Fatalf("ParseScript: %v", err)
	}
	e := &env{t: t, fake: fakemodel.New(s), keys: NewMemResolver(), meter: &MemMeter{}, logs: &syncBuffer{}, out: &captured{},
		secrets: MapSecrets{"FAKE_KEY": tenantKey}}
	e.upHandler = e.fake
	cfg := Config{Resolver: e.keys, Secrets: e.secrets, Meter: e.meter,
		Logger: slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	for _, o := range opts {
		o(e, &cfg)
	}
	e.up = httptest.NewServer(e.upHandler)
	t.Cleanup(e.up.Close)
	e.record = FakeRecord(e.up.URL)
	e.record.Secret = "FAKE_KEY"
	for _, f := range e.recordFns {
		f(&e.record)
	}
	e.gw, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.gw.Close() })
	mux := http.NewServeMux()
	mux.Handle("/gateway/", http.StripPrefix("/gateway", e.gw))
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e.onRequest != nil {
			e.onRequest(r)
		}
		mux.ServeHTTP(&captureWriter{ResponseWriter: w, c: e.out}, r)
	}))
	t.Cleanup(e.srv.Close)
	// Whatever the test did, the tenant key never reached a client or a log line.
	t.Cleanup(func() {
		e.gw.Flush()
		if strings.Contains(e.out.String(), tenantKey) {
			t.Errorf("the tenant key appears in what the gateway sent to a client:\n%s", e.out.String())
		}
		if strings.Contains(e.logs.String(), tenantKey) {
			t.Errorf("the tenant key appears in the gateway's log:\n%s", e.logs.String())
		}
		for _, c := range e.meter.Calls() {
			if strings.Contains(fmt.Sprintf("%+v", c), tenantKey) {
				t.Errorf("the tenant key appears in a metered call: %+v", c)
			}
		}
	})
	return e
}

// issue returns a session key of job and agent for the env's record.
func (e *env) issue(job, agent string, lim Limits, bud Budget) string {
	return e.keys.Issue(Grant{Job: job, Agent: agent, Record: e.record, Limits: lim, Budget: bud})
}

func (e *env) anthropicURL() string { return e.srv.URL + "/gateway/anthropic" }
func (e *env) openaiURL() string    { return e.srv.URL + "/gateway/openai" }

// anthropicClient is the official SDK, unmodified but for its base URL and key.
func (e *env) anthropicClient(key string) *anthropic.Client {
	c := anthropic.NewClient(aoption.WithBaseURL(e.anthropicURL()), aoption.WithAPIKey(key))
	return &c
}

// openaiClient is the official SDK, unmodified but for its base URL and key.
func (e *env) openaiClient(key string) *openai.Client {
	c := openai.NewClient(ooption.WithBaseURL(e.openaiURL()), ooption.WithAPIKey(key))
	return &c
}

// calls returns the metered calls of job, waiting for calls still finishing until there are want.
func (e *env) calls(job string, want int) []Call {
	e.t.Helper()
	deadline := time.Now().Add(liveness)
	for {
		cs := e.meter.Job(job)
		if len(cs) >= want || time.Now().After(deadline) {
			return cs
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// upstreamRequests returns what the fake got on the given path suffix.
func (e *env) upstreamRequests(suffix string) []fakemodel.Request {
	var out []fakemodel.Request
	for _, r := range e.fake.Requests() {
		if strings.HasSuffix(r.Path, suffix) {
			out = append(out, r)
		}
	}
	return out
}

type rawResponse struct {
	status int
	header http.Header
	body   []byte
}

// do sends a raw request.
func do(t *testing.T, method, url string, header map[string]string, body string) rawResponse {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, url, err)
	}
	return rawResponse{resp.StatusCode, resp.Header, data}
}

func anthHeaders(key string) map[string]string {
	return map[string]string{"x-api-key": key, "anthropic-version": "2023-06-01", "content-type": "application/json"}
}

func openaiHeaders(key string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + key, "content-type": "application/json"}
}

const anthBody = `{"model":"fake-model","max_tokens":100,"messages":[{"role":"user","content":"hello"}]}`
const openaiBody = `{"model":"fake-model","messages":[{"role":"user","content":"hello"}]}`

// sseReader reads server-sent events one at a time.
type sseReader struct{ br *bufio.Reader }

// next returns the next event's raw text, without its blank line.
func (s *sseReader) next() (string, error) {
	var b strings.Builder
	for {
		line, err := s.br.ReadString('\n')
		if err != nil {
			return b.String() + line, err
		}
		if line == "\n" || line == "\r\n" {
			if b.Len() == 0 {
				continue
			}
			return b.String(), nil
		}
		b.WriteString(line)
	}
}

// openStream sends a streaming request and returns the response, for reading event by event.
func openStream(t *testing.T, ctx context.Context, url string, header map[string]string, body string) (*http.Response, *sseReader) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp, &sseReader{br: bufio.NewReader(resp.Body)}
}

// rewriteRequest is the body planRequest's edits make, whole: what the upstream reads.
func rewriteRequest(body []byte, face Format, models map[string]string) ([]byte, reqInfo) {
	edits, info := planRequest(body, face, models)
	return applyEdits(body, edits), info
}

// applyEdits returns body with the edits (in ascending, non-overlapping order) applied.
func applyEdits(body []byte, edits []edit) []byte {
	if len(edits) == 0 {
		return body
	}
	n := len(body)
	for _, e := range edits {
		n += len(e.text) - (e.end - e.start)
	}
	out := make([]byte, 0, n)
	at := 0
	for _, e := range edits {
		out = append(out, body[at:e.start]...)
		out = append(out, e.text...)
		at = e.end
	}
	return append(out, body[at:]...)
}

// holdAll is an upstream for a burst of n calls: held, it keeps each call until all n have
// arrived or been refused (refused, which burst calls for each refusal), so that every admission
// is decided while the calls before it are in flight; then next answers them. Not held, each is
// answered as it comes.
func holdAll(n int, held bool, next func(http.ResponseWriter, *http.Request)) (upstream http.Handler, refused func()) {
	release := make(chan struct{})
	if !held {
		close(release)
	}
	var arrived, refusals atomic.Int64
	var once sync.Once
	check := func() {
		if held && arrived.Load()+refusals.Load() == int64(n) {
			once.Do(func() { close(release) })
		}
	}
	upstream = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		check()
		<-release
		next(w, r)
	})
	return upstream, func() { refusals.Add(1); check() }
}

// burst makes n calls at once, call i as req(i) says, and returns how many got each status and
// the body of a 429 among them; refused is called for each 429 as it comes.
func burst(t *testing.T, n int, req func(i int) (url string, header map[string]string, body string), refused func()) (statuses map[int]int, said string) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses = map[int]int{}
	for i := range n {
		url, h, body := req(i)
		wg.Go(func() {
			r := do(t, "POST", url, h, body)
			mu.Lock()
			statuses[r.status]++
			if r.status == 429 {
				said = string(r.body)
			}
			mu.Unlock()
			if r.status == 429 {
				refused()
			}
		})
	}
	wg.Wait()
	return statuses, said
}

// streamEnd is how a stream of streamInBackground ended: when, its client's error, its events.
type streamEnd struct {
	at  time.Time
	err error
	n   int
}

// streamInBackground makes a streamed call with face's official SDK, in the background: started
// is closed once three events have come; ended gets how the stream ended.
func (e *env) streamInBackground(face Format, key string) (started <-chan struct{}, ended <-chan streamEnd) {
	first := make(chan struct{})
	done := make(chan streamEnd, 1)
	go func() {
		ctx := context.Background()
		n := 0
		var err error
		if face == AnthropicMessages {
			stream := e.anthropicClient(key).Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "fake-model", MaxTokens: 10,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))}})
			for stream.Next() {
				if n++; n == 3 {
					close(first)
				}
			}
			err = stream.Err()
		} else {
			stream := e.openaiClient(key).Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "fake-model",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}})
			for stream.Next() {
				if n++; n == 3 {
					close(first)
				}
			}
			err = stream.Err()
		}
		done <- streamEnd{time.Now(), err, n}
	}()
	return first, done
}
