package fakemodel

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

// apiError is an error answer, before it is put in a provider's shape.
type apiError struct {
	kind       string // a key of errKinds
	status     int    // 0: the kind's for the provider
	message    string
	note       string // appended to the kind's default message when message is ""
	param      string // OpenAI's param; "" is null
	code       string // OpenAI's code; "": the kind's
	nullCode   bool   // OpenAI's code is null whatever the kind
	retryAfter time.Duration
	limit      int // a rate limit's requests a minute, for its headers; 0: defaultRateLimit
}

// defaultRateLimit is the requests a minute a rate_limit error's headers say by default: the
// lowest tier's of Anthropic's.
const defaultRateLimit = 50

type errKind struct {
	anthStatus, openaiStatus int
	anthType                 string
	openaiType, openaiCode   string
	anthMsg, openaiMsg       string
}

// errKinds are the error kinds of scripts, and how each provider says them.
var errKinds = map[string]errKind{
	"invalid_request": {400, 400, "invalid_request_error", "invalid_request_error", "",
		"Invalid request", "Invalid request"},
	"authentication": {401, 401, "authentication_error", "invalid_request_error", "invalid_api_key",
		"invalid x-api-key", "Incorrect API key provided."},
	"permission": {403, 403, "permission_error", "invalid_request_error", "",
		"Your API key does not have permission to use the specified resource.", "You are not allowed to make this request."},
	"not_found": {404, 404, "not_found_error", "invalid_request_error", "not_found",
		"Not found", "The requested resource does not exist."},
	"request_too_large": {413, 413, "request_too_large", "invalid_request_error", "request_too_large",
		"Request exceeds the maximum allowed number of bytes.", "The request is too large."},
	"rate_limit": {429, 429, "rate_limit_error", "requests", "rate_limit_exceeded",
		"This request would exceed your organization's rate limit. Please try again later.",
		"Rate limit reached for requests. Please try again later."},
	"server": {500, 500, "api_error", "server_error", "",
		"Internal server error", "The server had an error while processing your request. Sorry about that!"},
	"overloaded": {529, 503, "overloaded_error", "server_error", "",
		"Overloaded", "The engine is currently overloaded, please try again later."},
}

// kindOfStatus is the error kind an HTTP status stands for.
func kindOfStatus(status int) string {
	switch {
	case status == 401:
		return "authentication"
	case status == 403:
		return "permission"
	case status == 404:
		return "not_found"
	case status == 413:
		return "request_too_large"
	case status == 429:
		return "rate_limit"
	case status == 503 || status == 529:
		return "overloaded"
	case status >= 500:
		return "server"
	}
	return "invalid_request"
}

func (e *apiError) statusFor(api string) int {
	if e.status != 0 {
		return e.status
	}
	k := errKinds[e.kind]
	if api == OpenAI {
		return k.openaiStatus
	}
	return k.anthStatus
}

// body is the error in the provider's shape.
func (e *apiError) body(api string) any {
	k, ok := errKinds[e.kind]
	if !ok {
		k = errKinds["server"]
	}
	if api == OpenAI {
		msg := e.message
		if msg == "" {
			msg = k.openaiMsg + e.note
		}
		code := e.code
		if code == "" && !e.nullCode {
			code = k.openaiCode
		}
		return openaiErrorBody{Error: openaiErrorDetail{Message: msg, Type: k.openaiType, Param: nullable(e.param), Code: nullable(code)}}
	}
	msg := e.message
	if msg == "" {
		msg = k.anthMsg + e.note
	}
	return anthErrorBody{Type: "error", Error: anthErrorDetail{Type: k.anthType, Message: msg}}
}

type anthErrorBody struct {
	Type  string          `json:"type"`
	Error anthErrorDetail `json:"error"`
}

type anthErrorDetail struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

type openaiErrorBody struct {
	Error openaiErrorDetail `json:"error"`
}

type openaiErrorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// setRateLimitHeaders sets the headers a provider's rate limit answer carries: its limit, none
// remaining, and when it resets (Anthropic: a time, RFC 3339; OpenAI: a duration such as 2s).
func setRateLimitHeaders(h http.Header, api string, e *apiError, now time.Time) {
	if e.kind != "rate_limit" {
		return
	}
	limit := e.limit
	if limit <= 0 {
		limit = defaultRateLimit
	}
	if api == OpenAI {
		h.Set("x-ratelimit-limit-requests", strconv.Itoa(limit))
		h.Set("x-ratelimit-remaining-requests", "0")
		h.Set("x-ratelimit-reset-requests", max(e.retryAfter, time.Millisecond).String())
		return
	}
	h.Set("anthropic-ratelimit-requests-limit", strconv.Itoa(limit))
	h.Set("anthropic-ratelimit-requests-remaining", "0")
	h.Set("anthropic-ratelimit-requests-reset", now.Add(e.retryAfter).UTC().Format(time.RFC3339))
}

// setRetryAfter sets retry-after (whole seconds, rounded up) and retry-after-ms.
func setRetryAfter(h http.Header, d time.Duration) {
	if d <= 0 {
		return
	}
	h.Set("retry-after", strconv.Itoa(int(math.Ceil(d.Seconds()))))
	h.Set("retry-after-ms", strconv.FormatInt(d.Milliseconds(), 10))
}

// scriptedError is the apiError a rule's error reply stands for.
func scriptedError(e *ErrorReply, rule string, script string) *apiError {
	kind := e.Kind
	if _, ok := errKinds[kind]; !ok {
		kind = kindOfStatus(e.Status)
	}
	return &apiError{kind: kind, status: e.Status, message: e.Message, retryAfter: e.RetryAfter, limit: e.Limit,
		note: fmt.Sprintf(" (oz0 fake model: %s of script %s)", rule, script)}
}
