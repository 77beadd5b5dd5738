package conversation

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/gateway"
)

func openaiRequest(c *apiv1.Conversation, o object) {
	var tools []object
	_ = json.Unmarshal(o["tools"], &tools)
	for _, t := range tools {
		var f object
		_ = json.Unmarshal(t["function"], &f)
		if f == nil {
			c.Tools = append(c.Tools, apiv1.ToolDef{Name: t.str("type"), Description: compact(mustJSON(t))})
			continue
		}
		c.Tools = append(c.Tools, apiv1.ToolDef{Name: f.str("name"), Description: f.str("description"), Schema: f["parameters"]})
	}
	var functions []object // the API's older "functions"
	_ = json.Unmarshal(o["functions"], &functions)
	for _, f := range functions {
		c.Tools = append(c.Tools, apiv1.ToolDef{Name: f.str("name"), Description: f.str("description"), Schema: f["parameters"]})
	}
	var msgs []object
	_ = json.Unmarshal(o["messages"], &msgs)
	leading := true
	var system []string
	for _, m := range msgs {
		role := m.str("role")
		// The system and developer messages the conversation starts with are its system prompt,
		// as Anthropic's system is.
		if leading && (role == "system" || role == "developer") {
			if t, ok := textOf(m["content"]); ok {
				system = append(system, t)
				continue
			}
		}
		leading = false
		c.Messages = append(c.Messages, apiv1.Message{Role: role, Blocks: openaiBlocks(m)})
	}
	c.System = strings.Join(system, "\n\n")
}

// openaiBlocks reads a message: its content (a string or parts), its tool calls, and, for a
// tool's message, its result.
func openaiBlocks(m object) []apiv1.Block {
	var out []apiv1.Block
	if m.str("role") == "tool" {
		r := apiv1.Block{Kind: apiv1.BlockToolResult, ID: m.str("tool_call_id")}
		if t, ok := textOf(m["content"]); ok {
			r.Text = t
		} else {
			r.Text = compact(m["content"])
		}
		return []apiv1.Block{r}
	}
	out = append(out, openaiContent(m["content"])...)
	if r := m.str("refusal"); r != "" {
		out = append(out, apiv1.Block{Kind: apiv1.BlockText, Text: "(refusal) " + r})
	}
	var calls []object
	_ = json.Unmarshal(m["tool_calls"], &calls)
	for _, tc := range calls {
		var f object
		_ = json.Unmarshal(tc["function"], &f)
		out = append(out, apiv1.Block{Kind: apiv1.BlockToolCall, ID: tc.str("id"), Name: f.str("name"), Input: argumentsOf(f.str("arguments"))})
	}
	var fc object // the older function_call
	if json.Unmarshal(m["function_call"], &fc) == nil && fc != nil {
		out = append(out, apiv1.Block{Kind: apiv1.BlockToolCall, Name: fc.str("name"), Input: argumentsOf(fc.str("arguments"))})
	}
	return out
}

// argumentsOf is a tool call's arguments, compact when they are JSON, else as they came.
func argumentsOf(s string) string {
	if json.Valid([]byte(s)) {
		return compact(json.RawMessage(s))
	}
	return s
}

func openaiContent(raw json.RawMessage) []apiv1.Block {
	if len(raw) == 0 || string(raw) == "null" {
		return nil // an assistant message with tool calls only
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []apiv1.Block{{Kind: apiv1.BlockText, Text: s}}
	}
	var parts []object
	if json.Unmarshal(raw, &parts) != nil {
		return nil // null: an assistant message with tool calls only
	}
	var out []apiv1.Block
	for _, p := range parts {
		switch p.str("type") {
		case "text", "input_text":
			out = append(out, apiv1.Block{Kind: apiv1.BlockText, Text: p.str("text")})
		case "image_url":
			var u object
			_ = json.Unmarshal(p["image_url"], &u)
			url := u.str("url")
			if strings.HasPrefix(url, "data:") {
				mt, _, _ := strings.Cut(strings.TrimPrefix(url, "data:"), ";")
				url = mt + ", " + gateway.SizeText(len(url)) + " of base64"
			}
			out = append(out, apiv1.Block{Kind: apiv1.BlockImage, Text: url})
		default:
			out = append(out, other(mustJSON(p)))
		}
	}
	return out
}

// openaiAnswer reads a Chat Completions answer: its first choice, or an error.
func openaiAnswer(a *apiv1.Answer, body []byte) error {
	var o object
	if err := decode(body, &o); err != nil {
		return err
	}
	if e, ok := o["error"]; ok && string(e) != "null" {
		a.Error = openaiError(e)
		return nil
	}
	a.Model = o.str("model")
	var choices []object
	_ = json.Unmarshal(o["choices"], &choices)
	if len(choices) > 0 {
		var m object
		_ = json.Unmarshal(choices[0]["message"], &m)
		a.Blocks = openaiBlocks(m)
		a.StopReason = choices[0].str("finish_reason")
	}
	a.Usage = openaiUsage(o["usage"])
	return nil
}

func openaiError(raw json.RawMessage) string {
	var e object
	if json.Unmarshal(raw, &e) != nil {
		return compact(raw)
	}
	kind := e.str("type")
	if code := e.str("code"); code != "" {
		kind += "/" + code
	}
	return kind + ": " + e.str("message")
}

func openaiUsage(raw json.RawMessage) *apiv1.AnswerUsage {
	var u struct {
		Prompt     *int64 `json:"prompt_tokens"`
		Completion int64  `json:"completion_tokens"`
		Details    struct {
			Cached int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	}
	if json.Unmarshal(raw, &u) != nil || u.Prompt == nil {
		return nil
	}
	return &apiv1.AnswerUsage{InputTokens: *u.Prompt - u.Details.Cached, OutputTokens: u.Completion, CacheReadTokens: u.Details.Cached}
}

// openaiStream assembles a streamed Chat Completions answer from its chunks, as the SDK's
// accumulator does: the first choice's content, its tool calls by index with their arguments
// joined, its finish reason, and the usage chunk's counts.
func openaiStream(a *apiv1.Answer, events []sseEvent) {
	var text strings.Builder
	hasText := false
	calls := map[int]*apiv1.Block{}
	var order []int
	for _, ev := range events {
		if ev.data == "[DONE]" {
			continue
		}
		var o object
		if json.Unmarshal([]byte(ev.data), &o) != nil {
			continue
		}
		if e, ok := o["error"]; ok && string(e) != "null" {
			a.Error = openaiError(e)
			continue
		}
		if m := o.str("model"); m != "" {
			a.Model = m
		}
		if u := openaiUsage(o["usage"]); u != nil {
			a.Usage = u
		}
		var choices []object
		_ = json.Unmarshal(o["choices"], &choices)
		if len(choices) == 0 {
			continue
		}
		ch := choices[0]
		if r := ch.str("finish_reason"); r != "" {
			a.StopReason = r
		}
		var d object
		_ = json.Unmarshal(ch["delta"], &d)
		if s := d.str("content"); s != "" {
			text.WriteString(s)
			hasText = true
		}
		var tcs []object
		_ = json.Unmarshal(d["tool_calls"], &tcs)
		for _, tc := range tcs {
			var i int
			_ = json.Unmarshal(tc["index"], &i)
			b := calls[i]
			if b == nil {
				b = &apiv1.Block{Kind: apiv1.BlockToolCall}
				calls[i] = b
				order = append(order, i)
			}
			if id := tc.str("id"); id != "" {
				b.ID = id
			}
			var f object
			_ = json.Unmarshal(tc["function"], &f)
			b.Name += f.str("name")
			b.Input += f.str("arguments")
		}
	}
	if hasText {
		a.Blocks = append(a.Blocks, apiv1.Block{Kind: apiv1.BlockText, Text: text.String()})
	}
	sort.Ints(order)
	for _, i := range order {
		b := *calls[i]
		b.Input = argumentsOf(b.Input)
		a.Blocks = append(a.Blocks, b)
	}
}
