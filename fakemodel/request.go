package fakemodel

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// convo is what rules match on, read from a request of either API.
type convo struct {
	model          string
	system         string
	user           string // the text of the last user message that has text
	hasUser        bool
	tools          []string // the names of the tools offered
	toolSchemas    []any    // their input schemas (parameters), as decoded; nil when absent
	toolResult     bool     // the conversation ends with a tool result
	toolResultText string
	stream         bool
	includeUsage   bool // OpenAI stream_options.include_usage
	chars          int  // characters of input, for the token estimate
}

func (c *convo) inputTokens() int { return max(1, tokens(c.chars)) }

// tokens estimates the tokens of n characters: about 4 a token.
func tokens(n int) int { return (n + 3) / 4 }

// decodeObject decodes a request body that must be a JSON object, its numbers as float64. It
// decodes from the body itself: a json.Decoder (for UseNumber) first copies the body into a
// buffer of its own, grown by doubling, up to four times a large body's size (issue 13).
func decodeObject(body []byte) (map[string]any, error) {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		if strings.Contains(err.Error(), "after top-level value") {
			return nil, fmt.Errorf("extra data after the JSON value")
		}
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the body must be a JSON object")
	}
	return m, nil
}

func invalid(format string, args ...any) *apiError {
	return &apiError{kind: "invalid_request", message: fmt.Sprintf(format, args...)}
}

// parseAnthropic reads and checks a Messages (or count_tokens) request as the real API would,
// where that is cheap.
func parseAnthropic(body []byte, countTokens bool) (*convo, *apiError) {
	m, err := decodeObject(body)
	if err != nil {
		return nil, invalid("There was an error parsing the body of your request: %v", err)
	}
	c := &convo{}
	switch v := m["model"].(type) {
	case nil:
		return nil, invalid("model: Field required")
	case string:
		c.model = v
	default:
		return nil, invalid("model: Input should be a valid string")
	}
	if !countTokens {
		switch v := m["max_tokens"].(type) {
		case nil:
			return nil, invalid("max_tokens: Field required")
		case float64:
			if v != math.Trunc(v) {
				return nil, invalid("max_tokens: Input should be a valid integer")
			}
			if v < 1 {
				return nil, invalid("max_tokens: Input should be greater than or equal to 1")
			}
		default:
			return nil, invalid("max_tokens: Input should be a valid integer")
		}
		switch v := m["stream"].(type) {
		case nil:
		case bool:
			c.stream = v
		default:
			return nil, invalid("stream: Input should be a valid boolean")
		}
	}
	switch v := m["system"].(type) {
	case nil:
	case string:
		c.system = v
	case []any:
		var parts []string
		for i, b := range v {
			bm, ok := b.(map[string]any)
			if !ok || bm["type"] != "text" {
				return nil, invalid("system.%d: Input should be a valid text block", i)
			}
			t, _ := bm["text"].(string)
			parts = append(parts, t)
		}
		c.system = strings.Join(parts, "\n")
	default:
		return nil, invalid("system: Input should be a valid string or a list of text blocks")
	}
	c.chars += len(c.system)
	msgs, ok := m["messages"].([]any)
	if m["messages"] == nil {
		return nil, invalid("messages: Field required")
	}
	if !ok {
		return nil, invalid("messages: Input should be a valid list")
	}
	if len(msgs) == 0 {
		return nil, invalid("messages: at least one message is required")
	}
	for i, msg := range msgs {
		mm, ok := msg.(map[string]any)
		if !ok {
			return nil, invalid("messages.%d: Input should be a valid dictionary", i)
		}
		role, _ := mm["role"].(string)
		if role != "user" && role != "assistant" {
			return nil, invalid("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		if mm["content"] == nil {
			return nil, invalid("messages.%d.content: Field required", i)
		}
		text, hasText, results, hasResult, chars, err := anthropicContent(mm["content"])
		if err != "" {
			return nil, invalid("messages.%d.content%s", i, err)
		}
		c.chars += chars
		if role == "user" && hasText {
			c.user, c.hasUser = text, true
		}
		last := i == len(msgs)-1
		if last {
			c.toolResult = role == "user" && hasResult
			c.toolResultText = results
		}
	}
	if tools, ok := m["tools"].([]any); ok {
		for i, t := range tools {
			tm, ok := t.(map[string]any)
			name, _ := tm["name"].(string)
			if !ok || name == "" {
				return nil, invalid("tools.%d.name: Field required", i)
			}
			c.tools = append(c.tools, name)
			c.toolSchemas = append(c.toolSchemas, tm["input_schema"])
		}
		raw, _ := json.Marshal(tools)
		c.chars += len(raw)
	} else if m["tools"] != nil {
		return nil, invalid("tools: Input should be a valid list")
	}
	return c, nil
}

// anthropicContent reads a message's content: a string or a list of blocks. err, when not "",
// completes "messages.N.content" into a message.
func anthropicContent(content any) (text string, hasText bool, results string, hasResult bool, chars int, err string) {
	switch v := content.(type) {
	case string:
		return v, true, "", false, len(v), ""
	case []any:
		var texts, res []string
		for j, b := range v {
			bm, ok := b.(map[string]any)
			if !ok {
				return "", false, "", false, 0, fmt.Sprintf(".%d: Input should be a valid dictionary", j)
			}
			switch bm["type"] {
			case "text":
				t, _ := bm["text"].(string)
				texts = append(texts, t)
				hasText = true
				chars += len(t)
			case "tool_result":
				hasResult = true
				t := blockText(bm["content"])
				res = append(res, t)
				chars += len(t)
			case "tool_use":
				raw, _ := json.Marshal(bm["input"])
				name, _ := bm["name"].(string)
				chars += len(raw) + len(name)
			case nil:
				return "", false, "", false, 0, fmt.Sprintf(".%d.type: Field required", j)
			default:
				chars += 64 // images, documents, thinking: a token guess is enough
			}
		}
		return strings.Join(texts, "\n"), hasText, strings.Join(res, "\n"), hasResult, chars, ""
	}
	return "", false, "", false, 0, ": Input should be a valid string or a list of content blocks"
}

// blockText is the text of a tool_result's content: a string or text blocks.
func blockText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		var parts []string
		for _, b := range v {
			if bm, ok := b.(map[string]any); ok {
				if t, ok := bm["text"].(string); ok {
					parts = append(parts, t)
				}
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

func openaiInvalid(param, code, format string, args ...any) *apiError {
	return &apiError{kind: "invalid_request", param: param, code: code, message: fmt.Sprintf(format, args...)}
}

// parseOpenAI reads and checks a Chat Completions request as the real API would, where that is
// cheap.
func parseOpenAI(body []byte) (*convo, *apiError) {
	m, err := decodeObject(body)
	if err != nil {
		return nil, openaiInvalid("", "", "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.) %v", err)
	}
	c := &convo{}
	switch v := m["model"].(type) {
	case nil:
		return nil, openaiInvalid("", "", "you must provide a model parameter")
	case string:
		c.model = v
	default:
		return nil, openaiInvalid("model", "invalid_type", "Invalid type for 'model': expected a string, but got %s instead.", jsonType(v))
	}
	switch v := m["stream"].(type) {
	case nil:
	case bool:
		c.stream = v
	default:
		return nil, openaiInvalid("stream", "invalid_type", "Invalid type for 'stream': expected a boolean, but got %s instead.", jsonType(v))
	}
	if so := m["stream_options"]; so != nil {
		if !c.stream {
			return nil, openaiInvalid("stream_options", "invalid_value", "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
		}
		som, ok := so.(map[string]any)
		if !ok {
			return nil, openaiInvalid("stream_options", "invalid_type", "Invalid type for 'stream_options': expected an object, but got %s instead.", jsonType(so))
		}
		c.includeUsage, _ = som["include_usage"].(bool)
	}
	if m["messages"] == nil {
		return nil, openaiInvalid("messages", "missing_required_parameter", "Missing required parameter: 'messages'.")
	}
	msgs, ok := m["messages"].([]any)
	if !ok {
		return nil, openaiInvalid("messages", "invalid_type", "Invalid type for 'messages': expected an array of objects, but got %s instead.", jsonType(m["messages"]))
	}
	if len(msgs) == 0 {
		return nil, openaiInvalid("messages", "empty_array", "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.")
	}
	var system []string
	for i, msg := range msgs {
		mm, ok := msg.(map[string]any)
		if !ok {
			return nil, openaiInvalid(fmt.Sprintf("messages.[%d]", i), "invalid_type", "Invalid type for 'messages[%d]': expected an object, but got %s instead.", i, jsonType(msg))
		}
		role, _ := mm["role"].(string)
		text, hasText := openaiContent(mm["content"])
		c.chars += len(text)
		switch role {
		case "system", "developer":
			system = append(system, text)
		case "user":
			if hasText {
				c.user, c.hasUser = text, true
			}
		case "assistant":
			if calls, ok := mm["tool_calls"].([]any); ok {
				raw, _ := json.Marshal(calls)
				c.chars += len(raw)
			}
		case "tool", "function":
		default:
			return nil, openaiInvalid(fmt.Sprintf("messages.[%d].role", i), "invalid_value",
				"Invalid value: '%v'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", mm["role"])
		}
		if i == len(msgs)-1 {
			c.toolResult = role == "tool" || role == "function"
			if c.toolResult {
				c.toolResultText = text
			}
		}
	}
	c.system = strings.Join(system, "\n")
	for _, key := range []string{"tools", "functions"} {
		tools, ok := m[key].([]any)
		if m[key] != nil && !ok {
			return nil, openaiInvalid(key, "invalid_type", "Invalid type for '%s': expected an array, but got %s instead.", key, jsonType(m[key]))
		}
		for i, t := range tools {
			tm, _ := t.(map[string]any)
			name := ""
			var schema any
			if key == "functions" {
				name, _ = tm["name"].(string)
				schema = tm["parameters"]
			} else {
				for _, k := range []string{"function", "custom"} {
					if f, ok := tm[k].(map[string]any); ok {
						name, _ = f["name"].(string)
						schema = f["parameters"]
					}
				}
			}
			if name == "" {
				return nil, openaiInvalid(fmt.Sprintf("%s[%d].function.name", key, i), "missing_required_parameter",
					"Missing required parameter: '%s[%d].function.name'.", key, i)
			}
			c.tools = append(c.tools, name)
			c.toolSchemas = append(c.toolSchemas, schema)
		}
		if len(tools) > 0 {
			raw, _ := json.Marshal(tools)
			c.chars += len(raw)
		}
	}
	return c, nil
}

// openaiContent reads a message's content: a string, a list of parts, or null.
func openaiContent(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case []any:
		var parts []string
		has := false
		for _, p := range v {
			if pm, ok := p.(map[string]any); ok && (pm["type"] == "text" || pm["type"] == "input_text") {
				t, _ := pm["text"].(string)
				parts = append(parts, t)
				has = true
			}
		}
		return strings.Join(parts, "\n"), has
	}
	return "", false
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "a value"
}

// Conversation is what a script's match sees of a request: Describe reads it as the server does.
type Conversation struct {
	Model          string
	System         string   // the system prompt (Anthropic's system; OpenAI's system and developer messages), joined by newlines
	User           string   // the text of the last user message that has text
	HasUser        bool     // whether a user message has text
	Tools          []string // the names of the tools offered
	ToolResult     bool     // the conversation ends with a tool result
	ToolResultText string   // its text
	Stream         bool
}

// Describe reads a Messages request (api Anthropic) or a Chat Completions request (OpenAI) as a
// script's rules see it; a request the server would refuse gives its error message.
func Describe(api string, body []byte) (Conversation, error) {
	var c *convo
	var e *apiError
	if api == OpenAI {
		c, e = parseOpenAI(body)
	} else {
		c, e = parseAnthropic(body, false)
	}
	if e != nil {
		return Conversation{}, fmt.Errorf("%s", e.message)
	}
	return Conversation{Model: c.model, System: c.system, User: c.user, HasUser: c.hasUser,
		Tools: c.tools, ToolResult: c.toolResult, ToolResultText: c.toolResultText, Stream: c.stream}, nil
}
