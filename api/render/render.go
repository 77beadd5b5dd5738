// Package render turns a job's event stream into the text `oz0 run` shows, line for line as the
// product guide prints it, every control character of what the harness, a model or a tool said
// made visible (termtext.Visible):
//
//	acme-triage: Sorting the ticket.
//	acme-triage → notify_team {"summary":"…","team":"billing"}
//	acme-triage ← notify_team told the billing team: …
//	billing: Sorry about the double charge; we have refunded the second one.
package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
	"github.com/orchestrator-zero/oz0/internal/termtext"
	"github.com/orchestrator-zero/oz0/internal/traceback"
)

// Stream renders events for one agent's job. It is not safe for concurrent use.
type Stream struct {
	w     io.Writer
	agent string

	inSay   bool   // a say line is open: its prefix is written
	pending string // trailing whitespace of the open say line, written only if more text follows
	// said is the text said since the last line that was not a say: a result that repeats it
	// (a framework that streams its answer, then returns it) is not shown twice. Past maxSaid it
	// is dropped (saidOver) and the result shown, rather than all a flood said kept.
	said     strings.Builder
	saidOver bool
}

// maxSaid bounds what a Stream keeps of the text said, to compare with the result.
const maxSaid = 4 << 20

// New returns a renderer writing to w for the named agent.
func New(w io.Writer, agent string) *Stream { return &Stream{w: w, agent: agent} }

// Event renders one event. Events the live view does not show (logs, stderr, model calls, status
// changes) write nothing.
func (s *Stream) Event(ev apiv1.Event) error {
	switch ev.Type {
	case apiv1.EventSay:
		var d struct{ Text string }
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		return s.say(d.Text)
	case apiv1.EventPermissionRequest:
		var d struct {
			Tool      string
			Arguments json.RawMessage
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		return s.line("%s → %s %s", s.agent, d.Tool, CompactJSON(d.Arguments))
	case apiv1.EventPermissionDecision:
		var d struct {
			Tool, Decision, Reason, By string
			Arguments                  json.RawMessage
			Changed                    bool
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		switch {
		case d.Decision == "deny":
			who := by(d.By)
			if name, ok := strings.CutPrefix(d.By, "hook:"); ok && strings.HasPrefix(d.Reason, "hook "+name+" ") {
				who = "" // a failed hook's reason names it: "hook NAME failed: …"
			}
			return s.line("%s ✗ %s refused%s: %s", s.agent, d.Tool, who, d.Reason)
		case d.Changed:
			return s.line("%s → %s %s (arguments changed%s)", s.agent, d.Tool, CompactJSON(d.Arguments), by(d.By))
		}
		return nil
	case apiv1.EventToolResult:
		var d struct {
			Tool   string
			Result json.RawMessage
			Error  string
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		if d.Error != "" {
			return s.line("%s ← %s failed: %s", s.agent, d.Tool, d.Error)
		}
		return s.line("%s ← %s %s", s.agent, d.Tool, Text(d.Result))
	case apiv1.EventStrayOutput:
		var d struct{ Line, Note string }
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		what := "not protocol JSON"
		if strings.HasPrefix(d.Note, "not valid UTF-8") {
			what = "not valid UTF-8" // it may well be JSON
		}
		return s.line("%s ! stray output (%s): %s", s.agent, what, d.Line)
	case apiv1.EventViolation:
		var d struct{ Message string }
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		return s.line("%s ! %s", s.agent, d.Message)
	case apiv1.EventResult:
		var d struct{ Output json.RawMessage }
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		out := Text(d.Output)
		// Streamed already, word for word: what was said since the last line ends with it (a
		// harness says a sub-agent's answer after the agent's name, "[billing] …").
		if said, words := strings.Fields(s.said.String()), strings.Fields(out); !s.saidOver && len(words) > 0 && len(said) >= len(words) && slices.Equal(said[len(said)-len(words):], words) {
			return s.endSay()
		}
		return s.line("%s", out)
	}
	return nil
}

// Close ends an open say line.
func (s *Stream) Close() error { return s.endSay() }

// by says who decided a call, from the trace's word for it: person, hook:NAME, node, policy.
func by(who string) string {
	switch {
	case who == "":
		return ""
	case who == "person":
		return " by a person"
	case who == "node":
		return " by the node"
	case strings.HasPrefix(who, "hook:"):
		return " by hook " + strings.TrimPrefix(who, "hook:")
	}
	return " by " + who
}

// say streams text under the agent's prefix, a prefix at the start of every line. Trailing
// whitespace is held back until more text comes, so a line never ends in spaces, and blank
// lines are dropped.
func (s *Stream) say(text string) error {
	switch {
	case s.saidOver:
	case s.said.Len()+len(text) > maxSaid:
		s.said, s.saidOver = strings.Builder{}, true
	default:
		s.said.WriteString(text)
	}
	text = termtext.Visible(text) // a say must not move the cursor, nor rewrite the lines above it
	for text != "" {
		line, rest, nl := strings.Cut(text, "\n")
		body := strings.TrimRight(line, " \t")
		if body != "" {
			if !s.inSay {
				if _, err := fmt.Fprintf(s.w, "%s: ", s.agent); err != nil {
					return err
				}
				s.inSay = true
			}
			if _, err := io.WriteString(s.w, s.pending+body); err != nil {
				return err
			}
			s.pending = ""
		}
		s.pending += line[len(body):]
		if nl {
			if err := s.endSay(); err != nil {
				return err
			}
		}
		text = rest
	}
	return nil
}

func (s *Stream) endSay() error {
	s.pending = ""
	if !s.inSay {
		return nil
	}
	s.inSay = false
	_, err := io.WriteString(s.w, "\n")
	return err
}

// line writes one line (or several: a result may have newlines) with its controls made visible:
// tool names, arguments, results, reasons and stray output come from the harness, a model or a
// tool.
func (s *Stream) line(format string, args ...any) error {
	s.said.Reset()
	s.saidOver = false
	if err := s.endSay(); err != nil {
		return err
	}
	_, err := io.WriteString(s.w, termtext.Visible(fmt.Sprintf(format, args...))+"\n")
	return err
}

// Text shows a JSON value as a person reads it: a string as itself, anything else as compact
// JSON with sorted keys.
func Text(v json.RawMessage) string {
	var str string
	if err := json.Unmarshal(v, &str); err == nil {
		return str
	}
	return CompactJSON(v)
}

// CompactJSON re-encodes a JSON value compactly with object keys sorted, as the guide shows tool
// arguments; what is not JSON comes back as it was.
func CompactJSON(v json.RawMessage) string {
	if len(bytes.TrimSpace(v)) == 0 {
		return "{}"
	}
	var x any
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		return string(v)
	}
	b, err := jsonutil.Marshal(x)
	if err != nil {
		return string(v)
	}
	return string(b)
}

// SessionStart says in one line how a job's session was made, as oz0 job show prints it; "" for
// a job that has had no session.
func SessionStart(s *apiv1.SessionStart) string {
	if s == nil {
		return ""
	}
	var line string
	switch s.Start {
	case apiv1.SessionMadeAhead:
		line = fmt.Sprintf("made ahead, %s before its job", s.BoundAt.Sub(s.MadeAt).Round(time.Millisecond))
	case apiv1.SessionForkedAhead:
		line = fmt.Sprintf("forked ahead from its harness's fork server, %s before its job", s.BoundAt.Sub(s.MadeAt).Round(time.Millisecond))
	case apiv1.SessionForked:
		line = fmt.Sprintf("forked at its job from its harness's fork server, made %s before", s.BoundAt.Sub(s.MadeAt).Round(time.Millisecond))
	default:
		line = "cold: made at its job"
		if s.Why != "" {
			line += " (" + s.Why + ")"
		}
		return line
	}
	var loaded struct {
		Modules int      `json:"modules"`
		Warmed  []string `json:"warmed"`
		Seconds float64  `json:"seconds"`
	}
	if json.Unmarshal(s.Loaded, &loaded) == nil && loaded.Modules > 0 {
		line += fmt.Sprintf(": %d modules loaded in %.1f s", loaded.Modules, loaded.Seconds)
		if len(loaded.Warmed) > 0 {
			line += ", " + strings.Join(loaded.Warmed, " and ") + " warmed up"
		}
	}
	if s.Why != "" {
		line += " (" + s.Why + ")"
	}
	return line
}

// TracebackFrames are the last n frames of a traceback a job failed with, innermost last, each on
// a line as oz0 run and oz0 job show print them ("src/acme/agent.py:15, in notify_team: return
// x[team]"); a traceback whose frames cannot be read gives its last n lines.
func TracebackFrames(tb []string, n int) []string {
	frames := traceback.Frames(tb)
	var out []string
	if len(frames) == 0 {
		for _, l := range tb[max(0, len(tb)-n):] {
			out = append(out, strings.TrimSpace(l))
		}
		return out
	}
	for _, f := range frames[max(0, len(frames)-n):] {
		out = append(out, f.String())
	}
	return out
}
