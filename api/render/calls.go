package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/internal/termtext"
)

// Calls prints a job's model calls as `oz0 job show --calls` shows them: for each, a line with
// what the meter says (model, status, tokens, cost, latency), then the conversation the dev UI
// shows (apiv1.Conversation: the system prompt, each message by role, tool calls (→) and their
// results (←), the tools offered, and the answer), every text whole and made safe for a terminal.
// What the gateway did not keep is said, never left out silently.
func Calls(w io.Writer, calls []apiv1.ModelCall) error {
	p := &printer{w: w}
	for i, c := range calls {
		if i > 0 {
			p.line("")
		}
		p.call(c)
	}
	return p.err
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) line(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
	}
}

// text prints a text under a heading, each line indented; an empty text says so.
func (p *printer) text(indent, s string) {
	if s == "" {
		p.line("%s(empty)", indent)
		return
	}
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if l == "" {
			p.line("") // no trailing spaces
			continue
		}
		p.line("%s%s", indent, termtext.OneLine(l))
	}
}

// meter is what a model_call event says of its call.
type meter struct {
	Record, Model, Format, Endpoint, Refused, Error, Aborted string
	Status, Step                                             int
	InputTokens                                              int64    `json:"input_tokens"`
	OutputTokens                                             int64    `json:"output_tokens"`
	CacheRead                                                int64    `json:"cache_read_input_tokens"`
	CacheWrite                                               int64    `json:"cache_creation_input_tokens"`
	CostUSD                                                  *float64 `json:"cost_usd"`
	LatencyMS                                                float64  `json:"latency_ms"`
	Streamed, Replayed                                       bool
}

func (p *printer) call(c apiv1.ModelCall) {
	var m meter
	_ = json.Unmarshal(c.Meter, &m)
	head := []string{fmt.Sprintf("model call %d", c.N)}
	if m.Step > 0 {
		head = append(head, fmt.Sprintf("step %d", m.Step))
	}
	head = append(head, fmt.Sprintf("%s (record %s)", m.Model, m.Record), m.Format)
	if m.Streamed {
		head = append(head, "streamed")
	}
	if m.Replayed {
		head = append(head, "replayed")
	}
	head = append(head, fmt.Sprintf("status %d", m.Status))
	if m.Refused != "" {
		head = append(head, "refused by "+m.Refused)
	}
	if m.Aborted != "" {
		head = append(head, "aborted ("+m.Aborted+")")
	}
	tokens := fmt.Sprintf("%d input, %d output tokens", m.InputTokens, m.OutputTokens)
	if m.CacheRead > 0 || m.CacheWrite > 0 {
		tokens += fmt.Sprintf(" (cache: %d read, %d written)", m.CacheRead, m.CacheWrite)
	}
	head = append(head, tokens)
	if m.CostUSD != nil {
		head = append(head, "$"+strconv.FormatFloat(*m.CostUSD, 'f', -1, 64))
	}
	head = append(head, strconv.FormatFloat(m.LatencyMS, 'f', -1, 64)+" ms")
	p.line("%s", termtext.OneLine(strings.Join(head, " · ")))
	if m.Error != "" && m.Refused == "" {
		p.line("  error: %s", termtext.OneLine(m.Error))
	}
	conv := c.Conversation
	if conv == nil {
		if len(c.Exchange) == 0 {
			p.line("  (not kept: oz0 dev ran with --no-record, or the job with oz0 run --no-record)")
		} else {
			p.line("  (not a conversation: the exchange is in --json)")
		}
		return
	}
	for _, n := range conv.Notes {
		p.line("  note: %s", termtext.OneLine(n))
	}
	if conv.Settings != "" {
		p.line("  settings: %s", termtext.OneLine(conv.Settings))
	}
	if conv.System != "" {
		p.line("  system:")
		p.text("    ", conv.System)
	}
	if len(conv.Tools) > 0 {
		names := make([]string, len(conv.Tools))
		for i, t := range conv.Tools {
			names[i] = t.Name
		}
		p.line("  tools offered: %s", termtext.OneLine(strings.Join(names, ", ")))
	}
	for _, msg := range conv.Messages {
		p.line("  %s:", termtext.OneLine(msg.Role))
		p.blocks(msg.Blocks)
	}
	a := conv.Answer
	if a == nil {
		return
	}
	what := "answer"
	switch {
	case a.Gateway:
		what = "answer (the gateway's, not the model's)"
	case a.Streamed:
		what = fmt.Sprintf("answer (streamed, %d events)", a.Events)
	}
	if a.StopReason != "" {
		what += ", stop reason " + a.StopReason
	}
	p.line("  %s:", termtext.OneLine(what))
	if a.Error != "" {
		p.line("    error: %s", termtext.OneLine(a.Error))
	}
	p.blocks(a.Blocks)
	if len(a.Blocks) == 0 && a.Error == "" {
		p.line("    (no content)")
	}
}

func (p *printer) blocks(bs []apiv1.Block) {
	for _, b := range bs {
		switch b.Kind {
		case apiv1.BlockText:
			p.text("    ", b.Text)
		case apiv1.BlockThinking:
			p.line("    (thinking)")
			p.text("      ", b.Text)
		case apiv1.BlockToolCall:
			p.line("    → %s %s%s", termtext.OneLine(b.Name), termtext.OneLine(b.Input), id(b.ID))
		case apiv1.BlockToolResult:
			what := "←"
			if b.IsError {
				what = "← (error)"
			}
			p.line("    %s%s", what, id(b.ID))
			p.text("      ", b.Text)
		case apiv1.BlockImage:
			p.line("    (image: %s)", termtext.OneLine(b.Text))
		default:
			p.line("    (%s) %s", termtext.OneLine(b.Kind), termtext.OneLine(b.Text))
		}
	}
}

func id(s string) string {
	if s == "" {
		return ""
	}
	return " [" + termtext.OneLine(s) + "]"
}
