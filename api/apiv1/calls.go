package apiv1

import (
	"encoding/json"
	"time"
)

// Calls is the body of GET /api/v1/jobs/{id}/calls: a job's model calls, each with what was kept
// of it (every call of a job, unless oz0 dev or the job was told not to keep them) and that read
// as a conversation. GET /api/v1/jobs/{id}/calls/{seq} answers one of them as a ModelCall.
type Calls struct {
	Job   string      `json:"job"`
	Calls []ModelCall `json:"calls"`
}

// ModelCall is one model call of a job: its model_call event, the exchange the gateway kept (the
// request as the harness sent it and the answer as it got it, masked), and the exchange read as a
// Conversation.
type ModelCall struct {
	Seq  int64     `json:"seq"` // the model_call event's seq
	N    int       `json:"n"`   // 1, 2, 3… among the job's model calls
	Time time.Time `json:"time"`
	// Meter is the model_call event's data: record, model, status, tokens, cost, latency, refused….
	Meter json.RawMessage `json:"meter"`
	// Exchange is the call as the gateway kept it (the shape of the Go type gateway.Exchange:
	// method, path, query, request, status, content_type, streamed, body or chunks, usage,
	// truncated, cut, gateway); absent when it was not kept.
	Exchange json.RawMessage `json:"exchange,omitempty"`
	// Conversation is the exchange read as a conversation; absent when it was not kept.
	Conversation *Conversation `json:"conversation,omitempty"`
}

// Conversation is a model call as a provider's console shows one, the same for Anthropic's
// Messages API and OpenAI's Chat Completions: the system prompt, the messages by role, the tools
// offered and the answer. Text is never cut here; what the gateway did not keep is said in Notes.
type Conversation struct {
	Format   string    `json:"format"`             // anthropic-messages or openai-chat
	Model    string    `json:"model,omitempty"`    // the model asked for
	Stream   bool      `json:"stream,omitempty"`   // the request asked for a stream
	Settings string    `json:"settings,omitempty"` // other request fields (max_tokens, temperature…) as compact JSON
	System   string    `json:"system,omitempty"`   // Anthropic's system; OpenAI's leading system and developer messages
	Tools    []ToolDef `json:"tools,omitempty"`    // the tools offered
	Messages []Message `json:"messages"`
	Answer   *Answer   `json:"answer,omitempty"`
	// Notes say what of the call could not be shown as it was: what the gateway cut, a body that
	// is not the format's JSON.
	Notes []string `json:"notes,omitempty"`
}

// ToolDef is a tool offered to the model.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"` // its input's JSON Schema
}

// Message is one message of the conversation.
type Message struct {
	Role   string  `json:"role"` // user, assistant, system, developer, tool
	Blocks []Block `json:"blocks"`
}

// The kinds of Block.
const (
	BlockText       = "text"
	BlockThinking   = "thinking"
	BlockToolCall   = "tool_call"
	BlockToolResult = "tool_result"
	BlockImage      = "image"
	BlockOther      = "other" // anything else, as compact JSON in Text
)

// Block is a part of a message: text, a tool call (ID, Name, Input), a tool's result (ID, Text,
// IsError), an image, or another kind as its JSON.
type Block struct {
	Kind    string `json:"kind"`
	Text    string `json:"text,omitempty"`
	ID      string `json:"id,omitempty"`    // a tool call's id, which its result names
	Name    string `json:"name,omitempty"`  // the tool called
	Input   string `json:"input,omitempty"` // a tool call's arguments, as JSON text
	IsError bool   `json:"is_error,omitempty"`
}

// Answer is the model's answer as the harness got it; a streamed one assembled from its events.
type Answer struct {
	Status     int     `json:"status"`
	Streamed   bool    `json:"streamed,omitempty"`
	Events     int     `json:"events,omitempty"` // the server-sent events a streamed answer came in
	Model      string  `json:"model,omitempty"`  // the model that answered
	Blocks     []Block `json:"blocks,omitempty"`
	StopReason string  `json:"stop_reason,omitempty"` // end_turn, tool_use, max_tokens; OpenAI's finish_reason
	// Error is an error answer's message (the provider's, or the gateway's own refusal).
	Error string `json:"error,omitempty"`
	// Gateway: the gateway answered the call itself (a refusal, an unreachable upstream).
	Gateway bool         `json:"gateway,omitempty"`
	Usage   *AnswerUsage `json:"usage,omitempty"`
}

// AnswerUsage is the tokens an answer says it used, counted as the gateway meters them.
type AnswerUsage struct {
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	CacheReadTokens     int64 `json:"cache_read_input_tokens,omitempty"`
	CacheCreationTokens int64 `json:"cache_creation_input_tokens,omitempty"`
}

// CallDiff is the body of GET /api/v1/jobs/{id}/calls/{seq}/diff?job=&seq= (or &n=, the other
// call's number among its job's calls): how the request of that call differs from another call's
// (of the same job, or of job), as `oz0 job replay` prints the difference of a replayed call from
// the recorded one: each place by its JSON path, the other call's value after "-" and this one's
// after "+".
type CallDiff struct {
	From  CallRef  `json:"from"` // the call compared against (its values after "-")
	To    CallRef  `json:"to"`   // this call (after "+")
	Lines []string `json:"lines"`
	Same  bool     `json:"same"` // the requests are the same JSON
}

// CallRef names a model call of a job.
type CallRef struct {
	Job string `json:"job"`
	Seq int64  `json:"seq"`
	N   int    `json:"n"`
}
