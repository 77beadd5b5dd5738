package harnesskit

import (
	"encoding/json"
	"fmt"
	"time"
)

// EventKind says what an Event is.
type EventKind string

// The kinds of Event, in the words of the trace.
const (
	EventSay               EventKind = "say"                // Message is a Say
	EventPermissionRequest EventKind = "permission_request" // Message is a PermissionRequest
	EventPermission        EventKind = "permission"         // Message is the Permission answer sent; By says who decided
	EventToolResult        EventKind = "tool_result"        // Message is a ToolResult
	EventLog               EventKind = "log"                // Message is a Log
	EventResult            EventKind = "result"             // Message is the Result
	EventError             EventKind = "error"              // Message is the ErrorMessage
	// EventStray is a stdout line that is not a protocol message (rule 3): not JSON, not an
	// object, or not valid UTF-8. Text is the line, Note says which. Flag it in the live view.
	EventStray EventKind = "stray"
	// EventIgnored is a message recorded and ignored: of an unknown type (rule 3), after the
	// session's last line (rule 2), or a say, log or tool_result whose fields do not match the
	// protocol. Message is what could be decoded, Text the line, Note why.
	EventIgnored EventKind = "ignored"
	// EventViolation is a stdout line that broke a rule of the protocol and ended the session
	// with a ProtocolViolation: Text is the line (cut at MaxEventText; "" for a line over the
	// limit, which is not kept), Note the End's reason, Rule the rule. The End follows it.
	EventViolation EventKind = "violation"
	// EventStderr is a line of the harness's stderr, its log. Text is the line (cut at
	// MaxStderrLine). With Note and no Text it says that lines were left out (see StderrRate).
	EventStderr EventKind = "stderr"
	// EventEnd is the last event of every session. End is set.
	EventEnd EventKind = "end"
)

// Who decided a permission request, in Event.By.
const (
	BySupervisor = "supervisor" // rule 1, a tool the agent does not list; or the session ended
	ByDecider    = "decider"
)

// Event is one thing that happened in a session, delivered to Spec.Sink in order.
type Event struct {
	Seq     int64     `json:"seq"` // 1, 2, 3, … in the order of delivery
	Time    time.Time `json:"time"`
	Kind    EventKind `json:"kind"`
	Line    int64     `json:"line,omitempty"`    // the stdout line number, for events from stdout
	Message Message   `json:"message,omitempty"` // the protocol message, see the kinds
	By      string    `json:"by,omitempty"`      // EventPermission: BySupervisor or ByDecider
	Text    string    `json:"text,omitempty"`    // EventStray, EventIgnored, EventStderr: the line (valid UTF-8, cut at MaxEventText)
	// Raw is the stdout line as the harness wrote it (without its "\n" or "\r\n"), for every event from stdout
	// but a line over the limit: for checks such as oz0 plugin test's schema validation. It is not
	// in the event's JSON, and it is valid only while the Sink runs (it is the reader's buffer): a
	// Sink that keeps it copies it.
	// A say or log line longer than the read buffer is read in pieces (see PieceSize): Raw is
	// nil for each piece but, when the line went on after its text, the last, where it is the
	// line with its text left out; when such a line turns out not to be JSON, the stray event's
	// Raw is the rest of the line from the fault.
	Raw []byte `json:"-"`
	// More is set on a piece of a long say's or log's text that is not its line's last: the next
	// say or log event of the session goes on with the same text.
	More bool         `json:"more,omitempty"`
	Note string       `json:"note,omitempty"` // why it was flagged or ignored
	Rule ViolatedRule `json:"rule,omitempty"` // EventViolation: the rule broken
	End  *End         `json:"end,omitempty"`  // EventEnd
}

// MaxEventText is the most of a line an Event's Text carries; the rest is cut and the Note says so.
const MaxEventText = 64 << 10

// Status is how a session ended.
type Status string

// The statuses.
const (
	Completed         Status = "completed"          // the harness answered with a result
	Failed            Status = "failed"             // the harness answered with an error, or exited without an answer
	Cancelled         Status = "cancelled"          // Session.Cancel, or the context of Start was done
	TimedOut          Status = "timed_out"          // Limits.Timeout of active time passed
	ProtocolViolation Status = "protocol_violation" // the harness broke a rule of the protocol (End.Rule)
)

// ViolatedRule names the rule of the protocol a ProtocolViolation broke.
type ViolatedRule string

const (
	RuleLineTooLong ViolatedRule = "rule 3"   // a line of stdout over MaxLine
	RuleIDs         ViolatedRule = "ids"      // a reused permission id
	RuleMessages    ViolatedRule = "messages" // a message that does not match the protocol, or too many open permission requests
	RuleKeys        ViolatedRule = "keys"     // a line whose object has a key twice
	RuleResults     ViolatedRule = "results"  // a tool_result for an id never asked, a call not allowed, or another tool
)

// End says how a session ended and why, for a person.
type End struct {
	Status Status `json:"status"`
	// Output is the result's output (Completed).
	Output json.RawMessage `json:"output,omitempty"`
	// Message is the harness's error message (Failed with an error line).
	Message string `json:"message,omitempty"`
	// Reason explains any end but Completed in a sentence a person understands.
	Reason string `json:"reason,omitempty"`
	// Rule is the rule a ProtocolViolation broke; see docs/protocol.md.
	Rule ViolatedRule `json:"rule,omitempty"`
	// ExitCode is the process's exit status, -1 when a signal ended it.
	ExitCode int `json:"exit_code"`
	// Signal is the signal that ended the process, if one did ("killed", "terminated", …).
	Signal string `json:"signal,omitempty"`
	// Killed is true when the process group had to be sent SIGKILL after the grace period.
	Killed bool `json:"killed,omitempty"`
	// StderrTail is the end of the harness's stderr, at most StderrTailSize bytes.
	StderrTail string `json:"stderr_tail,omitempty"`
	// StderrBytes is the size of all of stderr; StderrDropped the lines that were not sent to
	// the sink (over StderrRate), still counted in StderrBytes.
	StderrBytes   int64 `json:"stderr_bytes"`
	StderrDropped int64 `json:"stderr_dropped,omitempty"`
	// Elapsed is the session's wall-clock time; Held the part of it spent waiting for a person
	// (Ask.Hold), which does not count toward Limits.Timeout.
	Elapsed time.Duration `json:"elapsed_ns"`
	Held    time.Duration `json:"held_ns"`
}

// OK reports whether the session completed.
func (e End) OK() bool { return e.Status == Completed }

// String is the end in one line: "completed", or the status and the reason.
func (e End) String() string {
	if e.Status == Completed {
		return string(Completed)
	}
	return fmt.Sprintf("%s: %s", e.Status, e.Reason)
}

// Err returns nil for a completed session, else an error with the end's String.
func (e End) Err() error {
	if e.Status == Completed {
		return nil
	}
	return &EndError{End: e}
}

// EndError is the error of a session that did not complete.
type EndError struct{ End End }

func (e *EndError) Error() string { return e.End.String() }
