package gateway

import (
	"sync"
	"time"
)

// Usage is the tokens of one call or of many, counted the same way for both formats: input tokens
// that were neither read from nor written to the prompt cache, cache reads, cache writes, output.
// For OpenAI, InputTokens is prompt_tokens less prompt_tokens_details.cached_tokens, and
// CacheReadTokens is cached_tokens (OpenAI reports no cache writes).
type Usage struct {
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	CacheReadTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationTokens int64 `json:"cache_creation_input_tokens"`
}

// Total is every token of u: input, cache reads, cache writes and output. Token limits and
// budgets count this.
func (u Usage) Total() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheCreationTokens
}

// Add returns u + v.
func (u Usage) Add(v Usage) Usage {
	return Usage{u.InputTokens + v.InputTokens, u.OutputTokens + v.OutputTokens,
		u.CacheReadTokens + v.CacheReadTokens, u.CacheCreationTokens + v.CacheCreationTokens}
}

// Endpoint names what a call asked for.
type Endpoint string

// The endpoints of the two faces.
const (
	EndpointMessages    Endpoint = "messages"     // POST …/v1/messages (Anthropic)
	EndpointCountTokens Endpoint = "count_tokens" // POST …/v1/messages/count_tokens (Anthropic)
	EndpointChat        Endpoint = "chat"         // POST …/chat/completions (OpenAI)
	EndpointModels      Endpoint = "models"       // GET …/models and …/models/ID (both)
)

// Why a call was aborted, in Call.AbortReason.
const (
	AbortClient   = "client"   // the client went away; the upstream request was cancelled
	AbortUpstream = "upstream" // the upstream cut the response short
	AbortKilled   = "killed"   // Gateway.Kill, or the tenant's kill switch (Gateway.KillTenant)
	AbortIdle     = "idle"     // no byte from upstream for Config.IdleTimeout (Config.ResponseTimeout before a non-streamed answer)
)

// Call is the meter's record of one call through the gateway.
type Call struct {
	Start         time.Time
	Job           string
	Agent         string
	Record        string // the provider record's name
	Format        Format
	Endpoint      Endpoint
	Model         string // the model the client asked for
	UpstreamModel string // the model sent upstream, when the record maps it; else Model
	Status        int    // the HTTP status the client got
	Usage         Usage
	CostUSD       float64 // when Priced
	Priced        bool    // whether the record has prices
	Latency       time.Duration
	TTFB          time.Duration // to the upstream's response headers, the first byte of its answer; 0 when none came
	FirstEvent    time.Duration // streams: to the first event passed on to the client
	Streamed      bool          // whether the answer was a stream of server-sent events
	Step          int           // the call's number among its session's steps; 0 for calls that are no step
	Aborted       bool
	AbortReason   string // AbortClient, AbortUpstream, AbortKilled or AbortIdle
	Refused       string // the limit or rule that refused the call (e.g. "limits.max_steps"); "" when it went upstream
	StreamError   string // the type of an error event the upstream sent in a stream, e.g. overloaded_error
	Error         string // the gateway's own error, e.g. an unreachable upstream; never holds a key
	Replayed      bool   // answered from a recording (Grant.Replay), not upstream
	// Exchange is the call's request and answer, when its grant keeps them (Grant.Recording) and
	// an answer came, from upstream or a recording, or the gateway answered it itself after
	// reading its body (a refusal: Exchange.Gateway).
	Exchange *Exchange
}

// Meter records calls. Record is called once per call, after the call has ended and the client
// has its answer, from the gateway's one meter goroutine: a job's calls in the order their
// answers began, so a session's calls in the order it made them. It may block (a durable write);
// calls wait for it only when tens of thousands are queued.
type Meter interface {
	Record(Call)
}

// BatchMeter is a Meter that takes every call that is waiting at once, in the same order: a
// durable store commits them together instead of one commit a call.
type BatchMeter interface {
	Meter
	RecordBatch([]Call)
}

// MeterFunc is a Meter that is a function.
type MeterFunc func(Call)

// Record calls f(c).
func (f MeterFunc) Record(c Call) { f(c) }

// MemMeter is a Meter that keeps every call in memory, safe for concurrent use.
type MemMeter struct {
	mu    sync.Mutex
	calls []Call
}

// Record keeps c.
func (m *MemMeter) Record(c Call) {
	m.mu.Lock()
	m.calls = append(m.calls, c)
	m.mu.Unlock()
}

// Calls returns the calls recorded so far, in the order they were metered (a job's in the order
// their answers began).
func (m *MemMeter) Calls() []Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Call(nil), m.calls...)
}

// Job returns the calls of job.
func (m *MemMeter) Job(job string) []Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Call
	for _, c := range m.calls {
		if c.Job == job {
			out = append(out, c)
		}
	}
	return out
}

// Reset forgets every call.
func (m *MemMeter) Reset() {
	m.mu.Lock()
	m.calls = nil
	m.mu.Unlock()
}
