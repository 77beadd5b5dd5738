package fakemodel

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestFakeModelOpenAICompletion(t *testing.T) {
	_, ts := serve(t, textScript)
	r := openai(t, ts, openaiBody)
	if r.status != 200 || r.header.Get("content-type") != "application/json" || !strings.HasPrefix(r.header.Get("x-request-id"), "req_") {
		t.Fatalf("%d %v %s", r.status, r.header, r.body)
	}
	m := obj(t, r.body)
	id, _ := m["id"].(string)
	if !strings.HasPrefix(id, "chatcmpl-") || len(id) != len("chatcmpl-")+29 {
		t.Errorf("id %q", id)
	}
	want := `{"id":"ID","object":"chat.completion","created":1735689600,"model":"gpt-fake","choices":[{"index":0,"message":{"role":"assistant","content":"Hello! This is a fairly long answer, so that it streams in several pieces.","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":50,"completion_tokens":17,"total_tokens":67,"prompt_tokens_details":{"cached_tokens":5},"completion_tokens_details":{"reasoning_tokens":0}},"system_fingerprint":"fp_oz0fake"}`
	if got := strings.Replace(string(r.body), id, "ID", 1); got != want {
		t.Errorf("body\n got %s\nwant %s", got, want)
	}
	// The OpenAI SDK's base URL usually ends in /v1; without it works too.
	if r := do(t, "POST", ts.URL+"/chat/completions", openaiHeaders, openaiBody); r.status != 200 {
		t.Errorf("/chat/completions: %d %s", r.status, r.body)
	}
}

// chunks parses an OpenAI stream: the JSON chunks, and whether it ended with [DONE].
func openaiChunks(t *testing.T, data []byte) ([]map[string]any, []string, bool) {
	t.Helper()
	var out []map[string]any
	var raw []string
	done := false
	for _, e := range parseSSE(t, data) {
		if e.name != "" {
			t.Errorf("OpenAI events have no names: %q", e.name)
		}
		if done {
			t.Errorf("data after [DONE]: %s", e.data)
		}
		if e.data == "[DONE]" {
			done = true
			continue
		}
		out = append(out, obj(t, []byte(e.data)))
		raw = append(raw, e.data)
	}
	return out, raw, done
}

func TestFakeModelOpenAIStream(t *testing.T) {
	_, ts := serve(t, textScript)
	for _, includeUsage := range []bool{false, true} {
		body := openaiStream
		if includeUsage {
			body = openaiStreamUsage
		}
		r := openai(t, ts, body)
		if r.status != 200 || r.header.Get("content-type") != "text/event-stream; charset=utf-8" {
			t.Fatalf("%d %v", r.status, r.header)
		}
		chunks, raw, done := openaiChunks(t, r.body)
		if !done {
			t.Errorf("no [DONE]")
		}
		n := len(chunks)
		if includeUsage {
			n-- // the usage chunk
		}
		if n < 4 {
			t.Fatalf("%d chunks", n)
		}
		var text strings.Builder
		for i, c := range chunks[:n] {
			if get(c, "object") != "chat.completion.chunk" || get(c, "id") != get(chunks[0], "id") || get(c, "created") != json.Number("1735689600") || get(c, "model") != "gpt-fake" {
				t.Errorf("chunk %d: %s", i, raw[i])
			}
			u, has := c["usage"]
			if includeUsage != has || u != nil {
				t.Errorf("chunk %d with include_usage %v: %s", i, includeUsage, raw[i])
			}
			if len(get(c, "choices").([]any)) != 1 || get(c, "choices", 0, "index") != json.Number("0") {
				t.Errorf("chunk %d choices: %s", i, raw[i])
			}
			delta := get(c, "choices", 0, "delta").(map[string]any)
			finish := get(c, "choices", 0, "finish_reason")
			switch {
			case i == 0:
				if !strings.Contains(raw[i], `"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null`) {
					t.Errorf("first chunk: %s", raw[i])
				}
			case i == n-1:
				if len(delta) != 0 || finish != "stop" {
					t.Errorf("last chunk: %s", raw[i])
				}
			default:
				if finish != nil || len(delta) != 1 {
					t.Errorf("content chunk: %s", raw[i])
				}
				text.WriteString(delta["content"].(string))
			}
		}
		if text.String() != "Hello! This is a fairly long answer, so that it streams in several pieces." {
			t.Errorf("text %q", text.String())
		}
		if includeUsage {
			last := raw[len(raw)-1]
			if !strings.Contains(last, `"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":17,"total_tokens":67,"prompt_tokens_details":{"cached_tokens":5},"completion_tokens_details":{"reasoning_tokens":0}}}`) {
				t.Errorf("usage chunk: %s", last)
			}
		}
	}
}

func TestFakeModelOpenAIToolCalls(t *testing.T) {
	_, ts := serve(t, toolScript)
	body := `{"model":"gpt-fake","tools":[{"type":"function","function":{"name":"notify_team","parameters":{"type":"object"}}}],"messages":[{"role":"user","content":"x"}]}`
	r := openai(t, ts, body)
	m := obj(t, r.body)
	msg := get(m, "choices", 0, "message")
	if get(m, "choices", 0, "finish_reason") != "tool_calls" || get(msg, "content") != "Let me tell the team." || get(msg, "tool_calls", 0, "type") != "function" || get(msg, "tool_calls", 0, "function", "name") != "notify_team" {
		t.Fatalf("%s", r.body)
	}
	if get(msg, "tool_calls", 0, "function", "arguments") != `{"team":"billing","summary":"I was charged twice for my order","urgent":true,"n":2}` {
		t.Errorf("arguments %v", get(msg, "tool_calls", 0, "function", "arguments"))
	}
	if id, _ := get(msg, "tool_calls", 0, "id").(string); !strings.HasPrefix(id, "call_") || len(id) != 29 {
		t.Errorf("call id %q", id)
	}

	r = openai(t, ts, strings.Replace(body, `"model":"gpt-fake",`, `"model":"gpt-fake","stream":true,`, 1))
	chunks, raw, _ := openaiChunks(t, r.body)
	var args strings.Builder
	sawStart := false
	for i, c := range chunks {
		tc := get(c, "choices", 0, "delta", "tool_calls", 0)
		if tc == nil {
			continue
		}
		if get(tc, "id") != nil {
			if sawStart || get(tc, "index") != json.Number("0") || get(tc, "type") != "function" || get(tc, "function", "name") != "notify_team" || get(tc, "function", "arguments") != "" {
				t.Errorf("tool call start: %s", raw[i])
			}
			sawStart = true
			continue
		}
		if !sawStart || get(tc, "function", "name") != nil || get(tc, "index") != json.Number("0") {
			t.Errorf("tool call fragment: %s", raw[i])
		}
		args.WriteString(get(tc, "function", "arguments").(string))
	}
	if args.String() != `{"team":"billing","summary":"I was charged twice for my order","urgent":true,"n":2}` {
		t.Errorf("arguments %q", args.String())
	}
	if get(chunks[len(chunks)-1], "choices", 0, "finish_reason") != "tool_calls" {
		t.Errorf("last chunk %s", raw[len(raw)-1])
	}

	// A tool message last: two calls, no text (content null).
	body = `{"model":"gpt-fake","stream":true,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"notify_team","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"done"}]}`
	r = openai(t, ts, body)
	chunks, raw, _ = openaiChunks(t, r.body)
	if !strings.Contains(raw[0], `"delta":{"role":"assistant","content":null,"refusal":null}`) {
		t.Errorf("first chunk %s", raw[0])
	}
	var idx []string
	for _, c := range chunks {
		if tc := get(c, "choices", 0, "delta", "tool_calls", 0); tc != nil && get(tc, "id") != nil {
			idx = append(idx, string(get(tc, "index").(json.Number))+":"+get(tc, "function", "name").(string))
		}
	}
	if strings.Join(idx, " ") != "0:a 1:b" {
		t.Errorf("tool call starts %v", idx)
	}
}

func TestFakeModelOpenAIValidation(t *testing.T) {
	_, ts := serve(t, textScript)
	for _, tc := range []struct {
		name       string
		body, want string
	}{
		{"no model", `{"messages":[{"role":"user","content":"x"}]}`, `{"error":{"message":"you must provide a model parameter","type":"invalid_request_error","param":null,"code":null}}`},
		{"no messages", `{"model":"m"}`, `{"error":{"message":"Missing required parameter: 'messages'.","type":"invalid_request_error","param":"messages","code":"missing_required_parameter"}}`},
		{"empty messages", `{"model":"m","messages":[]}`, `{"error":{"message":"Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.","type":"invalid_request_error","param":"messages","code":"empty_array"}}`},
		{"unknown role", `{"model":"m","messages":[{"role":"robot","content":"x"}]}`, `{"error":{"message":"Invalid value: 'robot'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.","type":"invalid_request_error","param":"messages.[0].role","code":"invalid_value"}}`},
		{"stream_options without stream", `{"model":"m","stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`, `{"error":{"message":"The 'stream_options' parameter is only allowed when 'stream' is enabled.","type":"invalid_request_error","param":"stream_options","code":"invalid_value"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := openai(t, ts, tc.body)
			if r.status != 400 || string(r.body) != tc.want {
				t.Errorf("%s:\n got %d %s\nwant %s", tc.body, r.status, r.body, tc.want)
			}
		})
	}
}

func TestFakeModelOpenAIModels(t *testing.T) {
	_, ts := serve(t, textScript)
	r := do(t, "GET", ts.URL+"/v1/models", openaiHeaders, "")
	if r.status != 200 || string(r.body) != `{"object":"list","data":[{"id":"fake-model","object":"model","created":1735689600,"owned_by":"oz0"}]}` {
		t.Errorf("models: %d %s", r.status, r.body)
	}
	r = do(t, "GET", ts.URL+"/v1/models/fake-model", nil, "")
	if string(r.body) != `{"id":"fake-model","object":"model","created":1735689600,"owned_by":"oz0"}` {
		t.Errorf("model: %s", r.body)
	}
	r = do(t, "GET", ts.URL+"/v1/models/gpt-5", nil, "")
	if r.status != 404 || string(r.body) != `{"error":{"message":"The model 'gpt-5' does not exist","type":"invalid_request_error","param":"model","code":"model_not_found"}}` {
		t.Errorf("unknown model: %d %s", r.status, r.body)
	}
}
