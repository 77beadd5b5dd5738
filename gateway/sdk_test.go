package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"
)

// The script of the SDK tests: every count is scripted, so the metered usage must equal it.
const sdkScript = `
models: [fake-model, fake-large]
rules:
  - name: tool
    match: {tools: true, tool_result: false}
    reply:
      text: "Telling the billing team."
      tool_calls:
        - {name: notify_team, arguments: {team: billing, summary: "The customer was charged twice for one order; please refund the second charge."}}
        - {name: lookup_order, arguments: {order: 1234}}
      usage: {input_tokens: 1234, output_tokens: 56, cache_read_input_tokens: 700, cache_creation_input_tokens: 30}
  - name: hello
    match: {user: "(?i)hello"}
    reply:
      text: "Hello! How can I help you today? I am a fake model answering from a script."
      usage: {input_tokens: 42, output_tokens: 17, cache_read_input_tokens: 7, cache_creation_input_tokens: 3}
`

// The OpenAI face's scripted usage has no cache writes: OpenAI reports none.
const sdkScriptOpenAI = `
rules:
  - name: tool
    match: {tools: true}
    reply:
      text: "Telling the billing team."
      tool_calls:
        - {name: notify_team, arguments: {team: billing, summary: "The customer was charged twice for one order; please refund the second charge."}}
        - {name: lookup_order, arguments: {order: 1234}}
      usage: {input_tokens: 1234, output_tokens: 56, cache_read_input_tokens: 700}
  - name: hello
    match: {user: "(?i)hello"}
    reply:
      text: "Hello! How can I help you today? I am a fake model answering from a script."
      usage: {input_tokens: 42, output_tokens: 17, cache_read_input_tokens: 7}
`

func checkCall(t *testing.T, c Call, want Call) {
	t.Helper()
	if c.Job != want.Job || c.Agent != want.Agent || c.Record != want.Record || c.Format != want.Format ||
		c.Endpoint != want.Endpoint || c.Model != want.Model || c.Status != want.Status || c.Streamed != want.Streamed ||
		c.Usage != want.Usage || c.Step != want.Step || c.Aborted != want.Aborted || c.Refused != want.Refused {
		t.Errorf("metered call:\n got %+v\nwant %+v", c, want)
	}
	if c.Latency <= 0 || (c.Refused == "" && c.TTFB <= 0) || c.TTFB > c.Latency {
		t.Errorf("metered call times: latency %v, ttfb %v", c.Latency, c.TTFB)
	}
}

func TestAnthropicSDKMessages(t *testing.T) {
	e := newEnv(t, sdkScript)
	key := e.issue("job_a1", "acme-triage", Limits{MaxSteps: 10}, Budget{})
	client := e.anthropicClient(key)
	msg, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model:     "fake-model",
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello there"))},
	})
	if err != nil {
		t.Fatalf("Messages.New: %v", err)
	}
	if len(msg.Content) != 1 || !strings.HasPrefix(msg.Content[0].Text, "Hello! How can I help") {
		t.Errorf("content: %+v", msg.Content)
	}
	if msg.Usage.InputTokens != 42 || msg.Usage.OutputTokens != 17 || msg.Usage.CacheReadInputTokens != 7 || msg.Usage.CacheCreationInputTokens != 3 {
		t.Errorf("the client's usage: %+v", msg.Usage)
	}
	calls := e.calls("job_a1", 1)
	if len(calls) != 1 {
		t.Fatalf("metered %d calls, want 1", len(calls))
	}
	checkCall(t, calls[0], Call{Job: "job_a1", Agent: "acme-triage", Record: "fake", Format: AnthropicMessages,
		Endpoint: EndpointMessages, Model: "fake-model", Status: 200, Step: 1,
		Usage: Usage{InputTokens: 42, OutputTokens: 17, CacheReadTokens: 7, CacheCreationTokens: 3}})
	if u := e.gw.JobUsage("job_a1"); u.Steps != 1 || u.Calls != 1 || u.Usage.Total() != 69 {
		t.Errorf("JobUsage: %+v", u)
	}

	// What the upstream got: the SDK's own headers, the tenant key, nothing of the session.
	reqs := e.upstreamRequests("/v1/messages")
	if len(reqs) != 1 {
		t.Fatalf("the upstream got %d requests, want 1", len(reqs))
	}
	h := reqs[0].Header
	if h.Get("X-Api-Key") != tenantKey {
		t.Errorf("upstream x-api-key = %q, want the tenant key", h.Get("X-Api-Key"))
	}
	if h.Get("Authorization") != "" || strings.Contains(strings.Join(headerValues(h), " "), key) {
		t.Errorf("the session key reached the upstream: %v", h)
	}
	if h.Get("Anthropic-Version") == "" {
		t.Errorf("no anthropic-version upstream") // TestHeadersPassThrough checks values exactly
	}
	if !strings.HasPrefix(h.Get("User-Agent"), "Anthropic/Go") {
		t.Errorf("user-agent = %q, want the SDK's", h.Get("User-Agent"))
	}
}

func headerValues(h map[string][]string) []string {
	var out []string
	for k, vs := range h {
		out = append(out, k)
		out = append(out, vs...)
	}
	return out
}

func TestAnthropicSDKStreamingToolUse(t *testing.T) {
	e := newEnv(t, sdkScript)
	key := e.issue("job_a2", "acme-triage", Limits{}, Budget{})
	client := e.anthropicClient(key)
	stream := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
		Model:     "fake-model",
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("A customer was charged twice."))},
		Tools: []anthropic.ToolUnionParam{
			{OfTool: &anthropic.ToolParam{Name: "notify_team", InputSchema: anthropic.ToolInputSchemaParam{
				Properties: map[string]any{"team": map[string]any{"type": "string"}, "summary": map[string]any{"type": "string"}}}}},
			{OfTool: &anthropic.ToolParam{Name: "lookup_order", InputSchema: anthropic.ToolInputSchemaParam{
				Properties: map[string]any{"order": map[string]any{"type": "integer"}}}}},
		},
	})
	msg := anthropic.Message{}
	events := 0
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatalf("Accumulate: %v", err)
		}
		events++
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if len(msg.Content) != 3 || msg.Content[0].Text != "Telling the billing team." {
		t.Fatalf("accumulated content: %+v", msg.Content)
	}
	var args struct{ Team, Summary string }
	if msg.Content[1].Type != "tool_use" || msg.Content[1].Name != "notify_team" || json.Unmarshal(msg.Content[1].Input, &args) != nil ||
		args.Team != "billing" || !strings.Contains(args.Summary, "refund the second charge") {
		t.Errorf("tool_use 1: %+v (%s)", msg.Content[1], msg.Content[1].Input)
	}
	if msg.Content[2].Name != "lookup_order" || string(msg.Content[2].Input) != `{"order":1234}` {
		t.Errorf("tool_use 2: %+v (%s)", msg.Content[2], msg.Content[2].Input)
	}
	if msg.StopReason != "tool_use" {
		t.Errorf("stop reason %q", msg.StopReason)
	}
	want := Usage{InputTokens: 1234, OutputTokens: 56, CacheReadTokens: 700, CacheCreationTokens: 30}
	if got := (Usage{msg.Usage.InputTokens, msg.Usage.OutputTokens, msg.Usage.CacheReadInputTokens, msg.Usage.CacheCreationInputTokens}); got != want {
		t.Errorf("the client's accumulated usage %+v, want %+v", got, want)
	}
	calls := e.calls("job_a2", 1)
	if len(calls) != 1 {
		t.Fatalf("metered %d calls", len(calls))
	}
	checkCall(t, calls[0], Call{Job: "job_a2", Agent: "acme-triage", Record: "fake", Format: AnthropicMessages,
		Endpoint: EndpointMessages, Model: "fake-model", Status: 200, Streamed: true, Step: 1, Usage: want})
	if calls[0].FirstEvent <= 0 || calls[0].FirstEvent > calls[0].Latency {
		t.Errorf("first event at %v of %v", calls[0].FirstEvent, calls[0].Latency)
	}
	if events < 10 {
		t.Errorf("only %d events", events)
	}
}

func TestAnthropicSDKFromEnvironment(t *testing.T) {
	// An SDK that reads only ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY, and sends no Oz0 headers.
	e := newEnv(t, sdkScript)
	key := e.issue("job_env", "acme-triage", Limits{}, Budget{})
	t.Setenv("ANTHROPIC_BASE_URL", e.anthropicURL())
	t.Setenv("ANTHROPIC_API_KEY", key)
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "")
	client := anthropic.NewClient()
	msg, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "fake-model", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))},
	})
	if err != nil {
		t.Fatalf("Messages.New: %v", err)
	}
	if msg.Usage.InputTokens != 42 {
		t.Errorf("usage %+v", msg.Usage)
	}
	if cs := e.calls("job_env", 1); len(cs) != 1 || cs[0].Agent != "acme-triage" {
		t.Errorf("metered: %+v", cs)
	}
}

func TestAnthropicSDKCountTokensAndModels(t *testing.T) {
	e := newEnv(t, sdkScript)
	key := e.issue("job_a3", "acme-triage", Limits{MaxSteps: 1}, Budget{})
	client := e.anthropicClient(key)
	ctx := context.Background()
	for range 3 { // no steps
		n, err := client.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{
			Model:    "fake-model",
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))},
		})
		if err != nil || n.InputTokens != 42 {
			t.Fatalf("CountTokens: %v, %+v", err, n)
		}
		page, err := client.Models.List(ctx, anthropic.ModelListParams{})
		if err != nil || len(page.Data) != 2 || page.Data[0].ID != "fake-model" {
			t.Fatalf("Models.List: %v, %+v", err, page)
		}
	}
	if _, err := client.Messages.New(ctx, anthropic.MessageNewParams{Model: "fake-model", MaxTokens: 10,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))}}); err != nil {
		t.Fatalf("the one step: %v", err)
	}
	calls := e.calls("job_a3", 7)
	steps := 0
	for _, c := range calls {
		if c.Step > 0 {
			steps++
			if c.Endpoint != EndpointMessages {
				t.Errorf("%s counted as a step", c.Endpoint)
			}
		} else if c.Usage != (Usage{}) {
			t.Errorf("%s metered usage %+v", c.Endpoint, c.Usage)
		}
	}
	if len(calls) != 7 || steps != 1 {
		t.Errorf("%d calls, %d steps", len(calls), steps)
	}
}

func TestOpenAISDKChat(t *testing.T) {
	e := newEnv(t, sdkScriptOpenAI)
	key := e.issue("job_o1", "acme-triage", Limits{MaxSteps: 10}, Budget{})
	client := e.openaiClient(key)
	cc, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "fake-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello there")},
	})
	if err != nil {
		t.Fatalf("Chat.Completions.New: %v", err)
	}
	if !strings.HasPrefix(cc.Choices[0].Message.Content, "Hello! How can I help") {
		t.Errorf("content %q", cc.Choices[0].Message.Content)
	}
	if cc.Usage.PromptTokens != 49 || cc.Usage.CompletionTokens != 17 || cc.Usage.PromptTokensDetails.CachedTokens != 7 {
		t.Errorf("the client's usage %+v", cc.Usage)
	}
	calls := e.calls("job_o1", 1)
	if len(calls) != 1 {
		t.Fatalf("metered %d calls", len(calls))
	}
	checkCall(t, calls[0], Call{Job: "job_o1", Agent: "acme-triage", Record: "fake", Format: OpenAIChat,
		Endpoint: EndpointChat, Model: "fake-model", Status: 200, Step: 1,
		Usage: Usage{InputTokens: 42, OutputTokens: 17, CacheReadTokens: 7}})
	reqs := e.upstreamRequests("/chat/completions")
	if len(reqs) != 1 || reqs[0].Path != "/v1/chat/completions" {
		t.Fatalf("upstream requests: %+v", reqs)
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer "+tenantKey {
		t.Errorf("upstream Authorization = %q, want the tenant key", got)
	}
	if strings.Contains(string(reqs[0].Body), "stream_options") {
		t.Errorf("include_usage asked on a call that does not stream: %s", reqs[0].Body)
	}

	page, err := client.Models.List(context.Background())
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != "fake-model" {
		t.Fatalf("Models.List: %v %+v", err, page)
	}
}

func openaiTools() []openai.ChatCompletionToolUnionParam {
	return []openai.ChatCompletionToolUnionParam{
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "notify_team",
			Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"team": map[string]any{"type": "string"}}}}),
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "lookup_order",
			Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"order": map[string]any{"type": "integer"}}}}),
	}
}

func TestOpenAISDKStreamingToolCalls(t *testing.T) {
	e := newEnv(t, sdkScriptOpenAI)
	key := e.issue("job_o2", "acme-triage", Limits{}, Budget{})
	client := e.openaiClient(key)
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:    "fake-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("A customer was charged twice.")},
		Tools:    openaiTools(),
	})
	acc := openai.ChatCompletionAccumulator{}
	var finished []string
	usageChunks := 0
	for stream.Next() {
		chunk := stream.Current()
		if len(chunk.Choices) == 0 || chunk.JSON.Usage.Valid() && chunk.Usage.TotalTokens > 0 {
			usageChunks++
		}
		if !acc.AddChunk(chunk) {
			t.Fatalf("AddChunk refused %+v", chunk)
		}
		if tc, ok := acc.JustFinishedToolCall(); ok {
			finished = append(finished, tc.Name+" "+tc.Arguments)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	msg := acc.Choices[0].Message
	if msg.Content != "Telling the billing team." || len(msg.ToolCalls) != 2 {
		t.Fatalf("accumulated message: %+v", msg)
	}
	if msg.ToolCalls[0].Function.Name != "notify_team" || !strings.Contains(msg.ToolCalls[0].Function.Arguments, "refund the second charge") ||
		msg.ToolCalls[1].Function.Name != "lookup_order" || msg.ToolCalls[1].Function.Arguments != `{"order":1234}` {
		t.Errorf("tool calls: %+v", msg.ToolCalls)
	}
	if len(finished) != 2 {
		t.Errorf("finished tool calls: %q", finished)
	}
	// The client did not ask for usage, so it sees none: the gateway asked and hid the chunk.
	if usageChunks != 0 || acc.Usage.TotalTokens != 0 {
		t.Errorf("the client saw %d usage chunks, usage %+v", usageChunks, acc.Usage)
	}
	reqs := e.upstreamRequests("/chat/completions")
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), `"stream_options":{"include_usage":true}`) {
		t.Fatalf("include_usage was not asked upstream: %s", reqs[0].Body)
	}
	calls := e.calls("job_o2", 1)
	checkCall(t, calls[0], Call{Job: "job_o2", Agent: "acme-triage", Record: "fake", Format: OpenAIChat,
		Endpoint: EndpointChat, Model: "fake-model", Status: 200, Streamed: true, Step: 1,
		Usage: Usage{InputTokens: 1234, OutputTokens: 56, CacheReadTokens: 700}})
}

func TestOpenAISDKStreamingIncludeUsageAsked(t *testing.T) {
	e := newEnv(t, sdkScriptOpenAI)
	key := e.issue("job_o3", "acme-triage", Limits{}, Budget{})
	client := e.openaiClient(key)
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         "fake-model",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)},
	})
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	// The client asked: the usage chunk reaches it.
	if acc.Usage.PromptTokens != 49 || acc.Usage.CompletionTokens != 17 || acc.Usage.PromptTokensDetails.CachedTokens != 7 {
		t.Errorf("the client's usage %+v", acc.Usage)
	}
	calls := e.calls("job_o3", 1)
	checkCall(t, calls[0], Call{Job: "job_o3", Agent: "acme-triage", Record: "fake", Format: OpenAIChat,
		Endpoint: EndpointChat, Model: "fake-model", Status: 200, Streamed: true, Step: 1,
		Usage: Usage{InputTokens: 42, OutputTokens: 17, CacheReadTokens: 7}})
	reqs := e.upstreamRequests("/chat/completions")
	var body struct {
		StreamOptions map[string]any `json:"stream_options"`
	}
	json.Unmarshal(reqs[0].Body, &body)
	if body.StreamOptions["include_usage"] != true {
		t.Errorf("upstream body %s", reqs[0].Body)
	}
}
