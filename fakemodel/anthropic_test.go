package fakemodel

import (
	"encoding/json"
	"strings"
	"testing"
)

const textScript = `
rules:
  - name: hello
    reply:
      text: "Hello! This is a fairly long answer, so that it streams in several pieces."
      usage: {input_tokens: 42, output_tokens: 17, cache_read_input_tokens: 5, cache_creation_input_tokens: 3}
`

func TestFakeModelAnthropicMessage(t *testing.T) {
	_, ts := serve(t, textScript)
	r := anthropic(t, ts, anthBody)
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if ct := r.header.Get("content-type"); ct != "application/json" {
		t.Errorf("content-type %q", ct)
	}
	if !strings.HasPrefix(r.header.Get("request-id"), "req_01") {
		t.Errorf("request-id %q", r.header.Get("request-id"))
	}
	want := `{"id":"ID","type":"message","role":"assistant","model":"claude-fake-1","content":[{"type":"text","text":"Hello! This is a fairly long answer, so that it streams in several pieces."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":42,"cache_creation_input_tokens":3,"cache_read_input_tokens":5,"output_tokens":17}}`
	m := obj(t, r.body)
	id, _ := m["id"].(string)
	if !strings.HasPrefix(id, "msg_01") || len(id) != len("msg_01")+22 {
		t.Errorf("id %q", id)
	}
	if got := strings.Replace(string(r.body), id, "ID", 1); got != want {
		t.Errorf("body\n got %s\nwant %s", got, want)
	}
}

func TestFakeModelAnthropicStreamText(t *testing.T) {
	_, ts := serve(t, textScript)
	r := anthropic(t, ts, anthStream)
	if r.status != 200 || r.readErr != nil {
		t.Fatalf("status %d, %v: %s", r.status, r.readErr, r.body)
	}
	if ct := r.header.Get("content-type"); ct != "text/event-stream; charset=utf-8" {
		t.Errorf("content-type %q", ct)
	}
	evs := parseSSE(t, r.body)
	var seq []string
	var text strings.Builder
	deltas := 0
	for i, e := range evs {
		m := obj(t, []byte(e.data))
		if m["type"] != e.name {
			t.Errorf("event %d: %s has data type %v", i, e.name, m["type"])
		}
		if len(seq) == 0 || seq[len(seq)-1] != e.name {
			seq = append(seq, e.name)
		}
		switch e.name {
		case "message_start":
			msg := get(m, "message")
			for k, want := range map[string]any{"type": "message", "role": "assistant", "model": "claude-fake-1", "stop_reason": nil, "stop_sequence": nil} {
				if got := get(msg, k); got != want {
					t.Errorf("message_start %s = %v, want %v", k, got, want)
				}
			}
			if c, ok := get(msg, "content").([]any); !ok || len(c) != 0 {
				t.Errorf("message_start content %v", get(msg, "content"))
			}
			if !strings.HasPrefix(get(msg, "id").(string), "msg_01") {
				t.Errorf("message id %v", get(msg, "id"))
			}
			if u := get(msg, "usage"); get(u, "input_tokens") != json.Number("42") || get(u, "output_tokens") != json.Number("1") || get(u, "cache_read_input_tokens") != json.Number("5") {
				t.Errorf("message_start usage %v", u)
			}
		case "content_block_start":
			if get(m, "index") != json.Number("0") || get(m, "content_block", "type") != "text" || get(m, "content_block", "text") != "" {
				t.Errorf("content_block_start %s", e.data)
			}
		case "content_block_delta":
			deltas++
			if get(m, "delta", "type") != "text_delta" || get(m, "index") != json.Number("0") {
				t.Errorf("delta %s", e.data)
			}
			text.WriteString(get(m, "delta", "text").(string))
		case "message_delta":
			if get(m, "delta", "stop_reason") != "end_turn" || get(m, "delta", "stop_sequence") != nil {
				t.Errorf("message_delta %s", e.data)
			}
			if u := get(m, "usage"); get(u, "output_tokens") != json.Number("17") || get(u, "input_tokens") != json.Number("42") || get(u, "cache_creation_input_tokens") != json.Number("3") {
				t.Errorf("message_delta usage %v", u)
			}
		}
	}
	if got, want := strings.Join(seq, " "), "message_start content_block_start ping content_block_delta content_block_stop message_delta message_stop"; got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
	if deltas < 3 {
		t.Errorf("the text came in %d deltas, want several", deltas)
	}
	if text.String() != "Hello! This is a fairly long answer, so that it streams in several pieces." {
		t.Errorf("text %q", text.String())
	}
}

const toolScript = `
rules:
  - match: {tool_result: false}
    reply:
      text: "Let me tell the team."
      tool_call:
        name: notify_team
        arguments: {team: billing, summary: "I was charged twice for my order", urgent: true, n: 2}
  - reply:
      tool_calls:
        - {name: a}
        - {name: b, arguments: {x: [1, 2.5, null]}}
`

func TestFakeModelAnthropicToolUse(t *testing.T) {
	_, ts := serve(t, toolScript)
	body := `{"model":"m","max_tokens":10,"tools":[{"name":"notify_team","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"x"}]}`
	r := anthropic(t, ts, body)
	m := obj(t, r.body)
	if get(m, "stop_reason") != "tool_use" || get(m, "content", 0, "type") != "text" || get(m, "content", 1, "type") != "tool_use" || get(m, "content", 1, "name") != "notify_team" {
		t.Fatalf("message %s", r.body)
	}
	if id, _ := get(m, "content", 1, "id").(string); !strings.HasPrefix(id, "toolu_01") || len(id) != 30 {
		t.Errorf("tool_use id %q", id)
	}
	if !strings.Contains(string(r.body), `"input":{"team":"billing","summary":"I was charged twice for my order","urgent":true,"n":2}`) {
		t.Errorf("input not in script order: %s", r.body)
	}

	// Streamed: the same blocks, the input in partial_json pieces.
	r = anthropic(t, ts, strings.Replace(body, `"max_tokens":10,`, `"max_tokens":10,"stream":true,`, 1))
	evs := parseSSE(t, r.body)
	var partial strings.Builder
	pieces := 0
	var startTool string
	for _, e := range evs {
		m := obj(t, []byte(e.data))
		if e.name == "content_block_start" && get(m, "index") == json.Number("1") {
			startTool = e.data
		}
		if e.name == "content_block_delta" && get(m, "index") == json.Number("1") {
			if get(m, "delta", "type") != "input_json_delta" {
				t.Errorf("tool delta %s", e.data)
			}
			partial.WriteString(get(m, "delta", "partial_json").(string))
			pieces++
		}
		if e.name == "message_delta" && get(m, "delta", "stop_reason") != "tool_use" {
			t.Errorf("message_delta %s", e.data)
		}
	}
	if got := startTool; !strings.HasPrefix(got, `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01`) || !strings.HasSuffix(got, `","name":"notify_team","input":{}}}`) {
		t.Errorf("tool block start %s", got)
	}
	if partial.String() != `{"team":"billing","summary":"I was charged twice for my order","urgent":true,"n":2}` || pieces < 4 {
		t.Errorf("partial_json in %d pieces: %s", pieces, partial.String())
	}
	if got := names(evs); got != "message_start content_block_start ping content_block_delta content_block_delta content_block_stop content_block_start "+strings.Repeat("content_block_delta ", pieces)+"content_block_stop message_delta message_stop" {
		t.Errorf("events %s", got)
	}

	// A tool result last: the second rule, two calls and no text.
	body = `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"notify_team","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"done"}]}]}`
	r = anthropic(t, ts, body)
	m = obj(t, r.body)
	if c := get(m, "content").([]any); len(c) != 2 || get(c, 0, "name") != "a" || string(mustMarshal(get(c, 0, "input"))) != "{}" || string(mustMarshal(get(c, 1, "input"))) != `{"x":[1,2.5,null]}` {
		t.Errorf("content %s", r.body)
	}
	if get(m, "content", 0, "id") == get(m, "content", 1, "id") {
		t.Errorf("two tool uses with one id")
	}
}

func TestFakeModelAnthropicValidation(t *testing.T) {
	_, ts := serve(t, textScript)
	for _, tc := range []struct {
		name      string
		body, msg string
	}{
		{"no model", `{"max_tokens":1,"messages":[{"role":"user","content":"x"}]}`, "model: Field required"},
		{"no max_tokens", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, "max_tokens: Field required"},
		{"max_tokens zero", `{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"x"}]}`, "max_tokens: Input should be greater than or equal to 1"},
		{"no messages", `{"model":"m","max_tokens":1}`, "messages: Field required"},
		{"empty messages", `{"model":"m","max_tokens":1,"messages":[]}`, "messages: at least one message is required"},
		{"system role", `{"model":"m","max_tokens":1,"messages":[{"role":"system","content":"x"}]}`, "messages.0.role: Input should be 'user' or 'assistant'"},
		{"no content", `{"model":"m","max_tokens":1,"messages":[{"role":"user"}]}`, "messages.0.content: Field required"},
		{"stream not a boolean", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}],"stream":"yes"}`, "stream: Input should be a valid boolean"},
		{"not JSON", `not json`, "There was an error parsing the body of your request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := anthropic(t, ts, tc.body)
			m := obj(t, r.body)
			if r.status != 400 || get(m, "type") != "error" || get(m, "error", "type") != "invalid_request_error" || !strings.HasPrefix(get(m, "error", "message").(string), tc.msg) {
				t.Errorf("%s: %d %s", tc.body, r.status, r.body)
			}
		})
	}
	r := do(t, "POST", ts.URL+"/v1/messages", map[string]string{"x-api-key": "k"}, anthBody)
	if r.status != 400 || !strings.Contains(string(r.body), `"anthropic-version: header is required"`) {
		t.Errorf("no anthropic-version: %d %s", r.status, r.body)
	}
}

func TestFakeModelAnthropicCountTokensAndModels(t *testing.T) {
	_, ts := serve(t, "models: [claude-fake-1, claude-fake-2]\nrules:\n- match: {user: fixed}\n  reply: {text: x, usage: {input_tokens: 1234}}\n- reply: {text: y}\n")
	r := do(t, "POST", ts.URL+"/v1/messages/count_tokens", anthHeaders, `{"model":"m","messages":[{"role":"user","content":"one two three four five six seven eight"}]}`)
	if r.status != 200 || string(r.body) != `{"input_tokens":10}` {
		t.Errorf("count_tokens: %d %s", r.status, r.body)
	}
	r = do(t, "POST", ts.URL+"/v1/messages/count_tokens", anthHeaders, `{"model":"m","messages":[{"role":"user","content":"fixed"}]}`)
	if string(r.body) != `{"input_tokens":1234}` {
		t.Errorf("count_tokens with a rule's usage: %s", r.body)
	}
	r = do(t, "POST", ts.URL+"/v1/messages/count_tokens", anthHeaders, `{"model":"m"}`)
	if r.status != 400 || !strings.Contains(string(r.body), "messages: Field required") {
		t.Errorf("count_tokens without messages: %d %s", r.status, r.body)
	}

	r = do(t, "GET", ts.URL+"/v1/models", anthHeaders, "")
	want := `{"data":[{"type":"model","id":"claude-fake-1","display_name":"claude-fake-1","created_at":"2025-01-01T00:00:00Z"},{"type":"model","id":"claude-fake-2","display_name":"claude-fake-2","created_at":"2025-01-01T00:00:00Z"}],"has_more":false,"first_id":"claude-fake-1","last_id":"claude-fake-2"}`
	if r.status != 200 || string(r.body) != want {
		t.Errorf("models:\n got %d %s\nwant %s", r.status, r.body, want)
	}
	r = do(t, "GET", ts.URL+"/v1/models/claude-fake-2", map[string]string{"anthropic-version": "2023-06-01"}, "")
	if string(r.body) != `{"type":"model","id":"claude-fake-2","display_name":"claude-fake-2","created_at":"2025-01-01T00:00:00Z"}` {
		t.Errorf("model: %s", r.body)
	}
	r = do(t, "GET", ts.URL+"/v1/models/nope", map[string]string{"x-api-key": "k"}, "")
	if r.status != 404 || string(r.body) != `{"type":"error","error":{"type":"not_found_error","message":"model: nope"}}` {
		t.Errorf("unknown model: %d %s", r.status, r.body)
	}
}
