package fakemodel

import (
	"encoding/json"
	"strconv"
)

// OpenAI's Chat Completions wire format: a chat.completion, and the chat.completion.chunk events
// of a stream.

// SystemFingerprint is the system_fingerprint of every OpenAI answer.
const SystemFingerprint = "fp_oz0fake"

type chatCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []chatChoice `json:"choices"`
	Usage             chatUsage    `json:"usage"`
	SystemFingerprint string       `json:"system_fingerprint"`
}

type chatChoice struct {
	Index        int         `json:"index"`
	Message      chatMessage `json:"message"`
	Logprobs     *struct{}   `json:"logprobs"`
	FinishReason string      `json:"finish_reason"`
}

type chatMessage struct {
	Role        string         `json:"role"`
	Content     *string        `json:"content"`
	Refusal     *string        `json:"refusal"`
	ToolCalls   []chatToolCall `json:"tool_calls,omitempty"`
	Annotations []any          `json:"annotations"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (a *answer) completionID() string { return "chatcmpl-" + ident(a.seed, "chatcmpl", 29) }

func (a *answer) callID(i int) string { return "call_" + ident(a.seed, "call"+strconv.Itoa(i), 24) }

// finishReason is OpenAI's name for the stop reason.
func (a *answer) finishReason() string {
	switch a.stop {
	case "tool_use":
		return "tool_calls"
	case "max_tokens":
		return "length"
	}
	return "stop"
}

// chatUsage counts cached input in prompt_tokens, as OpenAI does.
func (a *answer) chatUsage() chatUsage {
	var u chatUsage
	u.PromptTokens = a.usage.InputTokens + a.usage.CacheReadInputTokens + a.usage.CacheCreationInputTokens
	u.CompletionTokens = a.usage.OutputTokens
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	u.PromptTokensDetails.CachedTokens = a.usage.CacheReadInputTokens
	return u
}

func openaiCompletion(a *answer) chatCompletion {
	msg := chatMessage{Role: "assistant", Annotations: []any{}}
	if a.hasText {
		msg.Content = &a.text
	}
	for i, tc := range a.calls {
		msg.ToolCalls = append(msg.ToolCalls, chatToolCall{ID: a.callID(i), Type: "function",
			Function: chatFunction{Name: tc.Name, Arguments: string(tc.args())}})
	}
	return chatCompletion{
		ID: a.completionID(), Object: "chat.completion", Created: Created, Model: a.model,
		Choices:           []chatChoice{{Index: 0, Message: msg, FinishReason: a.finishReason()}},
		Usage:             a.chatUsage(),
		SystemFingerprint: SystemFingerprint,
	}
}

type chatChunk struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	SystemFingerprint string          `json:"system_fingerprint"`
	Choices           []chunkChoice   `json:"choices"`
	Usage             json.RawMessage `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int       `json:"index"`
	Delta        any       `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type roleDelta struct {
	Role    string  `json:"role"`
	Content *string `json:"content"`
	Refusal *string `json:"refusal"`
}

type contentDelta struct {
	Content string `json:"content"`
}

type toolCallsDelta struct {
	ToolCalls []toolCallDelta `json:"tool_calls"`
}

type toolCallDelta struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function functionDelta `json:"function"`
}

type functionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// openaiEvents is the whole chunk sequence of a streamed answer, as the real API sends it: the
// role first, the content in pieces, each tool call (id, type and name, then the arguments in
// pieces), a last chunk with the finish_reason; then, only with include_usage, a chunk with no
// choices and the usage (every other chunk then has "usage": null); then [DONE].
func openaiEvents(a *answer, includeUsage bool) []event {
	var evs []event
	id := a.completionID()
	var nullUsage json.RawMessage
	if includeUsage {
		nullUsage = json.RawMessage("null")
	}
	add := func(delta any, finish *string) {
		c := chatChunk{ID: id, Object: "chat.completion.chunk", Created: Created, Model: a.model, SystemFingerprint: SystemFingerprint,
			Choices: []chunkChoice{{Index: 0, Delta: delta, FinishReason: finish}}, Usage: nullUsage}
		evs = append(evs, event{data: mustMarshal(c)})
	}
	var content *string
	if a.hasText {
		empty := ""
		content = &empty
	}
	add(roleDelta{Role: "assistant", Content: content}, nil)
	if a.hasText {
		for _, c := range chunks(a.text) {
			add(contentDelta{Content: c}, nil)
		}
	}
	for i, tc := range a.calls {
		add(toolCallsDelta{ToolCalls: []toolCallDelta{{Index: i, ID: a.callID(i), Type: "function", Function: functionDelta{Name: tc.Name}}}}, nil)
		for _, c := range jsonChunks(string(tc.args())) {
			add(toolCallsDelta{ToolCalls: []toolCallDelta{{Index: i, Function: functionDelta{Arguments: c}}}}, nil)
		}
	}
	finish := a.finishReason()
	add(struct{}{}, &finish)
	if includeUsage {
		c := chatChunk{ID: id, Object: "chat.completion.chunk", Created: Created, Model: a.model, SystemFingerprint: SystemFingerprint,
			Choices: []chunkChoice{}, Usage: mustMarshal(a.chatUsage())}
		evs = append(evs, event{data: mustMarshal(c)})
	}
	evs = append(evs, event{data: []byte("[DONE]")})
	return evs
}
