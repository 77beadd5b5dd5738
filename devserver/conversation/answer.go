package conversation

import (
	"strings"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/gateway"
)

// answer reads the exchange's answer: a body, or a stream's events assembled.
func answer(format gateway.Format, ex *gateway.Exchange) *apiv1.Answer {
	a := &apiv1.Answer{Status: ex.Status, Streamed: ex.Streamed, Gateway: ex.Gateway}
	if ex.Streamed {
		var all strings.Builder
		for _, ch := range ex.Chunks {
			all.WriteString(ch.Data)
		}
		events := parseSSE(all.String())
		a.Events = len(events)
		if format == gateway.AnthropicMessages {
			anthropicStream(a, events)
		} else {
			openaiStream(a, events)
		}
	} else if ex.Body != "" {
		var err error
		if format == gateway.AnthropicMessages {
			err = anthropicAnswer(a, []byte(ex.Body))
		} else {
			err = openaiAnswer(a, []byte(ex.Body))
		}
		if err != nil {
			a.Blocks = []apiv1.Block{{Kind: apiv1.BlockOther, Text: ex.Body}}
		}
	}
	if u := ex.Usage; u != nil { // the tokens the call was metered with
		a.Usage = &apiv1.AnswerUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens, CacheCreationTokens: u.CacheCreationTokens}
	}
	return a
}

type sseEvent struct{ name, data string }

// parseSSE splits a stream into its events: the event's name and its data lines joined.
func parseSSE(s string) []sseEvent {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	var out []sseEvent
	for _, block := range strings.Split(s, "\n\n") {
		var ev sseEvent
		var data []string
		for _, line := range strings.Split(block, "\n") {
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				ev.name = value
			case "data":
				data = append(data, value)
			}
		}
		if len(data) > 0 {
			ev.data = strings.Join(data, "\n")
			out = append(out, ev)
		}
	}
	return out
}
