// Package gateway is oz0's model gateway: an http.Handler with an Anthropic face and an OpenAI
// face that a session's SDK reaches through ANTHROPIC_BASE_URL and OPENAI_BASE_URL with a session
// key of its own. It resolves the key to a grant (job, agent, model record, limits, budget), swaps
// in the tenant's provider key from Secrets, forwards the call to the record's upstream unchanged
// (server-sent events event by event, with a flush after each), meters every call under the job,
// and refuses calls past a limit or budget in the provider's own error shape.
//
// The handler serves, under whatever prefix its caller strips:
//
//	POST /anthropic/v1/messages              Anthropic Messages (streaming with "stream": true)
//	POST /anthropic/v1/messages/count_tokens Anthropic token counting
//	GET  /anthropic/v1/models[/ID]           Anthropic models
//	POST /openai/chat/completions            OpenAI Chat Completions (streaming included); also /openai/v1/…
//	GET  /openai/models[/ID]                 OpenAI models; also /openai/v1/models[/ID]
//
// so ANTHROPIC_BASE_URL=http://host/gateway/anthropic and OPENAI_BASE_URL=http://host/gateway/openai
// work with the official SDKs unchanged when the handler is mounted with
// http.StripPrefix("/gateway", gw). See docs/gateway.md.
package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
	"github.com/orchestrator-zero/oz0/internal/membudget"
	"github.com/orchestrator-zero/oz0/internal/textclip"
)

// Defaults of Config.
const (
	DefaultIdleTimeout     = 5 * time.Minute
	DefaultResponseTimeout = 10 * time.Minute
	DefaultMaxRequestBytes = 32 << 20
	// DefaultMaxBodyBytesInFlight is two calls of the largest size at once, or hundreds of an
	// agent's usual size (tens to hundreds of kilobytes). Through oz0 dev, whose fake model
	// decodes a body in the same process, eight calls of 30 MB at once peak at ~380 MB resident
	// with it; twice as much took the peak near twice as high (docs/reliability.md).
	DefaultMaxBodyBytesInFlight = 2 * DefaultMaxRequestBytes
	DefaultBodyQueueTimeout     = 30 * time.Second
	DefaultBodyReadTimeout      = 30 * time.Second
	DefaultDrainTimeout         = 30 * time.Second
)

// Config configures a Gateway. Only Resolver is required.
type Config struct {
	// Resolver resolves session keys to grants.
	Resolver Resolver
	// Secrets holds the tenant's provider keys; nil: no secrets, so only records without a
	// Secret (the fake) can be called.
	Secrets Secrets
	// Meter records every call; nil: none.
	Meter Meter
	// Logger gets one line per call and one per refusal; nil: nothing is logged. It never gets
	// a provider key.
	Logger *slog.Logger
	// Mask masks the tenant's secrets (a dev server's secret store's masker) in what the gateway
	// logs and meters from a request (the model asked for, a header a refusal quotes), besides
	// the call's own key, which the gateway always masks; nil: that key alone.
	Mask func([]byte) []byte
	// Transport makes the upstream requests; nil: a shared NewTransport().
	Transport http.RoundTripper
	// IdleTimeout ends a stream after this long without a byte from upstream (waiting for the
	// response headers included): there is no total timeout on streams. Non-streamed answers get
	// it once their headers have come. 0: DefaultIdleTimeout.
	IdleTimeout time.Duration
	// ResponseTimeout is the longest a non-streamed call waits for the upstream's response
	// headers (which come when the whole answer is ready). 0: DefaultResponseTimeout.
	ResponseTimeout time.Duration
	// MaxRequestBytes is the largest request body accepted; a larger one gets 413.
	// 0: DefaultMaxRequestBytes.
	MaxRequestBytes int64
	// MaxBodyBytesInFlight bounds the request bodies held at once over all calls (readBody): a
	// call waits in line for room for its body, at most BodyQueueTimeout, then gets 503 (retried
	// by the SDKs). 0: DefaultMaxBodyBytesInFlight; never less than MaxRequestBytes.
	MaxBodyBytesInFlight int64
	// BodyQueueTimeout is the longest a call waits for room for its body; 0:
	// DefaultBodyQueueTimeout.
	BodyQueueTimeout time.Duration
	// BodyReadTimeout is the longest a request's body may take to arrive once the gateway reads
	// it; a slower one gets 408 and its connection is closed. It is a read deadline on the
	// connection, lifted once the body is in, so answers (streams) are not limited by it. 0:
	// DefaultBodyReadTimeout; < 0: none.
	BodyReadTimeout time.Duration
	// MeterLinger is how long the meter waits, once a call has ended, for others to join its
	// batch (after.go), unless hurried (Gateway.Hurry, Gateway.Flush); 0: none.
	MeterLinger time.Duration
	// DrainTimeout is how long the gateway keeps reading a stream whose client has gone, for the
	// usage the upstream reports at its end (at most maxDrainBytes of it), before it cuts the
	// upstream request; Gateway.StopDraining cuts it sooner. 0: DefaultDrainTimeout; < 0: the
	// upstream request is cut at once.
	DrainTimeout time.Duration
	// Now is the clock of the tenant's quotas' windows (tenant.go); nil: time.Now. Tests set it.
	Now func() time.Time
}

// Gateway is the model gateway, an http.Handler. It is safe for concurrent use.
type Gateway struct {
	resolver    Resolver
	secrets     Secrets
	meter       Meter
	log         *slog.Logger
	maskFn      func([]byte) []byte // Config.Mask
	rt          http.RoundTripper
	idle        time.Duration
	respTimeout time.Duration
	maxBody     int64
	bodyTimeout time.Duration
	budget      *membudget.Budget // the request bodies held at once (readBody)
	linger      time.Duration
	drain       time.Duration // Config.DrainTimeout; < 0: none
	after       *afterQueue
	tenant      *tenant // the tenant's quotas and kill switches (tenant.go)

	mu   sync.Mutex
	jobs map[string]*jobState
}

// jobState is the gateway's running account of one job.
type jobState struct {
	mu       sync.Mutex
	killed   bool
	calls    int64
	usage    Usage
	cost     float64
	flight   inFlight                 // what its calls in flight may use (reserve.go)
	sessions map[string]*sessionState // by session key
	live     map[*call]struct{}
	// order is the job's calls not yet handed to the meter, in the order their answers began
	// (after.go).
	order []*call
}

type sessionState struct {
	steps  int
	usage  Usage
	cost   float64
	flight inFlight
}

var (
	sharedTransportOnce sync.Once
	sharedTransport     *http.Transport
)

// NewTransport returns an http.Transport tuned for the gateway: keep-alive with many idle
// connections per host (a session's calls reuse warm connections), HTTP/2 when the upstream
// offers it, and no transparent compression (the gateway reads usage from the bytes it passes on,
// so it asks upstreams for identity encoding).
func NewTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
		ReadBufferSize:        32 << 10,
		WriteBufferSize:       32 << 10,
	}
}

// New returns a Gateway.
func New(cfg Config) (*Gateway, error) {
	if cfg.Resolver == nil {
		return nil, errors.New("gateway: Config.Resolver is required")
	}
	g := &Gateway{
		resolver: cfg.Resolver, secrets: cfg.Secrets, meter: cfg.Meter, log: cfg.Logger, maskFn: cfg.Mask, rt: cfg.Transport,
		idle: cfg.IdleTimeout, respTimeout: cfg.ResponseTimeout, maxBody: cfg.MaxRequestBytes, linger: cfg.MeterLinger, drain: cfg.DrainTimeout,
		jobs: map[string]*jobState{}, after: newAfterQueue(), tenant: newTenant(cfg.Now),
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if g.rt == nil {
		sharedTransportOnce.Do(func() { sharedTransport = NewTransport() })
		g.rt = sharedTransport
	}
	if g.idle <= 0 {
		g.idle = DefaultIdleTimeout
	}
	if g.respTimeout <= 0 {
		g.respTimeout = DefaultResponseTimeout
	}
	if g.maxBody <= 0 {
		g.maxBody = DefaultMaxRequestBytes
	}
	if g.drain == 0 {
		g.drain = DefaultDrainTimeout
	}
	inFlight, queue := cfg.MaxBodyBytesInFlight, cfg.BodyQueueTimeout
	if inFlight <= 0 {
		inFlight = DefaultMaxBodyBytesInFlight
	}
	if queue <= 0 {
		queue = DefaultBodyQueueTimeout
	}
	g.budget = membudget.New(max(inFlight, g.maxBody+1), queue)
	switch g.bodyTimeout = cfg.BodyReadTimeout; {
	case g.bodyTimeout == 0:
		g.bodyTimeout = DefaultBodyReadTimeout
	case g.bodyTimeout < 0:
		g.bodyTimeout = 0
	}
	go g.afterLoop()
	return g, nil
}

func (g *Gateway) job(name string) *jobState {
	g.mu.Lock()
	defer g.mu.Unlock()
	js := g.jobs[name]
	if js == nil {
		js = &jobState{sessions: map[string]*sessionState{}, live: map[*call]struct{}{}}
		g.jobs[name] = js
	}
	return js
}

// killWriteGrace is how long Kill lets a killed call write its last bytes.
const killWriteGrace = 25 * time.Millisecond

var (
	errKilled     = errors.New("the job was killed")
	errIdle       = errors.New("idle timeout")
	errClientGone = errors.New("the client went away")
)

// Kill is the kill switch of job: its keys are revoked (when the Resolver is a JobRevoker), every
// later call of the job is refused with 403 (401 once the key is gone), and its calls in flight
// are cancelled at once, streams included (a stream ends with an error event in the provider's
// shape). It returns how many calls were in flight.
func (g *Gateway) Kill(job string) int {
	js := g.job(job)
	if jr, ok := g.resolver.(JobRevoker); ok {
		jr.RevokeJob(job)
	}
	js.mu.Lock()
	js.killed = true
	n := len(js.live)
	for c := range js.live {
		c.kill(errKilled)
	}
	js.mu.Unlock()
	g.log.LogAttrs(context.Background(), slog.LevelWarn, "gateway: job killed",
		slog.String("job", job), slog.Int("live_calls", n))
	return n
}

// kill cancels the live call c with cause (errKilled, or a *killedError); its job's lock is held.
func (c *call) kill(cause error) {
	c.cancel(cause)
	// A client that does not read could keep the handler blocked in a write: the last write (a
	// stream's error event) gets killWriteGrace, then the connection is dropped. Done under the
	// job's lock, so only while the call is live; finish clears it.
	http.NewResponseController(c.w).SetWriteDeadline(time.Now().Add(killWriteGrace))
	c.writeDeadline = true
}

// JobUsage is the gateway's running account of a job.
type JobUsage struct {
	Calls   int64   // calls that went upstream, steps or not
	Steps   int     // steps admitted, over all the job's sessions
	Usage   Usage   // tokens of every call
	CostUSD float64 // cost of the priced calls
	Live    int     // calls in flight
	Killed  bool
}

// JobUsage returns the account of job (zero for a job the gateway has not seen).
func (g *Gateway) JobUsage(job string) JobUsage {
	g.mu.Lock()
	js := g.jobs[job]
	g.mu.Unlock()
	if js == nil {
		return JobUsage{}
	}
	js.mu.Lock()
	defer js.mu.Unlock()
	u := JobUsage{Calls: js.calls, Usage: js.usage, CostUSD: js.cost, Live: len(js.live), Killed: js.killed}
	for _, s := range js.sessions {
		u.Steps += s.steps
	}
	return u
}

// Forget drops the gateway's account of job (its steps, usage and kill mark), once the job is over
// and its keys are revoked.
func (g *Gateway) Forget(job string) {
	g.mu.Lock()
	delete(g.jobs, job)
	g.mu.Unlock()
}

// route is what a request path asks for.
type route struct {
	face   Format
	ep     Endpoint
	method string
	upath  string // appended to the record's base URL
}

func routeOf(p string) (route, bool) {
	if rest, ok := strings.CutPrefix(p, "/anthropic/v1/"); ok {
		switch {
		case rest == "messages":
			return route{AnthropicMessages, EndpointMessages, http.MethodPost, "/v1/messages"}, true
		case rest == "messages/count_tokens":
			return route{AnthropicMessages, EndpointCountTokens, http.MethodPost, "/v1/messages/count_tokens"}, true
		case rest == "models" || strings.HasPrefix(rest, "models/") && len(rest) > 7 && !strings.Contains(rest[7:], "/"):
			return route{AnthropicMessages, EndpointModels, http.MethodGet, "/v1/" + rest}, true
		}
		return route{face: AnthropicMessages}, false
	}
	if rest, ok := strings.CutPrefix(p, "/openai/"); ok {
		rest = strings.TrimPrefix(rest, "v1/")
		switch {
		case rest == "chat/completions":
			return route{OpenAIChat, EndpointChat, http.MethodPost, "/chat/completions"}, true
		case rest == "models" || strings.HasPrefix(rest, "models/") && len(rest) > 7 && !strings.Contains(rest[7:], "/"):
			return route{OpenAIChat, EndpointModels, http.MethodGet, "/" + rest}, true
		}
		return route{face: OpenAIChat}, false
	}
	return route{face: AnthropicMessages}, false
}

// call is one request through the gateway.
type call struct {
	g     *Gateway
	w     http.ResponseWriter
	r     *http.Request
	rt    route
	rec   Call
	grant *Grant
	key   string // the session key
	js    *jobState
	ss    *sessionState

	tenantKey string
	// maskKey is tenantKey where the gateway masks it (in answers, headers, errors and
	// recordings); "" when it is shorter than apiv1.SecretMinMaskLen, as a dummy key for a fake model
	// may be, because masking it would mask half of every answer. keyBytes is maskKey's bytes.
	maskKey  string
	keyBytes []byte
	// maskLooked is set once the key has been looked up for masking alone (knowMaskKey).
	maskLooked bool

	ctx      context.Context
	cancel   context.CancelCauseFunc
	watchdog *time.Timer
	wait     time.Duration // the watchdog's time before the answer's headers
	// leave is what the call does once its client goes (drain.go); stopLeave stops the watch of
	// the client's request, drainTimer the drain's bound.
	leave      atomic.Int32
	stopLeave  func() bool
	drainTimer atomic.Pointer[time.Timer]

	wroteHeader bool
	clientGone  bool
	abortConn   bool // end by dropping the client's connection (mirrors an upstream cut)
	counted     bool // a step: admitted against the limits and accounted for
	registered  bool
	res         inFlight // what the call may use, reserved while it is in flight (a step's)
	reserved    bool

	hold          *membudget.Hold // what the call's body takes of the gateway's budget
	upBody        *upstreamBody   // the body as it goes upstream
	writeDeadline bool            // Kill set a write deadline on the response (guarded by js.mu)
	capture       *capture        // what the client got, when the grant keeps its calls
	answered      bool            // an answer came, from upstream or a recording
	queued        bool            // in its job's order (guarded by js.mu)
	ended         bool            // finished, end filled in (guarded by js.mu)
	end           endedCall
}

// ServeHTTP serves one call.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := &call{g: g, w: w, r: r}
	c.rec.Start = time.Now()
	g.after.begin()
	c.serve()
	c.finish()
	if c.abortConn {
		panic(http.ErrAbortHandler)
	}
}

// fail answers a gateway error in the face's shape, unless the response has begun.
func (c *call) fail(e *gwError) {
	if c.rec.Error == "" {
		c.rec.Error = e.msg
	}
	if c.wroteHeader || c.clientGone {
		return
	}
	c.answerBegins()
	e.write(c.w, c.rt.face)
	c.rec.Status = e.status
	c.wroteHeader = true
	if k := c.capture; k != nil && !c.answered {
		k.refusal("application/json", e.body(c.rt.face))
	}
}

func (c *call) refuse(limit string, e *gwError) {
	c.rec.Refused = limit
	c.fail(e)
}

// serve answers the call in steps; each returns false when it has answered the call itself (an
// error, a refusal, a recording replayed), which ends it.
func (c *call) serve() {
	if !c.route() || !c.authenticate() || !c.checkOz0Headers() {
		return
	}
	body, ok := c.readBody()
	if !ok {
		return
	}
	edits, info := c.planBody(body)
	if !c.enter(body, info.stream) {
		return
	}
	if rp := c.grant.Replay; rp != nil && c.replay(rp, body) {
		return
	}
	if !c.lookUpTenantKey() {
		return
	}
	c.upBody = newUpstreamBody(body, edits)
	c.forward(info)
}

// route finds the face and endpoint the call's path names.
func (c *call) route() bool {
	r := c.r
	rt, ok := routeOf(r.URL.Path)
	c.rt = rt
	c.rec.Format, c.rec.Endpoint = rt.face, rt.ep
	if !ok {
		c.fail(errorf(http.StatusNotFound, "not_found", fmt.Sprintf("oz0 gateway: no endpoint %s %s; the Anthropic face serves /anthropic/v1/messages, /anthropic/v1/messages/count_tokens and /anthropic/v1/models, the OpenAI face /openai/chat/completions and /openai/models", r.Method, r.URL.Path)))
		return false
	}
	if r.Method != rt.method {
		c.w.Header().Set("Allow", rt.method)
		c.fail(errorf(http.StatusMethodNotAllowed, "invalid_request", fmt.Sprintf("oz0 gateway: method %s is not allowed for %s; use %s", r.Method, r.URL.Path, rt.method)))
		return false
	}
	return true
}

// authenticate finds the session's grant by its key.
func (c *call) authenticate() bool {
	g, r := c.g, c.r
	// The session key, once: with two, which one a check reads and which one another part reads
	// could differ.
	for _, k := range []string{"X-Api-Key", "Authorization"} {
		if n := len(r.Header[k]); n > 1 {
			c.fail(errorf(http.StatusBadRequest, "invalid_request", fmt.Sprintf("oz0 gateway: the %s header comes %d times; send the session key once", k, n)))
			return false
		}
	}
	key := r.Header.Get("X-Api-Key")
	if key == "" {
		if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
			key = strings.TrimSpace(a[7:])
		}
	}
	if key == "" {
		c.fail(errorf(http.StatusUnauthorized, "authentication", "oz0 gateway: no session key; send the session's key (ANTHROPIC_API_KEY or OPENAI_API_KEY) in x-api-key or Authorization: Bearer"))
		return false
	}
	grant, err := g.resolver.Resolve(r.Context(), key)
	if err != nil {
		if errors.Is(err, ErrUnknownKey) {
			c.fail(errorf(http.StatusUnauthorized, "authentication", "oz0 gateway: invalid session key: it is unknown, or its job has ended or was killed"))
		} else {
			c.fail(errorf(http.StatusInternalServerError, "api", "oz0 gateway: cannot check the session key: "+strings.ReplaceAll(err.Error(), key, "[session key]")))
		}
		return false
	}
	c.grant, c.key = grant, key
	c.rec.Job, c.rec.Agent, c.rec.Record = grant.Job, grant.Agent, grant.Record.Name
	c.js = g.job(grant.Job)
	return true
}

// checkOz0Headers refuses a call whose Oz0 headers or format differ from its grant's.
func (c *call) checkOz0Headers() bool {
	r, grant := c.r, c.grant
	// Oz0-Job and Oz0-Agent: taken from the key when absent, and must match it when present. Any
	// Oz0 header comes once: a second Oz0-Job could name another job than the one checked.
	if k, n := repeatedOz0Header(r.Header); n > 1 {
		c.refuse(k, errorf(http.StatusBadRequest, "invalid_request", fmt.Sprintf("oz0 gateway: the %s header comes %d times; send it once", k, n)))
		return false
	}
	if h, ok := headerValue(r.Header, "Oz0-Job"); ok && h != grant.Job {
		c.refuse("Oz0-Job", errorf(http.StatusForbidden, "permission", fmt.Sprintf("oz0 gateway: Oz0-Job %s does not match the session key, which is job %s's", c.quote(h), grant.Job)))
		return false
	}
	if h, ok := headerValue(r.Header, "Oz0-Agent"); ok && h != grant.Agent {
		c.refuse("Oz0-Agent", errorf(http.StatusForbidden, "permission", fmt.Sprintf("oz0 gateway: Oz0-Agent %s does not match the session key, which is agent %s's in job %s", c.quote(h), grant.Agent, grant.Job)))
		return false
	}
	if !grant.Record.Takes(c.rt.face) {
		c.refuse("format", errorf(http.StatusForbidden, "permission", fmt.Sprintf("oz0 gateway: the session's model record %s takes %s, not %s", grant.Record.Name, formatList(grant.Record.Formats), c.rt.face)))
		return false
	}
	return true
}

// planBody reads what the gateway needs of the body (the model, mapped when the record maps it,
// whether it streams, include_usage) and plans its edits, spliced in as the body goes upstream
// without a copy of it.
func (c *call) planBody(body []byte) ([]edit, reqInfo) {
	var edits []edit
	var info reqInfo
	if ep := c.rt.ep; ep == EndpointMessages || ep == EndpointChat || ep == EndpointCountTokens {
		edits, info = planRequest(body, c.rt.face, c.grant.Record.Models)
		c.rec.Model, c.rec.UpstreamModel = info.model, info.model
		if info.upstreamModel != "" {
			c.rec.UpstreamModel = info.upstreamModel
		}
	}
	if c.counted = c.rt.ep == EndpointMessages || c.rt.ep == EndpointChat; c.counted {
		c.res = reservation(info, len(body), c.grant.Record.Prices)
	}
	return edits, info
}

// enter admits the call against its job's kill mark, budget and limits (see admit), which makes
// it cancellable by Kill; a call the grant records is captured from here, refused or not.
func (c *call) enter(body []byte, stream bool) bool {
	grant, r := c.grant, c.r
	if grant.Recording { // before admit: a refused call is kept too, with the refusal
		c.capture = newCapture(c, body)
	}
	// Before admit: Kill may cancel from then on. A client that goes cancels the upstream
	// request, but a stream's once it has begun: its upstream is read to its end, for its usage
	// (clientLeft).
	if stream {
		c.ctx, c.cancel = context.WithCancelCause(context.WithoutCancel(r.Context()))
		c.stopLeave = context.AfterFunc(r.Context(), c.clientLeft)
	} else {
		c.ctx, c.cancel = context.WithCancelCause(r.Context())
	}
	if e, limit := c.admit(); e != nil {
		c.refuse(limit, e)
		c.g.log.LogAttrs(r.Context(), slog.LevelWarn, "gateway: call refused",
			slog.String("job", grant.Job), slog.String("agent", grant.Agent), slog.String("limit", limit), slog.String("reason", e.msg))
		return false
	}
	return true
}

// lookUpTenantKey reads the provider record's key, on every call: a secret set or changed
// meanwhile is the one used.
func (c *call) lookUpTenantKey() bool {
	g, grant := c.g, c.grant
	name := grant.Record.Secret
	if name == "" {
		return true
	}
	var v string
	err := ErrNoSecret
	if g.secrets != nil {
		v, err = g.secrets.Secret(c.r.Context(), name)
	}
	if err != nil || v == "" {
		why := "is not set"
		if err != nil && !errors.Is(err, ErrNoSecret) {
			why = "cannot be read (" + err.Error() + ")"
		}
		c.fail(errorf(http.StatusInternalServerError, "api", fmt.Sprintf("oz0 gateway: the provider record %s has no key: the secret %s %s", grant.Record.Name, name, why)))
		return false
	}
	c.tenantKey = v
	c.setMaskKey(v)
	return true
}

// setMaskKey makes v the key the call masks, when it is long enough to mask (see maskKey).
func (c *call) setMaskKey(v string) {
	if utf8.RuneCountInString(v) >= apiv1.SecretMinMaskLen {
		c.maskKey, c.keyBytes = v, []byte(v)
	}
}

// knowMaskKey looks the tenant key up for masking alone when the call has not looked it up to go
// upstream: a call refused, replayed or failed before that still logs and meters what its
// request said (its model, a header it quoted), and a harness that knows the key may have put it
// there. A key that cannot be read masks nothing, as it reached no one either.
func (c *call) knowMaskKey() {
	if c.maskKey != "" || c.maskLooked || c.grant == nil || c.grant.Record.Secret == "" || c.g.secrets == nil {
		return
	}
	c.maskLooked = true
	if v, err := c.g.secrets.Secret(context.WithoutCancel(c.r.Context()), c.grant.Record.Secret); err == nil {
		c.setMaskKey(v)
	}
}

// admit checks the job's kill mark, its budget and the session's limits, and counts the step. It
// registers the call as live, so Kill can cancel it.
func (c *call) admit() (*gwError, string) {
	js, g := c.js, c.grant
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.killed {
		return errorf(http.StatusForbidden, "permission", fmt.Sprintf("oz0 gateway: job %s was killed; its calls are refused", g.Job)), "kill"
	}
	if c.counted {
		ss := js.sessions[c.key]
		if ss == nil {
			ss = &sessionState{}
			js.sessions[c.key] = ss
		}
		c.ss = ss
		quota := func(status int, msg string) *gwError {
			return &gwError{status: status, kind: "rate_limit", msg: msg, noRetry: true, quota: true}
		}
		// Against what was used and what the calls in flight may use (reserve.go).
		if b := g.Budget.Tokens; b > 0 && js.usage.Total()+js.flight.tokens >= b {
			return quota(http.StatusTooManyRequests, fmt.Sprintf("oz0 gateway: budget.tokens of %d reached for job %s (%d used%s)", b, g.Job, js.usage.Total(), js.flight.tokensNote())), "budget.tokens"
		}
		if b := g.Budget.CostUSD; b > 0 && js.cost+js.flight.cost >= b {
			return quota(http.StatusTooManyRequests, fmt.Sprintf("oz0 gateway: budget.cost_usd of $%s reached for job %s ($%s used%s)", fmtUSD(b), g.Job, fmtUSD(js.cost), js.flight.costNote())), "budget.cost_usd"
		}
		if l := g.Limits.MaxTokens; l > 0 && ss.usage.Total()+ss.flight.tokens >= l {
			return quota(http.StatusTooManyRequests, fmt.Sprintf("oz0 gateway: limits.max_tokens of %d reached for job %s (agent %s's session used %d%s)", l, g.Job, g.Agent, ss.usage.Total(), ss.flight.tokensNote())), "limits.max_tokens"
		}
		if l := g.Limits.MaxCostUSD; l > 0 && ss.cost+ss.flight.cost >= l {
			return quota(http.StatusTooManyRequests, fmt.Sprintf("oz0 gateway: limits.max_cost_usd of $%s reached for job %s (agent %s's session used $%s%s)", fmtUSD(l), g.Job, g.Agent, fmtUSD(ss.cost), ss.flight.costNote())), "limits.max_cost_usd"
		}
		if l := g.Limits.MaxSteps; l > 0 && ss.steps >= l {
			return &gwError{status: http.StatusTooManyRequests, kind: "rate_limit", noRetry: true,
				msg: fmt.Sprintf("oz0 gateway: limits.max_steps of %d reached for job %s (agent %s's session has made %d model calls)", l, g.Job, g.Agent, ss.steps)}, "limits.max_steps"
		}
	}
	// The tenant's kill switches, then, for a step, its quotas against the same reservation
	// (tenant.go; a call that is no step reserves nothing).
	if e, what := c.g.tenant.admit(g.Record.Name, c.res); e != nil {
		return e, what
	}
	if c.counted {
		ss := c.ss
		ss.steps++
		c.rec.Step = ss.steps
		js.flight.add(c.res)
		ss.flight.add(c.res)
		c.reserved = true
	}
	js.live[c] = struct{}{}
	c.registered = true
	return nil, ""
}

func fmtUSD(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// answerBegins puts the call in its job's order as its answer begins (see after.go).
func (c *call) answerBegins() {
	if js := c.js; js != nil {
		js.mu.Lock()
		if !c.queued {
			c.queued = true
			js.order = append(js.order, c)
		}
		js.mu.Unlock()
	}
}

// finish accounts for the call and hands it to the meter goroutine, which meters and logs it
// once the client has its answer.
func (c *call) finish() {
	c.hold.Release()
	if c.watchdog != nil {
		c.watchdog.Stop()
	}
	if c.stopLeave != nil {
		c.stopLeave()
	}
	if t := c.drainTimer.Load(); t != nil {
		t.Stop()
	}
	if c.cancel != nil {
		c.cancel(nil)
	}
	c.rec.Latency = time.Since(c.rec.Start)
	// A call answered from a recording cost nothing.
	if c.rec.Priced = c.grant != nil && c.grant.Record.Prices != nil && !c.rec.Replayed; c.rec.Priced {
		c.rec.CostUSD = c.grant.Record.Prices.Cost(c.rec.Usage)
	}
	if c.rec.Status == 0 && c.clientGone {
		c.rec.Status = 499 // as nginx says: the client closed the request
	}
	c.maskRecord()
	js := c.js
	// The account first: a session's next call, which may come as soon as this answer is out,
	// is checked against its limits with this call's tokens.
	if js != nil && c.registered {
		js.mu.Lock()
		if c.writeDeadline {
			http.NewResponseController(c.w).SetWriteDeadline(time.Time{})
		}
		delete(js.live, c)
		js.calls++
		js.usage = js.usage.Add(c.rec.Usage)
		js.cost += c.rec.CostUSD
		if c.ss != nil {
			c.ss.usage = c.ss.usage.Add(c.rec.Usage)
			c.ss.cost += c.rec.CostUSD
		}
		if c.reserved { // what it used replaces what it might have
			js.flight.sub(c.res)
			c.ss.flight.sub(c.res)
		}
		js.mu.Unlock()
		// The tenant's account, before the answer goes too: a call of any job made as soon as it
		// is out is checked against the quotas with this call's use.
		res := inFlight{}
		if c.reserved {
			res = c.res
		}
		c.g.tenant.end(c.grant.Record.Name, res, c.rec.Usage, c.rec.CostUSD, !c.rec.Replayed)
	}
	// Then the answer goes to the client, not when the handler returns: what follows (the
	// recording's copy, the hand-over to the meter) is after it, where a bare reverse proxy would
	// have returned. A sized answer is all out with this write; a stream's last events are out
	// already, and net/http ends it when the handler returns.
	if c.wroteHeader && !c.clientGone && !c.abortConn {
		http.NewResponseController(c.w).Flush()
	}
	if k := c.capture; k != nil && (c.answered || k.ex.Gateway) {
		c.rec.Exchange = k.exchange(c.rec.Status, c.rec.Usage)
	}
	c.end = endedCall{rec: c.rec, method: c.r.Method, path: c.r.URL.Path, metered: c.grant != nil}
	q := c.g.after
	q.waitRoom()
	if js == nil {
		if !q.push(c.end) {
			c.g.report([]endedCall{c.end}, nil)
			q.finished(1)
		}
		return
	}
	js.mu.Lock()
	c.ended = true
	if !c.queued {
		c.queued = true
		js.order = append(js.order, c)
	}
	// Hand over the ended calls at the head of the job's order, under its lock: a later call of
	// the job never reaches the meter before an earlier one.
	n := 0
	for n < len(js.order) && js.order[n].ended {
		n++
	}
	var ready []endedCall
	if n > 0 {
		ready = make([]endedCall, n)
		for i, o := range js.order[:n] {
			ready[i] = o.end
		}
		rest := copy(js.order, js.order[n:])
		clear(js.order[rest:])
		js.order = js.order[:rest]
	}
	pushed := len(ready) == 0 || q.push(ready...)
	js.mu.Unlock()
	if !pushed { // the gateway is closed: meter here
		c.g.report(ready, nil)
		q.finished(len(ready))
	}
}

// maskRecord masks the tenant key in what the call's record holds from its request or its
// answer (the model asked for, the refusal, the errors), before it is logged and metered: the
// gateway logs nothing of a request unmasked.
func (c *call) maskRecord() {
	r := &c.rec
	for _, f := range []*string{&r.Model, &r.UpstreamModel, &r.Refused, &r.AbortReason, &r.StreamError, &r.Error} {
		*f = c.maskSaid(*f)
	}
}

// maskSaid masks what a request said, where the gateway logs or meters it: the call's key and,
// with Config.Mask, the tenant's other secrets.
func (c *call) maskSaid(s string) string {
	if s == "" {
		return s
	}
	c.knowMaskKey()
	s = c.mask(s)
	if c.g.maskFn != nil {
		s = string(c.g.maskFn([]byte(s)))
	}
	return s
}

func (g *Gateway) logCall(e *endedCall) {
	rec := &e.rec
	attrs := []slog.Attr{
		slog.String("method", e.method), slog.String("path", e.path), slog.Int("status", rec.Status),
		slog.String("job", rec.Job), slog.String("agent", rec.Agent), slog.String("record", rec.Record),
		slog.String("format", string(rec.Format)), slog.String("endpoint", string(rec.Endpoint)),
	}
	if rec.Model != "" {
		attrs = append(attrs, slog.String("model", rec.Model))
		if rec.UpstreamModel != rec.Model {
			attrs = append(attrs, slog.String("upstream_model", rec.UpstreamModel))
		}
	}
	attrs = append(attrs, slog.Bool("streamed", rec.Streamed),
		slog.Int64("input_tokens", rec.Usage.InputTokens), slog.Int64("output_tokens", rec.Usage.OutputTokens),
		slog.Int64("cache_read_tokens", rec.Usage.CacheReadTokens), slog.Int64("cache_creation_tokens", rec.Usage.CacheCreationTokens),
		slog.Duration("latency", rec.Latency), slog.Duration("ttfb", rec.TTFB))
	if rec.Step > 0 {
		attrs = append(attrs, slog.Int("step", rec.Step))
	}
	if rec.Priced {
		attrs = append(attrs, slog.Float64("cost_usd", rec.CostUSD))
	}
	if rec.Replayed {
		attrs = append(attrs, slog.Bool("replayed", true)) // as the trace says: not a real call
	}
	if rec.Aborted {
		attrs = append(attrs, slog.String("aborted", rec.AbortReason))
	}
	if rec.Refused != "" {
		attrs = append(attrs, slog.String("refused", rec.Refused))
	}
	if rec.StreamError != "" {
		attrs = append(attrs, slog.String("stream_error", rec.StreamError))
	}
	if rec.Error != "" {
		attrs = append(attrs, slog.String("error", rec.Error))
	}
	g.log.LogAttrs(context.Background(), slog.LevelInfo, "gateway: call", attrs...)
}

// The gateway holds a call's request body whole: it reads the model and stream fields, which may
// come last, before the call goes upstream, and keeps the body until the upstream's answer begins
// (the transport resends it when a kept-alive connection turns out dead). Each call is bounded
// (Config.MaxRequestBytes); the budget (membudget) bounds them together. Before reading a body, a
// call takes its size from the budget (as it reads, for a body of no declared length), waiting in
// line for room at most Config.BodyQueueTimeout, and gives it back once the upstream's answer has
// begun (or when the call ends, for a call kept for a recording, whose copy of the body lives
// until then). Through oz0 dev, eight calls of 30 MB at once peak at ~380 MB with it, and did at
// 1.2 GB before (docs/reliability.md says what else went into that). After a burst of more than
// half the budget, once it has drained, the budget gives the memory back to the system.

// readBody reads the request body whole, once the gateway's budget has room for it. A body over
// the limit gets 413, one that finds no room 503, one that does not come within the body timeout
// 408 (and its connection is closed). ok is false when the call has been answered, or its client
// has gone.
func (c *call) readBody() (body []byte, ok bool) {
	g, r := c.g, c.r
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	if r.ContentLength > g.maxBody {
		c.fail(c.tooLarge())
		return nil, false
	}
	// A body of no declared length takes from the budget as it grows.
	size := r.ContentLength
	if size < 0 {
		size = min(64<<10, g.maxBody)
	}
	c.hold = g.budget.Hold()
	if !c.take(size) {
		return nil, false
	}
	// A deadline on reading the connection, from now: the wait for room above does not count.
	// It is lifted once the body is in (net/http lifts it too when it sees the body's end), so
	// the answer, a stream, is not limited by it. A writer that cannot set one (a test's
	// recorder) reads without it.
	if g.bodyTimeout > 0 {
		rc := http.NewResponseController(c.w)
		if rc.SetReadDeadline(time.Now().Add(g.bodyTimeout)) == nil {
			defer rc.SetReadDeadline(time.Time{})
		}
	}
	buf := make([]byte, 0, size+1) // room to read the EOF without growing
	lr := io.LimitReader(r.Body, g.maxBody+1)
	for int64(len(buf)) <= g.maxBody {
		if len(buf) == cap(buf) {
			grown := min(2*int64(cap(buf)), g.maxBody+1)
			if !c.take(grown - int64(cap(buf))) {
				return nil, false
			}
			buf = append(make([]byte, 0, grown), buf...)
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				c.w.Header().Set("Connection", "close")
				c.fail(errorf(http.StatusRequestTimeout, "request_timeout", fmt.Sprintf("oz0 gateway: the request body did not come within %s (%d of %s bytes came); a client sends the whole body at once", g.bodyTimeout, len(buf), declared(r.ContentLength))))
				return nil, false
			}
			c.clientGone = true
			c.rec.Error = "cannot read the request body: " + err.Error()
			return nil, false
		}
	}
	if int64(len(buf)) > g.maxBody {
		c.fail(c.tooLarge())
		return nil, false
	}
	return buf, true
}

// take takes n more bytes of the budget for the call's body; false when the call has been
// answered 503, or its client has gone, while it waited.
func (c *call) take(n int64) bool {
	err := c.hold.Take(c.r.Context(), n)
	switch {
	case err == nil:
		return true
	case errors.Is(err, membudget.ErrNoRoom):
		c.w.Header().Set("Retry-After", "2")
		c.fail(errorf(http.StatusServiceUnavailable, "overloaded", fmt.Sprintf("oz0 gateway: too many request bytes in flight: the call's body waited %s for room in the %s the gateway holds at once over all calls; retry shortly", c.g.budget.Wait(), mib(c.g.budget.Size()))))
	default:
		c.clientGone = true
		c.rec.Error = "the client went away while its call waited for room for its body"
	}
	return false
}

func (c *call) tooLarge() *gwError {
	return errorf(http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("oz0 gateway: the request body is larger than the gateway's limit of %s (%d bytes)", mib(c.g.maxBody), c.g.maxBody))
}

// declared is a request's Content-Length as a message says it.
func declared(n int64) string {
	if n < 0 {
		return "an undeclared number of"
	}
	return strconv.FormatInt(n, 10)
}

// mib says a size in MiB, or in bytes under one.
func mib(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d bytes", n)
	}
	return strings.TrimSuffix(strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64), ".0") + " MiB"
}

// repeatedOz0Header returns the first Oz0 header (by name) that comes more than once, and how
// many times it comes.
func repeatedOz0Header(h http.Header) (string, int) {
	var names []string
	for k, vs := range h {
		if len(vs) > 1 && len(k) >= 4 && strings.EqualFold(k[:4], "oz0-") {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return "", 0
	}
	slices.Sort(names)
	return names[0], len(h[names[0]])
}

func headerValue(h http.Header, name string) (string, bool) {
	v, ok := h[name]
	if !ok || len(v) == 0 {
		return "", false
	}
	return v[0], true
}

// quoteShort quotes a value from a request in a refusal, at most 80 characters of it.
func quoteShort(s string) string { return strconv.Quote(textclip.ClipN(s, 80)) }

// quote is quoteShort of a value from the call's request, masked first (maskSaid): cut first, a
// key's first 80 characters would no longer be the key that masking looks for.
func (c *call) quote(s string) string {
	return quoteShort(c.maskSaid(s))
}

// mask hides the tenant's key in s.
func (c *call) mask(s string) string {
	if c.maskKey == "" || !strings.Contains(s, c.maskKey) {
		return s
	}
	return strings.ReplaceAll(s, c.maskKey, strings.Repeat("*", len(c.maskKey)))
}

// reqInfo is what the gateway reads from a request body.
type reqInfo struct {
	model         string // as requested
	upstreamModel string // when the record maps it
	stream        bool
	injected      bool  // include_usage was added for the gateway: hide the usage chunk
	maxOutput     int64 // max_tokens (OpenAI: max_completion_tokens, else max_tokens); 0: none said
}

var includeUsageMember = []byte(`"stream_options":{"include_usage":true},`)

// planRequest reads the model and stream flag of a request body, and returns the edits (in order)
// that map the model and, on an OpenAI stream, ask for include_usage when the client did not; the
// upstream body splices them in (newUpstreamBody). A body that is not a JSON object gets none.
func planRequest(body []byte, face Format, models map[string]string) ([]edit, reqInfo) {
	var info reqInfo
	var edits []edit
	so := member{start: -1}
	maxCompletion := false
	err := topLevel(body, func(m member) bool {
		switch {
		case m.keyIs("model"):
			if s, ok := jsonutil.String(body[m.start:m.end]); ok {
				info.model = s
				if up, ok := models[s]; ok && up != s {
					info.upstreamModel = up
					edits = append(edits, edit{m.start, m.end, strconv.AppendQuote(nil, up)})
				}
			}
		case m.keyIs("stream"):
			info.stream = string(body[m.start:m.end]) == "true"
		case m.keyIs("max_completion_tokens"):
			if n, ok := atoi(body[m.start:m.end]); ok {
				info.maxOutput, maxCompletion = n, true
			}
		case m.keyIs("max_tokens"):
			if n, ok := atoi(body[m.start:m.end]); ok && !maxCompletion {
				info.maxOutput = n
			}
		case m.keyIs("stream_options"):
			so = m
		}
		return true
	})
	if err != nil {
		return nil, reqInfo{}
	}
	if face == OpenAIChat && info.stream {
		if so.start < 0 {
			at := bytes.IndexByte(body, '{') + 1
			edits = append(edits, edit{at, at, includeUsageMember})
			info.injected = true
		} else if v := body[so.start:so.end]; string(v) == "null" {
			edits = append(edits, edit{so.start, so.end, []byte(`{"include_usage":true}`)})
			info.injected = true
		} else if v[0] == '{' {
			asked := false
			var iu member
			iu.start = -1
			topLevel(v, func(m member) bool {
				if m.keyIs("include_usage") {
					iu = m
					asked = string(v[m.start:m.end]) == "true"
				}
				return true
			})
			if !asked {
				info.injected = true
				if iu.start >= 0 {
					edits = append(edits, edit{so.start + iu.start, so.start + iu.end, []byte("true")})
				} else {
					at := so.start + 1
					text := []byte(`"include_usage":true,`)
					if string(bytes.TrimSpace(v[1:len(v)-1])) == "" {
						text = text[:len(text)-1]
					}
					edits = append(edits, edit{at, at, text})
				}
			}
		}
	}
	sortEdits(edits)
	return edits, info
}

func sortEdits(e []edit) {
	for i := 1; i < len(e); i++ {
		for j := i; j > 0 && e[j].start < e[j-1].start; j-- {
			e[j], e[j-1] = e[j-1], e[j]
		}
	}
}
