package conversation

import (
	"encoding/json"
	"sort"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/gateway"
)

func anthropicRequest(c *apiv1.Conversation, o object) {
	if raw, ok := o["system"]; ok {
		if s, ok := textOf(raw); ok {
			c.System = s
		} else {
			c.System = compact(raw)
		}
	}
	var tools []object
	_ = json.Unmarshal(o["tools"], &tools)
	for _, t := range tools {
		d := apiv1.ToolDef{Name: t.str("name"), Description: t.str("description"), Schema: t["input_schema"]}
		if d.Name == "" || t.str("type") != "" && t.str("type") != "custom" {
			d.Description = compact(mustJSON(t)) // a server tool (web_search…): its definition
		}
		c.Tools = append(c.Tools, d)
	}
	var msgs []object
	_ = json.Unmarshal(o["messages"], &msgs)
	for _, m := range msgs {
		c.Messages = append(c.Messages, apiv1.Message{Role: m.str("role"), Blocks: anthropicBlocks(m["content"])})
	}
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// anthropicBlocks reads a message's content: a string, or content blocks.
func anthropicBlocks(raw json.RawMessage) []apiv1.Block {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []apiv1.Block{{Kind: apiv1.BlockText, Text: s}}
	}
	var blocks []json.RawMessage
	if json.Unmarshal(raw, &blocks) != nil {
		if len(raw) == 0 {
			return nil
		}
		return []apiv1.Block{other(raw)}
	}
	out := make([]apiv1.Block, 0, len(blocks))
	for _, b := range blocks {
		out = append(out, anthropicBlock(b))
	}
	return out
}

func anthropicBlock(raw json.RawMessage) apiv1.Block {
	var b object
	if json.Unmarshal(raw, &b) != nil {
		return other(raw)
	}
	switch b.str("type") {
	case "text":
		return apiv1.Block{Kind: apiv1.BlockText, Text: b.str("text")}
	case "thinking":
		return apiv1.Block{Kind: apiv1.BlockThinking, Text: b.str("thinking")}
	case "tool_use", "server_tool_use":
		return apiv1.Block{Kind: apiv1.BlockToolCall, ID: b.str("id"), Name: b.str("name"), Input: compact(b["input"])}
	case "tool_result":
		r := apiv1.Block{Kind: apiv1.BlockToolResult, ID: b.str("tool_use_id"), IsError: b.boolean("is_error")}
		if t, ok := textOf(b["content"]); ok {
			r.Text = t
		} else if len(b["content"]) > 0 {
			r.Text = compact(b["content"])
		}
		return r
	case "image":
		return apiv1.Block{Kind: apiv1.BlockImage, Text: imageOf(b)}
	}
	return other(raw)
}

// imageOf describes an image without its data: its type and size, or its URL.
func imageOf(b object) string {
	var src object
	_ = json.Unmarshal(b["source"], &src)
	if u := src.str("url"); u != "" {
		return u
	}
	return src.str("media_type") + ", " + gateway.SizeText(len(src.str("data"))) + " of base64"
}

// anthropicAnswer reads a Messages answer: a message, or an error.
func anthropicAnswer(a *apiv1.Answer, body []byte) error {
	var o object
	if err := decode(body, &o); err != nil {
		return err
	}
	if o.str("type") == "error" {
		var e object
		_ = json.Unmarshal(o["error"], &e)
		a.Error = e.str("type") + ": " + e.str("message")
		return nil
	}
	a.Model, a.StopReason = o.str("model"), o.str("stop_reason")
	a.Blocks = anthropicBlocks(o["content"])
	a.Usage = anthropicUsage(o["usage"], nil)
	return nil
}

func anthropicUsage(raw json.RawMessage, base *apiv1.AnswerUsage) *apiv1.AnswerUsage {
	var u struct {
		In    *int64 `json:"input_tokens"`
		Out   *int64 `json:"output_tokens"`
		Read  *int64 `json:"cache_read_input_tokens"`
		Write *int64 `json:"cache_creation_input_tokens"`
	}
	if json.Unmarshal(raw, &u) != nil || (u.In == nil && u.Out == nil) {
		return base
	}
	out := apiv1.AnswerUsage{}
	if base != nil {
		out = *base
	}
	set := func(dst *int64, v *int64) {
		if v != nil {
			*dst = *v
		}
	}
	set(&out.InputTokens, u.In)
	set(&out.OutputTokens, u.Out)
	set(&out.CacheReadTokens, u.Read)
	set(&out.CacheCreationTokens, u.Write)
	return &out
}

// anthropicStream assembles a streamed Messages answer from its events, as the SDK's accumulator
// does: blocks by index, their text and tool input from the deltas, the stop reason and usage
// from message_delta.
func anthropicStream(a *apiv1.Answer, events []sseEvent) {
	blocks := map[int]*apiv1.Block{}
	var order []int
	for _, ev := range events {
		var o object
		if json.Unmarshal([]byte(ev.data), &o) != nil {
			continue
		}
		typ := o.str("type")
		if typ == "" {
			typ = ev.name
		}
		var index int
		_ = json.Unmarshal(o["index"], &index)
		switch typ {
		case "message_start":
			var m object
			_ = json.Unmarshal(o["message"], &m)
			a.Model = m.str("model")
			a.Usage = anthropicUsage(m["usage"], a.Usage)
		case "content_block_start":
			b := anthropicBlock(o["content_block"])
			if b.Kind == apiv1.BlockToolCall {
				b.Input = "" // the deltas bring it
			}
			blocks[index] = &b
			order = append(order, index)
		case "content_block_delta":
			b := blocks[index]
			if b == nil {
				continue
			}
			var d object
			_ = json.Unmarshal(o["delta"], &d)
			switch d.str("type") {
			case "text_delta":
				b.Text += d.str("text")
			case "thinking_delta":
				b.Text += d.str("thinking")
			case "input_json_delta":
				b.Input += d.str("partial_json")
			}
		case "message_delta":
			var d object
			_ = json.Unmarshal(o["delta"], &d)
			if s := d.str("stop_reason"); s != "" {
				a.StopReason = s
			}
			a.Usage = anthropicUsage(o["usage"], a.Usage)
		case "error":
			var e object
			_ = json.Unmarshal(o["error"], &e)
			a.Error = e.str("type") + ": " + e.str("message")
		}
	}
	sort.Ints(order)
	for _, i := range order {
		b := *blocks[i]
		if b.Kind == apiv1.BlockToolCall {
			if b.Input == "" {
				b.Input = "{}"
			} else {
				b.Input = compact(json.RawMessage(b.Input))
			}
		}
		a.Blocks = append(a.Blocks, b)
	}
}
