package gateway

import (
	"net/http"
	"strconv"
	"time"

	"github.com/orchestrator-zero/oz0/internal/jsonutil"
)

// gwError is an error the gateway itself answers, put in the shape of the face's provider.
type gwError struct {
	status int
	kind   string // a key of errShapes
	msg    string
	// noRetry adds x-should-retry: false, which both official SDKs honour: a refused limit does not
	// lift by retrying.
	noRetry bool
	// quota asks OpenAI's insufficient_quota shape (budgets) rather than rate_limit_exceeded.
	quota bool
	// openaiType, when set, is the OpenAI error's type in place of the kind's ("tokens" for a
	// rate limit of tokens, as OpenAI says it).
	openaiType string
	// retryAfter, when set, is sent as retry-after (whole seconds, rounded up) and retry-after-ms,
	// which both official SDKs wait before they retry (when it is at most a minute).
	retryAfter time.Duration
	// rateLimit, when set, adds the provider's rate-limit headers, as its own rate limit sends
	// them.
	rateLimit *rateLimitHeaders
}

// rateLimitHeaders are a rate limit's headers: what it counts (requests or tokens), its limit a
// minute, none remaining, and when it resets.
type rateLimitHeaders struct {
	what  string // requests or tokens
	limit int64
	reset time.Time
	wait  time.Duration
}

// set writes them as face's provider does: Anthropic's anthropic-ratelimit-WHAT-limit,
// -remaining and -reset (a time, RFC 3339), OpenAI's x-ratelimit-limit-WHAT,
// x-ratelimit-remaining-WHAT and x-ratelimit-reset-WHAT (a duration, 1.5s).
func (r *rateLimitHeaders) set(h http.Header, f Format) {
	limit := strconv.FormatInt(r.limit, 10)
	if f == OpenAIChat {
		h.Set("X-Ratelimit-Limit-"+r.what, limit)
		h.Set("X-Ratelimit-Remaining-"+r.what, "0")
		h.Set("X-Ratelimit-Reset-"+r.what, r.wait.String())
		return
	}
	h.Set("Anthropic-Ratelimit-"+r.what+"-Limit", limit)
	h.Set("Anthropic-Ratelimit-"+r.what+"-Remaining", "0")
	h.Set("Anthropic-Ratelimit-"+r.what+"-Reset", r.reset.UTC().Format(time.RFC3339))
}

type errShape struct {
	anthType   string
	openaiType string
	openaiCode string // "" is null
}

var errShapes = map[string]errShape{
	"invalid_request": {"invalid_request_error", "invalid_request_error", ""},
	"authentication":  {"authentication_error", "invalid_request_error", "invalid_api_key"},
	"permission":      {"permission_error", "invalid_request_error", "permission_denied"},
	"not_found":       {"not_found_error", "invalid_request_error", "unknown_url"},
	"too_large":       {"request_too_large", "invalid_request_error", "request_too_large"},
	"rate_limit":      {"rate_limit_error", "requests", "rate_limit_exceeded"},
	"api":             {"api_error", "server_error", ""},
	"timeout":         {"timeout_error", "server_error", "timeout"},
	// A request whose body did not come in time: the client's fault, in the nearest shapes.
	"request_timeout": {"timeout_error", "invalid_request_error", "request_timeout"},
	"overloaded":      {"overloaded_error", "server_error", "server_overloaded"},
}

// body renders the error in the provider's shape.
func (e *gwError) body(f Format) []byte {
	sh, ok := errShapes[e.kind]
	if !ok {
		sh = errShapes["api"]
	}
	var v any
	if f == OpenAIChat {
		typ, code := sh.openaiType, sh.openaiCode
		if e.openaiType != "" {
			typ = e.openaiType
		}
		if e.quota {
			typ, code = "insufficient_quota", "insufficient_quota"
		}
		var c *string
		if code != "" {
			c = &code
		}
		v = struct {
			Error struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Param   *string `json:"param"`
				Code    *string `json:"code"`
			} `json:"error"`
		}{Error: struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		}{e.msg, typ, nil, c}}
	} else {
		v = struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}{"error", struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}{sh.anthType, e.msg}}
	}
	b, _ := jsonutil.Marshal(v)
	return b
}

// write answers the error as the response.
func (e *gwError) write(w http.ResponseWriter, f Format) {
	data := e.body(f)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(data)))
	if e.noRetry {
		h.Set("X-Should-Retry", "false")
	}
	if e.retryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64((e.retryAfter+time.Second-1)/time.Second), 10))
		h.Set("Retry-After-Ms", strconv.FormatInt(e.retryAfter.Milliseconds(), 10))
	}
	if e.rateLimit != nil {
		e.rateLimit.set(h, f)
	}
	w.WriteHeader(e.status)
	w.Write(data)
}

// event renders the error as a server-sent event in the provider's shape, for a stream that has
// already begun: Anthropic's "event: error", OpenAI's data-only {"error": …}. Both official SDKs
// end the stream with the error.
func (e *gwError) event(f Format) []byte {
	data := e.body(f)
	var b []byte
	if f == AnthropicMessages {
		b = append(b, "event: error\n"...)
	}
	b = append(b, "data: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

func errorf(status int, kind, msg string) *gwError {
	return &gwError{status: status, kind: kind, msg: msg}
}
