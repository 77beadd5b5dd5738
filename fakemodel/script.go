package fakemodel

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/schemas"
)

// SchemaName is the file name of the scripts' JSON Schema in package schemas; its $id is
// schemas.URL(SchemaName).
const SchemaName = "fake-model-script.schema.json"

// MaxScriptBytes is the largest script LoadScript and ParseScript accept.
const MaxScriptBytes = 4 << 20

// MaxDelay is the longest delay or stream_delay a script may ask for.
const MaxDelay = time.Hour

// DefaultModels is what GET /v1/models lists when a script names no models.
var DefaultModels = []string{"fake-model"}

// Script is a parsed fake model script: ordered rules, the first that matches a request answers
// it. A Script is not changed by a Server that serves it, so one may be served by several; the
// times each rule has answered are counted per Server.
type Script struct {
	Name   string   // shown in errors and logs: the file name, or "built-in"
	Models []string // what GET /v1/models lists; empty: DefaultModels
	// Input is the job input the script answers (a recorded job's): what oz0 plugin test
	// --script sends; the fake model does not read it.
	Input      string
	RequireKey string // when set, requests must carry this API key, or get 401
	Rules      []Rule
}

// Rule is one scripted answer and the requests it answers.
type Rule struct {
	Name  string // "" shows as "rule N" (1-based)
	Match Match
	Reply Reply
	Times int // the most times the rule answers; 0: no limit
	Line  int // the rule's line in the script; 0 when not from a file
}

// Match says which requests a rule answers; a nil field matches any request.
type Match struct {
	User       *regexp.Regexp // on the text of the last user message that has text
	System     *regexp.Regexp // on the system prompt
	Model      *regexp.Regexp // on the request's model
	Tools      *Cond          // whether the request offers tools (Pattern: on their names)
	ToolResult *Cond          // whether the conversation ends with a tool result (Pattern: on its text)
}

// Cond is a yes/no condition on a request, optionally with a regular expression.
type Cond struct {
	Want    bool           // whether the request must have it
	Pattern *regexp.Regexp // with Want: what one of them must match; nil: any
}

// Reply is a rule's answer.
type Reply struct {
	Text      string     // the answer's text; a json reply is here as compact JSON
	ToolCalls []ToolCall // after the text
	// CallOfferedTool: the answer calls the first tool the request offers, with arguments made
	// from its schema, in place of ToolCalls.
	CallOfferedTool bool
	StopReason      string // end_turn, max_tokens, stop_sequence or tool_use; "": from ToolCalls
	Usage           *Usage // nil: estimated
	Delay           time.Duration
	StreamDelay     time.Duration
	Error           *ErrorReply // answer with an error instead
}

// ToolCall is one tool call of a reply.
type ToolCall struct {
	Name      string
	Arguments json.RawMessage // a JSON object, compact; nil: {}
}

// Usage is the token counts a reply reports; a negative count is estimated (about 4 characters
// a token).
type Usage struct {
	InputTokens              int
	OutputTokens             int
	CacheReadInputTokens     int
	CacheCreationInputTokens int
}

// ErrorReply makes a rule answer with an error.
type ErrorReply struct {
	Kind       string // rate_limit, overloaded, server, invalid_request, authentication, permission, not_found, request_too_large or cut
	Status     int    // 0: the kind's status for the provider
	Message    string // "": a message like the provider's, naming the rule
	RetryAfter time.Duration
	// Limit is what a rate_limit error's headers say the provider allows a minute; 0: 50.
	Limit int
	// After, on a streamed request, is the number of the reply's events sent before the error
	// event or the cut; nil: the error is the HTTP response (for cut: after 1 event).
	After *int
}

// LoadScript reads and parses the script file at path. A script with problems gives a
// *diag.ReportError that lists them all; a file that cannot be read gives another error.
func LoadScript(path string) (*Script, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the fake model script %s: %w", path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, fmt.Errorf("cannot read the fake model script %s: it is a directory", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxScriptBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read the fake model script %s: %w", path, err)
	}
	return ParseScript(path, data)
}

// ParseScript parses a script; name is what errors and logs call it. A script with problems gives
// a *diag.ReportError that lists them all, each at its line and column. It never panics.
func ParseScript(name string, data []byte) (*Script, error) {
	if name == "" {
		name = "script"
	}
	fail := func(ds []diag.Diagnostic) (*Script, error) {
		for i := range ds {
			ds[i].File = name
		}
		return nil, diag.Errorf(ds, "the fake model script %s", name)
	}
	if len(data) > MaxScriptBytes {
		return fail([]diag.Diagnostic{{Line: 1, Col: 1, Severity: diag.Error, Rule: diag.YAMLLimits,
			Message: fmt.Sprintf("the script is larger than %d MiB; a fake model script is a few rules", MaxScriptBytes>>20)}})
	}
	root, problems := schemas.ParseYAML(data)
	if len(problems) > 0 || root == nil {
		if len(problems) == 0 {
			problems = []diag.Diagnostic{{Line: 1, Col: 1, Severity: diag.Error, Rule: diag.YAMLSyntax, Message: "the script is not YAML"}}
		}
		return fail(problems)
	}
	v, problems := schemas.DecodeYAML(SchemaName, root)
	p := &parser{root: root, bad: map[string]bool{}}
	for _, pr := range problems {
		p.bad[pr.Pointer] = true
	}
	s := &Script{Name: name}
	doc, _ := v.(map[string]any)
	if doc != nil {
		p.script(s, doc)
	}
	problems = append(problems, p.problems...)
	if len(problems) > 0 {
		return fail(problems)
	}
	return s, nil
}

//go:embed default.yaml
var defaultYAML []byte

// DefaultScript returns the built-in script, named "built-in": it sorts the byo-agent template's
// support tickets by keywords so the guide works offline, and answers anything else with a short
// text that says how to script the fake model. Each call returns a new Script.
func DefaultScript() *Script {
	s, err := ParseScript("built-in", defaultYAML)
	if err != nil {
		panic("fakemodel: the built-in script is invalid: " + err.Error())
	}
	return s
}

// DefaultScriptYAML returns the text of the built-in script, a starting point for one's own.
func DefaultScriptYAML() []byte { return bytes.Clone(defaultYAML) }

type parser struct {
	root     *yaml.Node
	bad      map[string]bool // JSON pointers the schema already reported
	problems []diag.Diagnostic
}

// problem reports msg at the value at path (or its nearest ancestor).
func (p *parser) problem(path []string, msg string) {
	line, col := 1, 1
	for i := len(path); i >= 0; i-- {
		if _, n := schemas.Locate(p.root, path[:i]...); n != nil && n.Line > 0 {
			line, col = n.Line, n.Column
			break
		}
	}
	p.problems = append(p.problems, diag.Diagnostic{Line: line, Col: col, Severity: diag.Error, Rule: diag.InvalidValue, Pointer: schemas.Pointer(path...), Message: msg})
}

func (p *parser) reported(path []string) bool { return p.bad[schemas.Pointer(path...)] }

func (p *parser) script(s *Script, doc map[string]any) {
	if models, ok := doc["models"].([]any); ok {
		for _, m := range models {
			if m, ok := m.(string); ok {
				s.Models = append(s.Models, m)
			}
		}
	}
	s.RequireKey, _ = doc["require_key"].(string)
	s.Input, _ = doc["input"].(string)
	rules, _ := doc["rules"].([]any)
	names := map[string]int{}
	for i, r := range rules {
		rm, ok := r.(map[string]any)
		if !ok {
			continue
		}
		path := []string{"rules", strconv.Itoa(i)}
		rule := Rule{}
		if _, n := schemas.Locate(p.root, path...); n != nil {
			rule.Line = n.Line
		}
		if name, ok := rm["name"].(string); ok {
			rule.Name = name
			if first, dup := names[name]; dup {
				p.problem(append(path, "name"), fmt.Sprintf("rule name `%s` is used twice (first on line %d); names must be unique", name, first))
			} else {
				names[name] = rule.Line
			}
		}
		if t, ok := intOf(rm["times"]); ok {
			rule.Times = t
		}
		if m, ok := rm["match"].(map[string]any); ok {
			rule.Match = p.match(append(path, "match"), m)
		}
		if rp, ok := rm["reply"].(map[string]any); ok {
			rule.Reply = p.reply(append(path, "reply"), rp)
		}
		s.Rules = append(s.Rules, rule)
	}
}

func (p *parser) match(path []string, m map[string]any) Match {
	var out Match
	out.User = p.regex(path, "user", m)
	out.System = p.regex(path, "system", m)
	out.Model = p.regex(path, "model", m)
	out.Tools = p.cond(path, "tools", m)
	out.ToolResult = p.cond(path, "tool_result", m)
	return out
}

func (p *parser) regex(path []string, key string, m map[string]any) *regexp.Regexp {
	s, ok := m[key].(string)
	at := append(append([]string{}, path...), key)
	if !ok || p.reported(at) {
		return nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "error parsing regexp: ")
		p.problem(at, fmt.Sprintf("`%s` is not a valid regular expression (Go RE2 syntax): %s", key, msg))
		return nil
	}
	return re
}

func (p *parser) cond(path []string, key string, m map[string]any) *Cond {
	switch v := m[key].(type) {
	case bool:
		return &Cond{Want: v}
	case string:
		if re := p.regex(path, key, m); re != nil {
			return &Cond{Want: true, Pattern: re}
		}
	}
	return nil
}

func (p *parser) duration(path []string, key string, m map[string]any) time.Duration {
	s, ok := m[key].(string)
	at := append(append([]string{}, path...), key)
	if !ok || p.reported(at) {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		p.problem(at, fmt.Sprintf("`%s` must be a duration such as 20ms, 2s or 1m30s, not `%s`", key, s))
		return 0
	}
	if d > MaxDelay {
		p.problem(at, fmt.Sprintf("`%s` must be at most %s, not %s", key, MaxDelay, s))
		return 0
	}
	return d
}

func (p *parser) reply(path []string, m map[string]any) Reply {
	var out Reply
	if t, ok := m["text"].(string); ok {
		out.Text = t
	}
	if _, ok := m["json"]; ok {
		at := append(append([]string{}, path...), "json")
		if raw, err := p.jsonAt(at); err == nil {
			out.Text = string(raw)
		} else {
			p.problem(at, fmt.Sprintf("`json` cannot be sent as JSON: %v", err))
		}
	}
	if tc, ok := m["tool_call"].(map[string]any); ok {
		out.ToolCalls = append(out.ToolCalls, p.toolCall(append(append([]string{}, path...), "tool_call"), tc))
	}
	if tcs, ok := m["tool_calls"].([]any); ok {
		for i, tc := range tcs {
			if tc, ok := tc.(map[string]any); ok {
				out.ToolCalls = append(out.ToolCalls, p.toolCall(append(append([]string{}, path...), "tool_calls", strconv.Itoa(i)), tc))
			}
		}
	}
	out.CallOfferedTool, _ = m["call_offered_tool"].(bool)
	out.StopReason, _ = m["stop_reason"].(string)
	if u, ok := m["usage"].(map[string]any); ok {
		count := func(k string, def int) int {
			if n, ok := intOf(u[k]); ok {
				return n
			}
			return def
		}
		out.Usage = &Usage{
			InputTokens:              count("input_tokens", -1),
			OutputTokens:             count("output_tokens", -1),
			CacheReadInputTokens:     count("cache_read_input_tokens", 0),
			CacheCreationInputTokens: count("cache_creation_input_tokens", 0),
		}
	}
	out.Delay = p.duration(path, "delay", m)
	out.StreamDelay = p.duration(path, "stream_delay", m)
	if e, ok := m["error"].(map[string]any); ok {
		out.Error = p.errorReply(append(append([]string{}, path...), "error"), e)
	}
	return out
}

func (p *parser) toolCall(path []string, m map[string]any) ToolCall {
	tc := ToolCall{Arguments: json.RawMessage("{}")}
	tc.Name, _ = m["name"].(string)
	if _, ok := m["arguments"].(map[string]any); ok {
		at := append(append([]string{}, path...), "arguments")
		if raw, err := p.jsonAt(at); err == nil {
			tc.Arguments = raw
		} else {
			p.problem(at, fmt.Sprintf("`arguments` cannot be sent as JSON: %v", err))
		}
	}
	return tc
}

func (p *parser) errorReply(path []string, m map[string]any) *ErrorReply {
	e := &ErrorReply{}
	e.Kind, _ = m["kind"].(string)
	if st, ok := intOf(m["status"]); ok {
		e.Status = st
		if e.Kind == "" {
			e.Kind = kindOfStatus(st)
		}
	}
	if e.Kind == "cut" && e.Status != 0 {
		p.problem(append(append([]string{}, path...), "status"), "`status` does not apply to kind cut: the connection drops, with no status to send")
	}
	e.Message, _ = m["message"].(string)
	e.RetryAfter = p.duration(path, "retry_after", m)
	e.Limit, _ = intOf(m["limit"])
	if n, ok := intOf(m["after"]); ok {
		e.After = &n
	}
	return e
}

// jsonAt renders the YAML value at path as compact JSON, keeping the order of mapping keys.
func (p *parser) jsonAt(path []string) (json.RawMessage, error) {
	_, n := schemas.Locate(p.root, path...)
	if n == nil {
		return nil, errors.New("not found")
	}
	return schemas.JSON(n)
}

func intOf(v any) (int, bool) {
	switch v := v.(type) {
	case json.Number:
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || n > 1<<31 || n < -(1<<31) {
			return 0, false
		}
		return int(n), true
	case float64:
		if v == float64(int(v)) && v < 1<<31 && v > -(1<<31) {
			return int(v), true
		}
	}
	return 0, false
}
