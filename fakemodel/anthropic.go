package fakemodel

import (
	"encoding/json"
	"strconv"
)

// Anthropic's Messages API wire format: a Message, and the server-sent events of a stream.

type anthMessage struct {
	ID           string    `json:"id"`
	Type         string    `json:"type"`
	Role         string    `json:"role"`
	Model        string    `json:"model"`
	Content      []any     `json:"content"`
	StopReason   *string   `json:"stop_reason"`
	StopSequence *string   `json:"stop_sequence"`
	Usage        anthUsage `json:"usage"`
}

type anthUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

type anthTextBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type anthToolUseBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

func (a *answer) messageID() string { return "msg_01" + ident(a.seed, "msg", 22) }

func (a *answer) toolUseID(i int) string {
	return "toolu_01" + ident(a.seed, "toolu"+strconv.Itoa(i), 22)
}

func (a *answer) anthUsage(output int) anthUsage {
	return anthUsage{
		InputTokens:              a.usage.InputTokens,
		CacheCreationInputTokens: a.usage.CacheCreationInputTokens,
		CacheReadInputTokens:     a.usage.CacheReadInputTokens,
		OutputTokens:             output,
	}
}

func anthropicMessage(a *answer) anthMessage {
	m := anthMessage{ID: a.messageID(), Type: "message", Role: "assistant", Model: a.model, Content: []any{},
		StopReason: &a.stop, Usage: a.anthUsage(a.usage.OutputTokens)}
	if a.hasText {
		m.Content = append(m.Content, anthTextBlock{Type: "text", Text: a.text})
	}
	for i, tc := range a.calls {
		m.Content = append(m.Content, anthToolUseBlock{Type: "tool_use", ID: a.toolUseID(i), Name: tc.Name, Input: tc.args()})
	}
	return m
}

type anthBlockStart struct {
	Type         string `json:"type"`
	Index        int    `json:"index"`
	ContentBlock any    `json:"content_block"`
}

type anthBlockDelta struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	Delta any    `json:"delta"`
}

type anthTextDelta struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type anthJSONDelta struct {
	Type        string `json:"type"`
	PartialJSON string `json:"partial_json"`
}

type anthBlockStop struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

type anthMessageStart struct {
	Type    string      `json:"type"`
	Message anthMessage `json:"message"`
}

type anthMessageDelta struct {
	Type  string `json:"type"`
	Delta struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	} `json:"delta"`
	Usage anthUsage `json:"usage"`
}

type anthType struct {
	Type string `json:"type"`
}

// anthropicEvents is the whole event sequence of a streamed answer, as the real API sends it:
// message_start, each content block (start, deltas, stop) with a ping after the first start,
// message_delta with the stop reason and the final usage, message_stop.
func anthropicEvents(a *answer) []event {
	var evs []event
	add := func(name string, v any) { evs = append(evs, event{name: name, data: mustMarshal(v)}) }

	start := anthropicMessage(a)
	start.Content = []any{}
	start.StopReason = nil
	start.Usage = a.anthUsage(min(1, a.usage.OutputTokens))
	add("message_start", anthMessageStart{Type: "message_start", Message: start})

	index := 0
	block := func(startBlock any, deltas []any) {
		add("content_block_start", anthBlockStart{Type: "content_block_start", Index: index, ContentBlock: startBlock})
		if index == 0 {
			add("ping", anthType{Type: "ping"})
		}
		for _, d := range deltas {
			add("content_block_delta", anthBlockDelta{Type: "content_block_delta", Index: index, Delta: d})
		}
		add("content_block_stop", anthBlockStop{Type: "content_block_stop", Index: index})
		index++
	}
	if a.hasText {
		var deltas []any
		for _, c := range chunks(a.text) {
			deltas = append(deltas, anthTextDelta{Type: "text_delta", Text: c})
		}
		block(anthTextBlock{Type: "text", Text: ""}, deltas)
	}
	for i, tc := range a.calls {
		deltas := []any{anthJSONDelta{Type: "input_json_delta", PartialJSON: ""}}
		for _, c := range jsonChunks(string(tc.args())) {
			deltas = append(deltas, anthJSONDelta{Type: "input_json_delta", PartialJSON: c})
		}
		block(anthToolUseBlock{Type: "tool_use", ID: a.toolUseID(i), Name: tc.Name, Input: json.RawMessage("{}")}, deltas)
	}

	md := anthMessageDelta{Type: "message_delta", Usage: a.anthUsage(a.usage.OutputTokens)}
	md.Delta.StopReason = a.stop
	add("message_delta", md)
	add("message_stop", anthType{Type: "message_stop"})
	return evs
}
