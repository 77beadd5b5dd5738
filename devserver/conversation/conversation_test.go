package conversation

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/gateway"
)

func blocks(bs ...apiv1.Block) []apiv1.Block { return bs }

func check(t *testing.T, what string, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}

// An Anthropic call with a system prompt in blocks, a tool offered, a tool call and its result in
// the history, answered with text and a tool call.
func TestAnthropic(t *testing.T) {
	ex := &gateway.Exchange{Method: "POST", Path: "/anthropic/v1/messages", Status: 200, Request: `{"model":"claude-x","max_tokens":100,
		"system":[{"type":"text","text":"You sort tickets."}],
		"tools":[{"name":"notify_team","description":"Tell a team.","input_schema":{"type":"object"}}],
		"messages":[{"role":"user","content":"charged twice"},
			{"role":"assistant","content":[{"type":"text","text":"Looking."},{"type":"tool_use","id":"tu_1","name":"notify_team","input":{"team":"billing"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu_1","content":[{"type":"text","text":"told"}],"is_error":true}]}]}`,
		Body: `{"id":"m1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Done."},{"type":"tool_use","id":"tu_2","name":"notify_team","input":{"team":"billing"}}],"stop_reason":"tool_use","usage":{"input_tokens":12,"output_tokens":5}}`}
	c := Of(ex, nil)
	if c.Format != "anthropic-messages" || c.Model != "claude-x" || c.System != "You sort tickets." || c.Settings != `{"max_tokens":100}` {
		t.Errorf("%+v", c)
	}
	check(t, "tools", c.Tools, []apiv1.ToolDef{{Name: "notify_team", Description: "Tell a team.", Schema: json.RawMessage(`{"type":"object"}`)}})
	check(t, "messages", c.Messages, []apiv1.Message{
		{Role: "user", Blocks: blocks(apiv1.Block{Kind: "text", Text: "charged twice"})},
		{Role: "assistant", Blocks: blocks(apiv1.Block{Kind: "text", Text: "Looking."}, apiv1.Block{Kind: "tool_call", ID: "tu_1", Name: "notify_team", Input: `{"team":"billing"}`})},
		{Role: "user", Blocks: blocks(apiv1.Block{Kind: "tool_result", ID: "tu_1", Text: "told", IsError: true})},
	})
	check(t, "answer", c.Answer, &apiv1.Answer{Status: 200, Model: "claude-x", StopReason: "tool_use",
		Blocks: blocks(apiv1.Block{Kind: "text", Text: "Done."}, apiv1.Block{Kind: "tool_call", ID: "tu_2", Name: "notify_team", Input: `{"team":"billing"}`}),
		Usage:  &apiv1.AnswerUsage{InputTokens: 12, OutputTokens: 5}})
}

// An Anthropic stream, cut into writes anywhere, assembled as the SDK assembles it.
func TestAnthropicStream(t *testing.T) {
	stream := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"lo\"}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"tu\",\"name\":\"f\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\" 1}\"}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":7}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	ex := &gateway.Exchange{Path: "/anthropic/v1/messages", Request: `{"model":"claude-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`, Status: 200, Streamed: true}
	for i := 0; i < len(stream); i += 37 {
		ex.Chunks = append(ex.Chunks, gateway.Chunk{Data: stream[i:min(i+37, len(stream))]})
	}
	c := Of(ex, nil)
	check(t, "answer", c.Answer, &apiv1.Answer{Status: 200, Streamed: true, Events: 9, Model: "claude-x", StopReason: "tool_use",
		Blocks: blocks(apiv1.Block{Kind: "text", Text: "Hello"}, apiv1.Block{Kind: "tool_call", ID: "tu", Name: "f", Input: `{"a":1}`}),
		Usage:  &apiv1.AnswerUsage{InputTokens: 10, OutputTokens: 7}})
	if !c.Stream {
		t.Error("the request asked for a stream")
	}
}

// An OpenAI call: the leading system message is the system prompt; a tool call and the tool's
// message; the answer.
func TestOpenAI(t *testing.T) {
	ex := &gateway.Exchange{Path: "/openai/chat/completions", Status: 200, Request: `{"model":"gpt-x","messages":[
		{"role":"system","content":"You sort tickets."},{"role":"user","content":[{"type":"text","text":"charged twice"}]},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"notify_team","arguments":"{\"team\": \"billing\"}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"told"}],
		"tools":[{"type":"function","function":{"name":"notify_team","description":"Tell a team.","parameters":{"type":"object"}}}]}`,
		Body: `{"model":"gpt-x-2025","choices":[{"index":0,"message":{"role":"assistant","content":"Done."},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":4}}}`}
	c := Of(ex, nil)
	if c.Format != "openai-chat" || c.System != "You sort tickets." || c.Settings != "" {
		t.Errorf("%+v", c)
	}
	check(t, "tools", c.Tools, []apiv1.ToolDef{{Name: "notify_team", Description: "Tell a team.", Schema: json.RawMessage(`{"type":"object"}`)}})
	check(t, "messages", c.Messages, []apiv1.Message{
		{Role: "user", Blocks: blocks(apiv1.Block{Kind: "text", Text: "charged twice"})},
		{Role: "assistant", Blocks: blocks(apiv1.Block{Kind: "tool_call", ID: "c1", Name: "notify_team", Input: `{"team":"billing"}`})},
		{Role: "tool", Blocks: blocks(apiv1.Block{Kind: "tool_result", ID: "c1", Text: "told"})},
	})
	check(t, "answer", c.Answer, &apiv1.Answer{Status: 200, Model: "gpt-x-2025", StopReason: "stop",
		Blocks: blocks(apiv1.Block{Kind: "text", Text: "Done."}), Usage: &apiv1.AnswerUsage{InputTokens: 16, OutputTokens: 3, CacheReadTokens: 4}})
}

// An OpenAI stream with a tool call whose arguments come in pieces; the metered usage wins over
// the answer's (the gateway hid the usage chunk it asked for).
func TestOpenAIStream(t *testing.T) {
	chunks := []string{
		`{"model":"gpt-x","choices":[{"index":0,"delta":{"role":"assistant","content":"Sor"}}]}`,
		`{"model":"gpt-x","choices":[{"index":0,"delta":{"content":"ting."}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"notify_team","arguments":""}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"team\":"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"billing\"}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`[DONE]`,
	}
	var s strings.Builder
	for _, c := range chunks {
		s.WriteString("data: " + c + "\n\n")
	}
	ex := &gateway.Exchange{Path: "/openai/v1/chat/completions", Request: `{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		Status: 200, Streamed: true, Chunks: []gateway.Chunk{{Data: s.String()}}, Usage: &gateway.Usage{InputTokens: 9, OutputTokens: 4}}
	c := Of(ex, nil)
	check(t, "answer", c.Answer, &apiv1.Answer{Status: 200, Streamed: true, Events: 7, Model: "gpt-x", StopReason: "tool_calls",
		Blocks: blocks(apiv1.Block{Kind: "text", Text: "Sorting."}, apiv1.Block{Kind: "tool_call", ID: "c1", Name: "notify_team", Input: `{"team":"billing"}`}),
		Usage:  &apiv1.AnswerUsage{InputTokens: 9, OutputTokens: 4}})
}

// A refusal: the gateway's answer, an error; a cut call says so; a models list is no
// conversation.
func TestRefusedCutAndNone(t *testing.T) {
	c := Of(&gateway.Exchange{Path: "/anthropic/v1/messages", Request: `{"messages":[{"role":"user","content":"hi"}]}`, Status: 429, Gateway: true,
		Body: `{"type":"error","error":{"type":"rate_limit_error","message":"oz0 gateway: limits.max_steps of 1 reached"}}`}, nil)
	if a := c.Answer; !a.Gateway || a.Error != "rate_limit_error: oz0 gateway: limits.max_steps of 1 reached" || len(a.Blocks) != 0 {
		t.Errorf("%+v", a)
	}
	c = Of(&gateway.Exchange{Path: "/openai/chat/completions", Request: `{"messages":[{"role":"user","content":"hi…[oz0: 3 MiB more not kept]"}]}`, Status: 200,
		Truncated: true, Cut: "the request is 10 MiB, over the 7 MiB kept of a request: 1 string longer than 4 MiB clipped"}, nil)
	if len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "Not kept whole: the request is 10 MiB") || c.Messages[0].Blocks[0].Text != "hi…[oz0: 3 MiB more not kept]" {
		t.Errorf("%+v", c)
	}
	c = Of(&gateway.Exchange{Path: "/openai/chat/completions", Request: `not json`, Status: 400, Body: "bad"}, nil)
	if len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "The request is not openai-chat JSON") || c.Answer.Blocks[0].Text != "bad" {
		t.Errorf("%+v", c)
	}
	if Of(&gateway.Exchange{Method: "GET", Path: "/anthropic/v1/models"}, nil) != nil {
		t.Error("a models list read as a conversation")
	}
}

// A key the request or the answer escapes ("sk\u002dant…"), which masking the kept bytes does not
// find, is masked in what the conversation shows decoded: texts, a tool call's input, settings,
// a tool's schema, the answer.
func TestEscapedSecretMasked(t *testing.T) {
	const key = "sk-ant-api03-Zq9vLx3mN8pR2tW7yB4cF6hJ1kD5gS0a"
	esc := strings.ReplaceAll(key, "-", `\u002d`)
	mask := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte(key), []byte("***")) }
	ex := &gateway.Exchange{Method: "POST", Path: "/anthropic/v1/messages", Status: 200, Request: `{"model":"claude-x","metadata":{"user_id":"` + esc + `"},
		"system":"the key is ` + esc + `",
		"tools":[{"name":"t","description":"` + esc + `","input_schema":{"type":"object","description":"` + esc + `"}}],
		"messages":[{"role":"user","content":"sk\u002dant\u002dapi03-Zq9vLx3mN8pR2tW7yB4cF6hJ1kD5gS0a"},
			{"role":"assistant","content":[{"type":"tool_use","id":"tu_1","name":"t","input":{"key":"` + esc + `"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu_1","content":[{"type":"other","x":"` + esc + `"}]}]}]}`,
		Body: `{"id":"m1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"` + esc + `"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`}
	clear, _ := json.Marshal(Of(ex, nil))
	if n := strings.Count(string(clear), key); n < 7 {
		t.Fatalf("unmasked, the key shows %d times decoded, want every place (the test's premise):\n%s", n, clear)
	}
	c := Of(ex, mask)
	got, _ := json.Marshal(c)
	if strings.Contains(string(got), key) || strings.Contains(string(got), esc) {
		t.Errorf("the key shows in the conversation:\n%s", got)
	}
	if c.Messages[0].Blocks[0].Text != "***" || c.Answer.Blocks[0].Text != "***" || c.Settings != `{"metadata":{"user_id":"***"}}` ||
		c.Messages[1].Blocks[0].Input != `{"key":"***"}` || string(c.Tools[0].Schema) != `{"type":"object","description":"***"}` {
		t.Errorf("masked: %s", got)
	}
}

// MaskExchange rewrites a kept request only where a secret shows once decoded; any other stays
// byte for byte as it was sent.
func TestMaskExchange(t *testing.T) {
	mask := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("hunter2-secret"), []byte("***")) }
	plain := "{\n  \"messages\": [{\"role\":\"user\",\"content\":\"caf\\u00e9\"}]\n}"
	ex := &gateway.Exchange{Request: plain, Body: `not json`}
	if MaskExchange(ex, mask) || ex.Request != plain || ex.Body != "not json" {
		t.Errorf("nothing to mask, yet: %v %q %q", MaskExchange(ex, mask), ex.Request, ex.Body)
	}
	ex = &gateway.Exchange{Request: `{"messages":[{"role":"user","content":"pw hunter2\u002dsecret, caf\u00e9"}]}`, Body: `{"x":"hunter2\u002Dsecret"}`}
	if !MaskExchange(ex, mask) || ex.Request != `{"messages":[{"role":"user","content":"pw ***, café"}]}` || ex.Body != `{"x":"***"}` {
		t.Errorf("escaped: %q %q", ex.Request, ex.Body)
	}
}
