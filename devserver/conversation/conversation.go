// Package conversation reads a model call the gateway kept (gateway.Exchange) as a conversation
// (apiv1.Conversation), the same for Anthropic's Messages API and OpenAI's Chat Completions: the
// system prompt, each message by role with its text, tool calls and tool results as blocks, the
// tools offered, and the answer, a streamed one assembled from its server-sent events. The control
// API serves it (to the dev UI, as JSON) and `oz0 job show --calls` prints it: one reading of a
// call for both.
//
// Nothing is cut here: every text is whole as the gateway kept it. What the gateway cut is in the
// exchange's Cut, which becomes a note; so does a body that is not the format's JSON (it is then
// left to the raw view).
package conversation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/gateway"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
)

// Of reads an exchange as a conversation; nil for a call that is none (a models list, a
// count_tokens call still is one: its request is a conversation, its answer a count). mask (the
// secrets' masker; nil: none) masks every text it shows, decoded (mask.go).
func Of(ex *gateway.Exchange, mask func([]byte) []byte) *apiv1.Conversation {
	var format gateway.Format
	switch {
	case strings.HasPrefix(ex.Path, "/anthropic/v1/messages"):
		format = gateway.AnthropicMessages
	case strings.HasSuffix(ex.Path, "/chat/completions"):
		format = gateway.OpenAIChat
	default:
		return nil
	}
	c := &apiv1.Conversation{Format: string(format), Messages: []apiv1.Message{}}
	if ex.Cut != "" {
		c.Notes = append(c.Notes, "Not kept whole: "+ex.Cut+".")
	}
	if ex.Request == "" && ex.Truncated {
		c.Notes = append(c.Notes, "The request was not kept.")
	} else if err := request(c, format, []byte(ex.Request)); err != nil {
		c.Notes = append(c.Notes, fmt.Sprintf("The request is not %s JSON (%v); the Raw view shows it as it was.", format, err))
	}
	c.Answer = answer(format, ex)
	maskConversation(c, mask)
	return c
}

// object is a JSON object whose values are read as needed.
type object map[string]json.RawMessage

func (o object) str(k string) string {
	var s string
	_ = json.Unmarshal(o[k], &s)
	return s
}

func (o object) boolean(k string) bool {
	var b bool
	_ = json.Unmarshal(o[k], &b)
	return b
}

func decode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

// compact is a JSON value as compact text (keys in their order), its strings written plainly
// (canonical); b itself when it is not JSON.
func compact(b json.RawMessage) string {
	if s, ok := jsonutil.Canonical(b); ok {
		return string(s)
	}
	return string(b)
}

// The request fields a conversation shows in its own places; the rest go to Settings.
var shown = map[gateway.Format][]string{
	gateway.AnthropicMessages: {"model", "stream", "system", "messages", "tools"},
	gateway.OpenAIChat:        {"model", "stream", "messages", "tools", "functions"},
}

func request(c *apiv1.Conversation, format gateway.Format, body []byte) error {
	var o object
	if err := decode(body, &o); err != nil {
		return err
	}
	if o == nil {
		return fmt.Errorf("not an object")
	}
	c.Model, c.Stream = o.str("model"), o.boolean("stream")
	var rest []string
	for k := range o {
		if !contains(shown[format], k) {
			rest = append(rest, k)
		}
	}
	if len(rest) > 0 {
		sort.Strings(rest)
		settings := map[string]json.RawMessage{}
		for _, k := range rest {
			settings[k] = o[k]
		}
		b, _ := jsonutil.Marshal(settings)
		c.Settings = compact(b)
	}
	if format == gateway.AnthropicMessages {
		anthropicRequest(c, o)
	} else {
		openaiRequest(c, o)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// textOf is a content that is a string, or a list of blocks whose texts are joined; ok is false
// for content with blocks of other kinds.
func textOf(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var blocks []object
	if json.Unmarshal(raw, &blocks) != nil {
		return "", false
	}
	var parts []string
	for _, b := range blocks {
		if t := b.str("type"); t != "text" && t != "input_text" {
			return "", false
		}
		parts = append(parts, b.str("text"))
	}
	return strings.Join(parts, "\n"), true
}

func other(raw json.RawMessage) apiv1.Block {
	return apiv1.Block{Kind: apiv1.BlockOther, Text: compact(raw)}
}
