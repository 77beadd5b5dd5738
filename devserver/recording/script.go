package recording

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/orchestrator-zero/oz0/fakemodel"
	"github.com/orchestrator-zero/oz0/gateway"
	"github.com/orchestrator-zero/oz0/schemas"
)

// A recorded job as a fake model script (docs/fake-model.md): one rule a model call, in the
// order they were made, each answering what the model answered (text, tool calls, stop reason,
// usage, or the error) to a request that matches the recorded one on what a script can match:
//   - user: the last user message's text, exactly;
//   - system: the system prompt, exactly, when there is one;
//   - tools: false when the request offered none;
//   - tool_result: false, or exactly the text of the tool result the conversation ends with.
// Rules that match the same requests answer once each (times: 1) but the last, so a run makes the
// recorded calls in order and a second run (oz0 plugin test runs several) gets the last answer.
// For each conversation whose calls answered a tool's result, a last rule answers any tool result
// as the last such call did, so a run whose tool answered otherwise (a denied call, changed
// arguments) still gets the conversation's answer. Calls other than messages and chat
// completions (models, count_tokens) are left out; the fake answers those itself.

// Script writes the recorded calls of job as a fake model script; its modeline names schemaURL, the
// fake model scripts' JSON Schema as the oz0 that writes it serves it.
func Script(job, input string, exchanges []gateway.Exchange, schemaURL string) ([]byte, error) {
	var rules []scriptRule
	var skipped []string
	var models []string
	type group struct {
		user, system string
		last         int // the last rule of the group that answered a tool result
	}
	var groups []*group
	for i, ex := range exchanges {
		api := apiOf(ex.Path)
		if api == "" {
			continue
		}
		if ex.Gateway {
			continue // the gateway's own refusal, not the model's answer
		}
		if ex.Truncated {
			skipped = append(skipped, fmt.Sprintf("call %d was not kept whole (%s)", i+1, ex.Cut))
			continue
		}
		conv, err := fakemodel.Describe(api, []byte(ex.Request))
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("call %d is not a request the fake model takes: %v", i+1, err))
			continue
		}
		reply, err := replyOf(api, &ex)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("call %d: %v", i+1, err))
			continue
		}
		if conv.Model != "" && !slices.Contains(models, conv.Model) {
			models = append(models, conv.Model)
		}
		m := &scriptMatch{}
		if conv.HasUser {
			m.User = exactly(conv.User)
		}
		if conv.System != "" {
			m.System = exactly(conv.System)
		}
		if len(conv.Tools) == 0 {
			m.Tools = false
		}
		if conv.ToolResult {
			m.ToolResult = exactly(conv.ToolResultText)
		} else {
			m.ToolResult = false
		}
		rules = append(rules, scriptRule{Name: fmt.Sprintf("call-%d", i+1), Match: m, Reply: reply})
		if conv.ToolResult {
			var g *group
			for _, h := range groups {
				if h.user == m.User && h.system == m.System {
					g = h
				}
			}
			if g == nil {
				g = &group{user: m.User, system: m.System}
				groups = append(groups, g)
			}
			g.last = len(rules) - 1
		}
	}
	// Rules with the same match answer once each, but the last.
	for i := range rules {
		for j := i + 1; j < len(rules); j++ {
			if sameMatch(rules[i].Match, rules[j].Match) {
				rules[i].Times = 1
				break
			}
		}
	}
	for _, g := range groups {
		last := rules[g.last]
		m := &scriptMatch{User: g.user, System: g.system, Tools: last.Match.Tools, ToolResult: true}
		rules = append(rules, scriptRule{Name: last.Name + "-any-tool-result", Match: m, Reply: last.Reply})
	}
	doc := scriptDoc{Input: input, Models: models, Rules: rules}
	if len(rules) == 0 {
		return nil, fmt.Errorf("job %s has no recorded model call that a fake model script can answer", job)
	}
	var out bytes.Buffer
	out.WriteString(schemas.Modeline(schemaURL))
	fmt.Fprintf(&out, "#\n# The model calls of job %s as oz0 dev recorded them: a fake model that answers them as the\n", job)
	fmt.Fprintf(&out, "# model did. oz0 plugin test --script FILE, oz0 dev --fake-script FILE, oz0 fake-model serve --script FILE.\n")
	fmt.Fprintf(&out, "# input is the job's: oz0 plugin test --script sends it, as the rules' user matches want.\n")
	for _, s := range skipped {
		fmt.Fprintf(&out, "# Left out: %s.\n", s)
	}
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

type scriptDoc struct {
	Input  string       `yaml:"input,omitempty"`
	Models []string     `yaml:"models,omitempty"`
	Rules  []scriptRule `yaml:"rules"`
}

type scriptRule struct {
	Name  string       `yaml:"name"`
	Match *scriptMatch `yaml:"match,omitempty"`
	Reply scriptReply  `yaml:"reply"`
	Times int          `yaml:"times,omitempty"`
}

type scriptMatch struct {
	User       string `yaml:"user,omitempty"`
	System     string `yaml:"system,omitempty"`
	Tools      any    `yaml:"tools,omitempty"`       // false, or nil: any
	ToolResult any    `yaml:"tool_result,omitempty"` // false, true or a regular expression
}

type scriptReply struct {
	Text       *string          `yaml:"text,omitempty"`
	ToolCalls  []scriptToolCall `yaml:"tool_calls,omitempty"`
	StopReason string           `yaml:"stop_reason,omitempty"`
	Usage      *scriptUsage     `yaml:"usage,omitempty"`
	Error      *scriptError     `yaml:"error,omitempty"`
}

type scriptToolCall struct {
	Name      string     `yaml:"name"`
	Arguments *yaml.Node `yaml:"arguments,omitempty"`
}

type scriptUsage struct {
	InputTokens         int64 `yaml:"input_tokens"`
	OutputTokens        int64 `yaml:"output_tokens"`
	CacheReadTokens     int64 `yaml:"cache_read_input_tokens,omitempty"`
	CacheCreationTokens int64 `yaml:"cache_creation_input_tokens,omitempty"`
}

type scriptError struct {
	Status  int    `yaml:"status"`
	Message string `yaml:"message,omitempty"`
}

func sameMatch(a, b *scriptMatch) bool {
	return a.User == b.User && a.System == b.System && fmt.Sprint(a.Tools) == fmt.Sprint(b.Tools) && fmt.Sprint(a.ToolResult) == fmt.Sprint(b.ToolResult)
}

// plainStyle drops the JSON's flow style and quotes, so arguments read as a script's YAML does.
func plainStyle(n *yaml.Node) *yaml.Node {
	n.Style = 0
	for _, c := range n.Content {
		plainStyle(c)
	}
	return n
}

// exactly is a regular expression that matches s and nothing else.
func exactly(s string) string { return "^" + regexp.QuoteMeta(s) + "$" }

// apiOf is the fake model's API of a path under the gateway; "" for calls a script does not
// answer.
func apiOf(path string) string {
	switch {
	case strings.HasSuffix(path, "/anthropic/v1/messages"):
		return fakemodel.Anthropic
	case strings.HasSuffix(path, "/chat/completions"):
		return fakemodel.OpenAI
	}
	return ""
}

// replyOf reads what the model answered from a recorded call.
func replyOf(api string, ex *gateway.Exchange) (scriptReply, error) {
	var a answer
	var err error
	switch {
	case ex.Status < 200 || ex.Status >= 300:
		return scriptReply{Error: &scriptError{Status: ex.Status, Message: errorMessage([]byte(ex.Body))}}, nil
	case ex.Streamed && api == fakemodel.Anthropic:
		err = a.anthropicStream(ex.Chunks)
	case ex.Streamed:
		err = a.openaiStream(ex.Chunks)
	case api == fakemodel.Anthropic:
		err = a.anthropicMessage([]byte(ex.Body))
	default:
		err = a.openaiCompletion([]byte(ex.Body))
	}
	if err != nil {
		return scriptReply{}, err
	}
	r := scriptReply{StopReason: a.stop, Usage: a.usage}
	if u := ex.Usage; u != nil && r.Usage == nil {
		// The answer did not say its tokens to the client (the gateway hid a usage chunk it asked
		// for); the call was metered with these.
		r.Usage = &scriptUsage{u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheCreationTokens}
	}
	for _, tc := range a.calls {
		call := scriptToolCall{Name: tc.name}
		if args := strings.TrimSpace(tc.args.String()); args != "" && args != "{}" {
			var n yaml.Node
			if err := yaml.Unmarshal([]byte(args), &n); err != nil || len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
				return scriptReply{}, fmt.Errorf("the arguments of tool call %s are not a JSON object", tc.name)
			}
			call.Arguments = plainStyle(n.Content[0])
		}
		r.ToolCalls = append(r.ToolCalls, call)
	}
	if a.text.Len() > 0 || len(r.ToolCalls) == 0 {
		t := a.text.String()
		r.Text = &t
	}
	return r, nil
}

// answer is a model's answer, read from either API, whole or streamed.
type answer struct {
	text  strings.Builder
	calls []*toolCall
	stop  string
	usage *scriptUsage
}

type toolCall struct {
	name string
	args strings.Builder
}

// anthropicStop is a stop reason a script takes; others are left to the script's default.
func anthropicStop(s string) string {
	switch s {
	case "end_turn", "max_tokens", "stop_sequence", "tool_use":
		return s
	}
	return ""
}

func openaiStop(s string) string {
	switch s {
	case "stop":
		return "end_turn"
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	}
	return ""
}

type anthUsage struct {
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	CacheReadTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationTokens int64 `json:"cache_creation_input_tokens"`
}

func (u anthUsage) script() *scriptUsage {
	return &scriptUsage{u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheCreationTokens}
}

type anthBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

func (a *answer) anthropicMessage(body []byte) error {
	var m struct {
		Content    []anthBlock `json:"content"`
		StopReason string      `json:"stop_reason"`
		Usage      *anthUsage  `json:"usage"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return fmt.Errorf("the answer is not an Anthropic message: %v", err)
	}
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			a.text.WriteString(b.Text)
		case "tool_use":
			tc := &toolCall{name: b.Name}
			tc.args.Write(b.Input)
			a.calls = append(a.calls, tc)
		}
	}
	a.stop = anthropicStop(m.StopReason)
	if m.Usage != nil {
		a.usage = m.Usage.script()
	}
	return nil
}

func (a *answer) anthropicStream(chunks []gateway.Chunk) error {
	var usage *anthUsage
	blocks := map[int]*toolCall{}
	for data := range sseData(chunks) {
		var ev struct {
			Type         string    `json:"type"`
			Index        int       `json:"index"`
			ContentBlock anthBlock `json:"content_block"`
			Delta        struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			Message struct {
				Usage *anthUsage `json:"usage"`
			} `json:"message"`
			Usage *json.RawMessage `json:"usage"`
		}
		if json.Unmarshal([]byte(data), &ev) != nil {
			continue
		}
		switch ev.Type {
		case "message_start":
			usage = ev.Message.Usage
		case "content_block_start":
			if ev.ContentBlock.Type == "tool_use" {
				tc := &toolCall{name: ev.ContentBlock.Name}
				blocks[ev.Index] = tc
				a.calls = append(a.calls, tc)
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				a.text.WriteString(ev.Delta.Text)
			case "input_json_delta":
				if tc := blocks[ev.Index]; tc != nil {
					tc.args.WriteString(ev.Delta.PartialJSON)
				}
			}
		case "message_delta":
			a.stop = anthropicStop(ev.Delta.StopReason)
			if ev.Usage != nil {
				// Cumulative counts; those it leaves out keep message_start's.
				if usage == nil {
					usage = &anthUsage{}
				}
				json.Unmarshal(*ev.Usage, usage)
			}
		case "error":
			return fmt.Errorf("the stream ended with an error event")
		}
	}
	if usage != nil {
		a.usage = usage.script()
	}
	return nil
}

type openaiUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (u openaiUsage) script() *scriptUsage {
	cached := u.PromptTokensDetails.CachedTokens
	return &scriptUsage{InputTokens: u.PromptTokens - cached, OutputTokens: u.CompletionTokens, CacheReadTokens: cached}
}

type openaiToolCall struct {
	Index    int `json:"index"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func (a *answer) openaiCompletion(body []byte) error {
	var c struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct {
				Content   *string          `json:"content"`
				ToolCalls []openaiToolCall `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
		Usage *openaiUsage `json:"usage"`
	}
	if err := json.Unmarshal(body, &c); err != nil || len(c.Choices) == 0 {
		return fmt.Errorf("the answer is not an OpenAI chat completion")
	}
	ch := c.Choices[0]
	if ch.Message.Content != nil {
		a.text.WriteString(*ch.Message.Content)
	}
	for _, t := range ch.Message.ToolCalls {
		tc := &toolCall{name: t.Function.Name}
		tc.args.WriteString(t.Function.Arguments)
		a.calls = append(a.calls, tc)
	}
	a.stop = openaiStop(ch.FinishReason)
	if c.Usage != nil {
		a.usage = c.Usage.script()
	}
	return nil
}

func (a *answer) openaiStream(chunks []gateway.Chunk) error {
	calls := map[int]*toolCall{}
	for data := range sseData(chunks) {
		if data == "[DONE]" {
			break
		}
		var c struct {
			Choices []struct {
				FinishReason *string `json:"finish_reason"`
				Delta        struct {
					Content   *string          `json:"content"`
					ToolCalls []openaiToolCall `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
			Usage *openaiUsage    `json:"usage"`
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal([]byte(data), &c) != nil {
			continue
		}
		if len(c.Error) > 0 {
			return fmt.Errorf("the stream ended with an error event")
		}
		if c.Usage != nil {
			a.usage = c.Usage.script()
		}
		if len(c.Choices) == 0 {
			continue
		}
		ch := c.Choices[0]
		if ch.Delta.Content != nil {
			a.text.WriteString(*ch.Delta.Content)
		}
		for _, t := range ch.Delta.ToolCalls {
			tc := calls[t.Index]
			if tc == nil {
				tc = &toolCall{}
				calls[t.Index] = tc
				a.calls = append(a.calls, tc)
			}
			if t.Function.Name != "" {
				tc.name = t.Function.Name
			}
			tc.args.WriteString(t.Function.Arguments)
		}
		if ch.FinishReason != nil {
			a.stop = openaiStop(*ch.FinishReason)
		}
	}
	return nil
}

// sseData yields the data of each server-sent event in a recorded stream.
func sseData(chunks []gateway.Chunk) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		var all strings.Builder
		for _, ch := range chunks {
			all.WriteString(ch.Data)
		}
		sc := bufio.NewScanner(strings.NewReader(all.String()))
		sc.Buffer(make([]byte, 0, 64<<10), gateway.MaxExchangeBytes)
		var data []string
		flush := func() bool {
			if len(data) == 0 {
				return true
			}
			d := strings.Join(data, "\n")
			data = data[:0]
			return yield(d)
		}
		for sc.Scan() {
			line := strings.TrimSuffix(sc.Text(), "\r")
			switch {
			case line == "":
				if !flush() {
					return
				}
			case strings.HasPrefix(line, "data:"):
				data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
			}
		}
		flush()
	}
}

// errorMessage is the provider's message in an error answer, either API's shape.
func errorMessage(body []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || len(e.Error) == 0 {
		return strings.TrimSpace(string(body))
	}
	var m struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(e.Error, &m) == nil && m.Message != "" {
		return m.Message
	}
	var s string
	if json.Unmarshal(e.Error, &s) == nil {
		return s
	}
	return strings.TrimSpace(string(body))
}
