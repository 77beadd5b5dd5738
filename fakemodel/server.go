package fakemodel

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/orchestrator-zero/oz0/internal/jsonutil"
)

// The two APIs, as in Request.API.
const (
	Anthropic = "anthropic" // Anthropic's Messages API
	OpenAI    = "openai"    // OpenAI's Chat Completions API
)

// DefaultKeepRequests is how many of the latest requests a Server keeps for Requests.
const DefaultKeepRequests = 1000

// MaxRequestBytes is the largest request body a Server reads; a larger one gets 413.
const MaxRequestBytes = 32 << 20

// Created is the fixed creation time of every answer (2025-01-01T00:00:00Z): answers carry no
// wall-clock time.
const Created = 1735689600

// Server is the fake model API, an http.Handler. Set its fields before it serves.
type Server struct {
	// Log, when set, gets one line per request: method, path, status, API and rule.
	Log io.Writer
	// KeepRequests is how many of the latest requests Requests returns; 0: DefaultKeepRequests,
	// negative: none are kept.
	KeepRequests int
	// OnNoMatch, when set, is told of each request no rule of the script answers, as the 400 it
	// gets says it (oz0 plugin test says it once, ahead of the scenarios it failed).
	OnNoMatch func(NoMatch)

	script *Script

	mu   sync.Mutex
	used []int // the times each rule has answered
	reqs []*Request
}

// Request is a request the Server got, as it got it.
type Request struct {
	Method string
	Path   string // the URL path
	Query  string // the raw query, without ?
	Header http.Header
	Body   []byte
	API    string // Anthropic or OpenAI: the API whose shape the answer took
	Rule   string // the name of the rule that answered; "" when none did
	Status int    // the HTTP status answered; 0 while the answer is being written
}

// New returns a Server that answers from script; nil serves DefaultScript().
func New(script *Script) *Server {
	if script == nil {
		script = DefaultScript()
	}
	return &Server{script: script, used: make([]int, len(script.Rules))}
}

// Script returns the script the Server answers from.
func (s *Server) Script() *Script { return s.script }

// Requests returns copies of the requests the Server got, oldest first (at most KeepRequests).
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.reqs))
	for i, r := range s.reqs {
		out[i] = *r
		out[i].Header = r.Header.Clone()
		out[i].Body = bytes.Clone(r.Body)
	}
	return out
}

// Reset forgets the recorded requests and the times each rule has answered.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = nil
	clear(s.used)
}

func (s *Server) record(r *http.Request, body []byte) *Request {
	rec := &Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := s.KeepRequests
	if keep == 0 {
		keep = DefaultKeepRequests
	}
	if keep > 0 {
		if len(s.reqs) >= keep {
			n := len(s.reqs) - keep + 1
			clear(s.reqs[:n])
			s.reqs = append(s.reqs[:0], s.reqs[n:]...)
		}
		s.reqs = append(s.reqs, rec)
	}
	return rec
}

// exchange is one request being answered.
type exchange struct {
	s      *Server
	w      http.ResponseWriter
	r      *http.Request
	rec    *Request
	api    string
	body   []byte
	stream bool
	rule   string
}

func (x *exchange) set(status int) {
	x.s.mu.Lock()
	x.rec.Status, x.rec.API, x.rec.Rule = status, x.api, x.rule
	x.s.mu.Unlock()
	if x.s.Log != nil {
		var notes []string
		notes = append(notes, x.api)
		if x.stream {
			notes = append(notes, "stream")
		}
		if x.rule != "" {
			notes = append(notes, x.rule)
		}
		fmt.Fprintf(x.s.Log, "fake-model: %s %s -> %d (%s)\n", x.r.Method, x.r.URL.Path, status, strings.Join(notes, ", "))
	}
}

// ServeHTTP answers one request of either API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, tooLarge, readErr := readBody(r)
	x := &exchange{s: s, w: w, r: r, body: body, rec: s.record(r, body)}
	endpoint, api := route(r)
	x.api = api
	switch {
	case tooLarge:
		x.fail(&apiError{kind: "request_too_large", message: fmt.Sprintf("Request exceeds the maximum allowed number of bytes (%d MiB).", MaxRequestBytes>>20)})
		return
	case readErr != nil:
		x.fail(invalid("cannot read the request body: %v", readErr))
		return
	case endpoint == "":
		if api == OpenAI {
			x.fail(&apiError{kind: "not_found", message: fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path)})
		} else {
			x.fail(&apiError{kind: "not_found", message: "Not found"})
		}
		return
	}
	want := http.MethodPost
	if endpoint == "models" || endpoint == "model" {
		want = http.MethodGet
	}
	if r.Method != want {
		x.w.Header().Set("allow", want)
		x.fail(&apiError{kind: "invalid_request", status: http.StatusMethodNotAllowed,
			message: fmt.Sprintf("Method %s is not allowed for %s; use %s", r.Method, r.URL.Path, want)})
		return
	}
	if e := s.checkKey(r, api); e != nil {
		x.fail(e)
		return
	}
	switch endpoint {
	case "models":
		x.models()
	case "model":
		x.model(r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:])
	case "count_tokens":
		x.countTokens()
	case "messages", "chat":
		x.complete()
	}
}

// readBody reads the request body, up to MaxRequestBytes, into a buffer of the size the request
// declares (io.ReadAll would grow one step by step: twice the body, in copies).
func readBody(r *http.Request) (body []byte, tooLarge bool, err error) {
	if r.ContentLength > MaxRequestBytes {
		return nil, true, nil
	}
	if r.ContentLength < 0 {
		body, err = io.ReadAll(io.LimitReader(r.Body, MaxRequestBytes+1))
		if len(body) > MaxRequestBytes {
			return nil, true, nil
		}
		return body, false, err
	}
	body = make([]byte, r.ContentLength)
	n, err := io.ReadFull(r.Body, body)
	return body[:n], false, err
}

// route names the endpoint of a request by the end of its path, and the API whose shape answers.
func route(r *http.Request) (endpoint, api string) {
	p := strings.TrimSuffix(r.URL.Path, "/")
	api = OpenAI
	if r.Header.Get("anthropic-version") != "" || r.Header.Get("x-api-key") != "" {
		api = Anthropic
	}
	switch {
	case strings.HasSuffix(p, "/v1/messages"):
		return "messages", Anthropic
	case strings.HasSuffix(p, "/v1/messages/count_tokens"):
		return "count_tokens", Anthropic
	case strings.HasSuffix(p, "/chat/completions"):
		return "chat", OpenAI
	case strings.HasSuffix(p, "/models"):
		return "models", api
	}
	if i := strings.LastIndex(p, "/models/"); i >= 0 && !strings.Contains(p[i+len("/models/"):], "/") {
		return "model", api
	}
	return "", api
}

func (s *Server) checkKey(r *http.Request, api string) *apiError {
	want := s.script.RequireKey
	if want == "" {
		return nil
	}
	bearer, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if api == Anthropic {
		got := r.Header.Get("x-api-key")
		if got == "" {
			got = bearer
		}
		switch {
		case got == "":
			return &apiError{kind: "authentication", message: "x-api-key header is required"}
		case got != want:
			return &apiError{kind: "authentication", message: "invalid x-api-key"}
		}
		return nil
	}
	switch {
	case bearer == "":
		return &apiError{kind: "authentication", nullCode: true, message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."}
	case bearer != want:
		return &apiError{kind: "authentication", message: fmt.Sprintf("Incorrect API key provided: %s.", maskKey(bearer))}
	}
	return nil
}

// maskKey shows a key as OpenAI does: its first 3 and last 4 characters.
func maskKey(k string) string {
	if len(k) <= 8 {
		return strings.Repeat("*", len(k))
	}
	return k[:3] + strings.Repeat("*", min(len(k)-7, 16)) + k[len(k)-4:]
}

// seed is the hash ids are made from.
func (x *exchange) seed(parts ...string) []byte {
	h := sha256.New()
	h.Write([]byte(x.api))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	h.Write([]byte{0})
	h.Write(x.body)
	return h.Sum(nil)
}

const idAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// ident derives n characters of an id from seed and label.
func ident(seed []byte, label string, n int) string {
	out := make([]byte, 0, n)
	for ctr := uint32(0); len(out) < n; ctr++ {
		h := sha256.New()
		h.Write(seed)
		h.Write([]byte(label))
		var c [4]byte
		binary.BigEndian.PutUint32(c[:], ctr)
		h.Write(c[:])
		for _, b := range h.Sum(nil) {
			if b < 248 && len(out) < n { // 248 = 4*62: no bias
				out = append(out, idAlphabet[b%62])
			}
		}
	}
	return string(out)
}

func (x *exchange) requestID(seed []byte) {
	if x.api == OpenAI {
		x.w.Header().Set("x-request-id", "req_"+ident(seed, "request", 32))
	} else {
		x.w.Header().Set("request-id", "req_01"+ident(seed, "request", 22))
	}
}

// marshal encodes v as compact JSON without escaping <, > and &, as the providers do.
var marshal = jsonutil.Marshal

func mustMarshal(v any) []byte {
	b, err := marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// json answers status with the JSON of v.
func (x *exchange) json(status int, v any) {
	data := mustMarshal(v)
	h := x.w.Header()
	h.Set("content-type", "application/json")
	h.Set("content-length", strconv.Itoa(len(data)))
	x.w.WriteHeader(status)
	x.w.Write(data)
	x.set(status)
}

// fail answers with an error in the provider's shape.
func (x *exchange) fail(e *apiError) {
	x.requestID(x.seed("error"))
	setRetryAfter(x.w.Header(), e.retryAfter)
	setRateLimitHeaders(x.w.Header(), x.api, e, time.Now())
	x.json(e.statusFor(x.api), e.body(x.api))
}

func (x *exchange) models() {
	names := x.s.models()
	if x.api == Anthropic {
		list := anthModelList{Data: []anthModel{}, HasMore: false}
		for _, n := range names {
			list.Data = append(list.Data, anthModelOf(n))
		}
		if len(names) > 0 {
			list.FirstID, list.LastID = &names[0], &names[len(names)-1]
		}
		x.requestID(x.seed("models"))
		x.json(http.StatusOK, list)
		return
	}
	list := openaiModelList{Object: "list", Data: []openaiModel{}}
	for _, n := range names {
		list.Data = append(list.Data, openaiModelOf(n))
	}
	x.requestID(x.seed("models"))
	x.json(http.StatusOK, list)
}

func (x *exchange) model(id string) {
	for _, n := range x.s.models() {
		if n != id {
			continue
		}
		x.requestID(x.seed("model"))
		if x.api == Anthropic {
			x.json(http.StatusOK, anthModelOf(n))
		} else {
			x.json(http.StatusOK, openaiModelOf(n))
		}
		return
	}
	if x.api == Anthropic {
		x.fail(&apiError{kind: "not_found", message: "model: " + id})
	} else {
		x.fail(&apiError{kind: "not_found", param: "model", code: "model_not_found", message: fmt.Sprintf("The model '%s' does not exist", id)})
	}
}

func (s *Server) models() []string {
	if len(s.script.Models) > 0 {
		return s.script.Models
	}
	return DefaultModels
}

type anthModelList struct {
	Data    []anthModel `json:"data"`
	HasMore bool        `json:"has_more"`
	FirstID *string     `json:"first_id"`
	LastID  *string     `json:"last_id"`
}

type anthModel struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
}

func anthModelOf(name string) anthModel {
	return anthModel{Type: "model", ID: name, DisplayName: name, CreatedAt: time.Unix(Created, 0).UTC().Format(time.RFC3339)}
}

type openaiModelList struct {
	Object string        `json:"object"`
	Data   []openaiModel `json:"data"`
}

type openaiModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func openaiModelOf(name string) openaiModel {
	return openaiModel{ID: name, Object: "model", Created: Created, OwnedBy: "oz0"}
}

func (x *exchange) countTokens() {
	if x.r.Header.Get("anthropic-version") == "" {
		x.fail(invalid("anthropic-version: header is required"))
		return
	}
	c, e := parseAnthropic(x.body, true)
	if e != nil {
		x.fail(e)
		return
	}
	n := c.inputTokens()
	// A rule that fixes input_tokens fixes the count too; counting uses up no times.
	if _, rule, _ := x.s.pick(c, false); rule != nil && rule.Reply.Usage != nil && rule.Reply.Usage.InputTokens >= 0 {
		n = rule.Reply.Usage.InputTokens
	}
	x.requestID(x.seed("count_tokens"))
	x.json(http.StatusOK, struct {
		InputTokens int `json:"input_tokens"`
	}{n})
}

// pick finds the first rule that matches c and has times left; take counts the answer.
// exhausted names the rules that matched but had no times left.
func (s *Server) pick(c *convo, take bool) (int, *Rule, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var exhausted []string
	for i := range s.script.Rules {
		r := &s.script.Rules[i]
		if !r.Match.matches(c) {
			continue
		}
		if r.Times > 0 && s.used[i] >= r.Times {
			exhausted = append(exhausted, fmt.Sprintf("%s has answered its %d time%s", ruleName(r, i), r.Times, plural(r.Times)))
			continue
		}
		if take {
			s.used[i]++
		}
		return i, r, exhausted
	}
	return -1, nil, exhausted
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// ruleName is how messages name rule i.
func ruleName(r *Rule, i int) string {
	if r.Name != "" {
		return fmt.Sprintf("rule %q", r.Name)
	}
	return fmt.Sprintf("rule %d", i+1)
}

// matches checks the cheap conditions first and the user message, which may be megabytes, last:
// with the user's pattern first, a 30 MB message was matched against every rule's pattern, ~0.3 s
// of CPU each, even where the rule's system prompt or tools ruled it out (issue 13).
func (m *Match) matches(c *convo) bool {
	if m.Model != nil && !m.Model.MatchString(c.model) {
		return false
	}
	if m.Tools != nil && !m.Tools.matchesTools(c.tools) {
		return false
	}
	if m.ToolResult != nil && c.toolResult != m.ToolResult.Want {
		return false
	}
	if m.System != nil && !m.System.MatchString(c.system) {
		return false
	}
	if m.ToolResult != nil && c.toolResult && m.ToolResult.Pattern != nil && !m.ToolResult.Pattern.MatchString(c.toolResultText) {
		return false
	}
	if m.User != nil && !m.User.MatchString(c.user) {
		return false
	}
	return true
}

// NoMatch is a request that no rule of the script answered.
type NoMatch struct {
	// Message is the 400's message: what the request was, why no rule answers it, the diff.
	Message string
	// Input is the script's input when the request's user message does not hold it (it was run on
	// another input); "" else.
	Input string
	// Rule is the rule nearest the request, when it differs from it in what it asks (the input
	// aside); Diff the lines of that difference, as oz0 job replay prints them.
	Rule string
	Diff []string
}

// noMatch is the error for a request no rule answers: it says why, for the test's author.
func (x *exchange) noMatch(c *convo, exhausted []string) *apiError {
	e, nm := x.noMatchError(c, exhausted)
	if x.s.OnNoMatch != nil {
		x.s.OnNoMatch(nm)
	}
	return e
}

func (x *exchange) noMatchError(c *convo, exhausted []string) (*apiError, NoMatch) {
	var nm NoMatch
	var b strings.Builder
	fmt.Fprintf(&b, "oz0 fake model: no rule of script %s matches this request", x.s.script.Name)
	if c.hasUser {
		fmt.Fprintf(&b, " (last user message: %s", quoteShort(c.user, 200))
	} else {
		b.WriteString(" (no user message with text")
	}
	fmt.Fprintf(&b, "; system prompt: %s", quoteShort(c.system, 60))
	fmt.Fprintf(&b, "; model: %q", c.model)
	if len(c.tools) > 0 {
		fmt.Fprintf(&b, "; tools: %s", strings.Join(c.tools, ", "))
	} else {
		b.WriteString("; no tools")
	}
	if c.toolResult {
		b.WriteString("; ends with a tool result")
	}
	b.WriteString(")")
	if len(exhausted) > 0 {
		fmt.Fprintf(&b, "; %s", strings.Join(exhausted, "; "))
	}
	var rule string
	var diff []string
	if len(exhausted) == 0 { // else a rule matches: its times are the news
		rule, diff = x.s.nearestDiff(c)
	}
	// A recorded job's script: its rules match that job's input, which oz0 plugin test --script
	// sends unless --input gives another. The agent's user message holds the input, as it is or
	// wrapped in its prompt's words: one that holds it got the input, and something else changed.
	if in := x.s.script.Input; in != "" && c.hasUser && !strings.Contains(c.user, in) {
		nm.Input = in
		fmt.Fprintf(&b, ". The script answers the input %s: run with that input (oz0 plugin test --script without --input sends it)", quoteShort(in, 200))
		b.WriteString(", or add a rule that matches this one")
	} else if len(diff) > 0 {
		nm.Rule, nm.Diff = rule, diff
		b.WriteString(". Add a rule that matches it, or record the job again (oz0 job script) if the change is meant")
	} else {
		b.WriteString(". Add a rule that matches it, or a rule without match at the end of the script as a catch-all")
	}
	if len(diff) > 0 {
		fmt.Fprintf(&b, "; the request differs from %s, the nearest:\n%s", rule, strings.Join(diff, "\n"))
	} else {
		b.WriteString(".")
	}
	nm.Message = b.String()
	return invalid("%s", nm.Message), nm
}

func quoteShort(s string, n int) string {
	if s == "" {
		return "none"
	}
	if utf8.RuneCountInString(s) > n {
		r := []rune(s)
		return strconv.Quote(string(r[:n])) + "…"
	}
	return strconv.Quote(s)
}

// answer is a rule's reply resolved for a request.
type answer struct {
	model   string
	text    string
	hasText bool
	calls   []ToolCall
	stop    string // Anthropic's stop reason
	usage   Usage
	seed    []byte
}

func (x *exchange) complete() {
	var c *convo
	var e *apiError
	if x.api == Anthropic {
		if x.r.Header.Get("anthropic-version") == "" {
			x.fail(invalid("anthropic-version: header is required"))
			return
		}
		c, e = parseAnthropic(x.body, false)
	} else {
		c, e = parseOpenAI(x.body)
	}
	if e != nil {
		x.fail(e)
		return
	}
	x.stream = c.stream
	i, rule, exhausted := x.s.pick(c, true)
	if rule == nil {
		x.fail(x.noMatch(c, exhausted))
		return
	}
	x.rule = ruleName(rule, i)
	if rule.Name != "" {
		x.rule = rule.Name
	}
	reply := &rule.Reply
	if !sleep(x.r.Context(), reply.Delay) {
		x.set(499) // the client went away
		return
	}
	a := resolve(reply, c, x.seed(strconv.Itoa(i), rule.Name))
	x.requestID(a.seed)
	if re := reply.Error; re != nil {
		cut := re.Kind == "cut"
		if !cut && (!c.stream || re.After == nil) {
			x.fail(scriptedError(re, ruleName(rule, i), x.s.script.Name))
			return
		}
		if cut && !c.stream {
			x.cutBody(a, c)
			return
		}
	}
	if !c.stream {
		if x.api == Anthropic {
			x.json(http.StatusOK, anthropicMessage(a))
		} else {
			x.json(http.StatusOK, openaiCompletion(a))
		}
		return
	}
	var events []event
	if x.api == Anthropic {
		events = anthropicEvents(a)
	} else {
		events = openaiEvents(a, c.includeUsage)
	}
	x.writeStream(events, reply, ruleName(rule, i))
}

func resolve(r *Reply, c *convo, seed []byte) *answer {
	text := strings.ReplaceAll(r.Text, "${tool_result}", c.toolResultText)
	calls := r.ToolCalls
	if r.CallOfferedTool {
		if len(c.tools) == 0 {
			text = "(The script calls an offered tool, and the request offers none.)"
		} else {
			calls = []ToolCall{{Name: c.tools[0], Arguments: exampleArguments(c.toolSchemas[0])}}
		}
	}
	a := &answer{model: c.model, text: text, calls: calls, seed: seed}
	a.hasText = text != "" || len(calls) == 0
	a.stop = r.StopReason
	if a.stop == "" {
		a.stop = "end_turn"
		if len(calls) > 0 {
			a.stop = "tool_use"
		}
	}
	out := tokens(len(text))
	for _, tc := range calls {
		out += tokens(len(tc.Name)+len(tc.args())) + 8
	}
	a.usage = Usage{InputTokens: c.inputTokens(), OutputTokens: max(1, out)}
	if u := r.Usage; u != nil {
		if u.InputTokens >= 0 {
			a.usage.InputTokens = u.InputTokens
		}
		if u.OutputTokens >= 0 {
			a.usage.OutputTokens = u.OutputTokens
		}
		a.usage.CacheReadInputTokens = max(0, u.CacheReadInputTokens)
		a.usage.CacheCreationInputTokens = max(0, u.CacheCreationInputTokens)
	}
	return a
}

func (tc ToolCall) args() []byte {
	if len(tc.Arguments) == 0 {
		return []byte("{}")
	}
	return tc.Arguments
}

// cutBody sends the first half of a non-streamed answer and drops the connection.
func (x *exchange) cutBody(a *answer, c *convo) {
	var data []byte
	if x.api == Anthropic {
		data = mustMarshal(anthropicMessage(a))
	} else {
		data = mustMarshal(openaiCompletion(a))
	}
	h := x.w.Header()
	h.Set("content-type", "application/json")
	h.Set("content-length", strconv.Itoa(len(data)))
	x.w.WriteHeader(http.StatusOK)
	x.w.Write(data[:len(data)/2])
	http.NewResponseController(x.w).Flush()
	x.set(http.StatusOK)
	panic(http.ErrAbortHandler)
}

// event is one server-sent event; name is "" for OpenAI's data-only events.
type event struct {
	name string
	data []byte
}

func (ev event) write(w io.Writer) error {
	var b bytes.Buffer
	if ev.name != "" {
		b.WriteString("event: " + ev.name + "\n")
	}
	b.WriteString("data: ")
	b.Write(ev.data)
	b.WriteString("\n\n")
	_, err := w.Write(b.Bytes())
	return err
}

// writeStream sends events with the reply's stream_delay between them, failing or cutting the
// stream where its error says.
func (x *exchange) writeStream(events []event, reply *Reply, rule string) {
	stop, cut := -1, false
	if re := reply.Error; re != nil {
		cut = re.Kind == "cut"
		stop = 1
		if re.After != nil {
			stop = *re.After
		}
		stop = min(stop, len(events))
	}
	h := x.w.Header()
	h.Set("content-type", "text/event-stream; charset=utf-8")
	h.Set("cache-control", "no-cache")
	x.w.WriteHeader(http.StatusOK)
	x.set(http.StatusOK)
	rc := http.NewResponseController(x.w)
	rc.Flush()
	ctx := x.r.Context()
	for i, ev := range events {
		if i == stop {
			break
		}
		if i > 0 && !sleep(ctx, reply.StreamDelay) {
			return
		}
		if ev.write(x.w) != nil || rc.Flush() != nil {
			return
		}
	}
	if stop < 0 {
		return
	}
	if cut {
		panic(http.ErrAbortHandler)
	}
	if stop > 0 && !sleep(ctx, reply.StreamDelay) {
		return
	}
	e := scriptedError(reply.Error, rule, x.s.script.Name)
	ev := event{data: mustMarshal(e.body(x.api))}
	if x.api == Anthropic {
		ev.name = "error"
	}
	ev.write(x.w)
	rc.Flush()
}

// sleep waits for d, or until ctx is done (then false).
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// chunks splits text into deterministic pieces of a few words, as a model streams it: each
// piece after the first starts with a space when it can; none is longer than 32 bytes.
func chunks(text string) []string {
	var out []string
	start := 0
	for i, r := range text {
		n := i - start
		if n == 0 {
			continue
		}
		if (r == ' ' && n >= 8) || n+utf8.RuneLen(r) > 32 {
			out = append(out, text[start:i])
			start = i
		}
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// jsonChunks splits JSON text into pieces of at most 16 bytes, on rune boundaries.
func jsonChunks(s string) []string {
	var out []string
	start := 0
	for i, r := range s {
		if i-start+utf8.RuneLen(r) > 16 {
			out = append(out, s[start:i])
			start = i
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
