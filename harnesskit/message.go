package harnesskit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/orchestrator-zero/oz0/internal/jsonutil"
)

// Protocol is the version of the harness protocol this package speaks.
const Protocol = 1

// Protocols lists every protocol version this package speaks.
var Protocols = []int{Protocol}

// The message types, the value of every message's "type".
const (
	// node → harness (stdin)
	TypeSession    = "session"
	TypePermission = "permission"
	// harness → node (stdout)
	TypeSay               = "say"
	TypePermissionRequest = "permission_request"
	TypeToolResult        = "tool_result"
	TypeLog               = "log"
	TypeResult            = "result"
	TypeError             = "error"
)

// The schema files of the protocol's messages in package schemas (github.com/orchestrator-zero/oz0/schemas),
// each with the $id https://raw.githubusercontent.com/orchestrator-zero/oz0/main/schemas/<file>.
const (
	SchemaSession           = "protocol-session.schema.json"
	SchemaPermission        = "protocol-permission.schema.json"
	SchemaSay               = "protocol-say.schema.json"
	SchemaPermissionRequest = "protocol-permission-request.schema.json"
	SchemaToolResult        = "protocol-tool-result.schema.json"
	SchemaLog               = "protocol-log.schema.json"
	SchemaResult            = "protocol-result.schema.json"
	SchemaError             = "protocol-error.schema.json"
	// SchemaHarnessMessage is any line a harness writes: a oneOf over say, permission_request,
	// tool_result, log, result and error, discriminated by "type".
	SchemaHarnessMessage = "protocol-harness-message.schema.json"
	// SchemaNodeMessage is any line a node writes: a session request or a permission answer.
	SchemaNodeMessage = "protocol-node-message.schema.json"
)

// SchemaFor returns the schema file of the message type typ, or "" for a type the protocol does
// not define.
func SchemaFor(typ string) string {
	switch typ {
	case TypeSession:
		return SchemaSession
	case TypePermission:
		return SchemaPermission
	case TypeSay:
		return SchemaSay
	case TypePermissionRequest:
		return SchemaPermissionRequest
	case TypeToolResult:
		return SchemaToolResult
	case TypeLog:
		return SchemaLog
	case TypeResult:
		return SchemaResult
	case TypeError:
		return SchemaError
	}
	return ""
}

// Message is one line of the protocol: SessionRequest, Permission, Say, PermissionRequest,
// ToolResult, Log, Result, ErrorMessage, or Unknown. Each marshals to its wire form, "type"
// included.
type Message interface {
	MessageType() string
}

// Model is the session request's model: the resolved record of the agent's model.
type Model struct {
	Name   string `json:"name"`   // the model name, as the model API takes it
	Format string `json:"format"` // plugin.FormatAnthropicMessages or plugin.FormatOpenAIChat
	Record string `json:"record"` // the tenant's provider record that serves it
}

// RequestLimits is the session request's limits.
type RequestLimits struct {
	// MaxSteps is the most model calls the session may make; 0 is no limit.
	MaxSteps int `json:"max_steps"`
	// TimeoutS is the session's timeout in seconds (active time: waiting for a person does not
	// count); 0 is no limit.
	TimeoutS float64 `json:"timeout_s"`
}

// SessionRequest is the first line the node writes to the harness's stdin.
type SessionRequest struct {
	Protocol     int             `json:"protocol"`
	Job          string          `json:"job"`
	Agent        string          `json:"agent"`
	Harness      string          `json:"harness"`
	Text         string          `json:"text"`         // the job's input as text
	Input        json.RawMessage `json:"input"`        // the job's input as it came; nil is null
	Instructions string          `json:"instructions"` // the prompt file's text
	Model        Model           `json:"model"`
	Tools        []string        `json:"tools"` // the tools the agent may call (rule 1)
	Limits       RequestLimits   `json:"limits"`
	Workdir      string          `json:"workdir"`
	StateDir     string          `json:"state_dir"`
	Options      json.RawMessage `json:"options"` // the agent's harness: options, an object; nil is {}
}

// Permission is the node's answer to a permission request.
type Permission struct {
	ID        string
	Allow     bool            // "decision": "allow" or "deny"
	Arguments json.RawMessage // allow: the arguments to run the tool with, an object (nil sends {}: send the asked ones when they are not changed)
	Reason    string          // deny: why
}

// The values of a permission answer's "decision".
const (
	DecisionAllow = "allow"
	DecisionDeny  = "deny"
)

// Decision returns "allow" or "deny".
func (p Permission) Decision() string {
	if p.Allow {
		return DecisionAllow
	}
	return DecisionDeny
}

// Say is text for the job's live view.
type Say struct {
	Text string `json:"text"`
}

// PermissionRequest asks the job before a tool call. The harness blocks until the answer with
// the same ID arrives.
type PermissionRequest struct {
	ID        string          `json:"id"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"` // an object
}

// ToolResult reports a tool call's result, or its error when Error is not empty.
type ToolResult struct {
	ID     string
	Tool   string
	Result json.RawMessage // any JSON; nil is null; not sent when Error is set
	Error  string
}

// The levels of a log message.
const (
	LevelDebug   = "debug"
	LevelInfo    = "info"
	LevelWarning = "warning"
	LevelError   = "error"
)

// Log is a line for the job's trace (not its live view).
type Log struct {
	Level   string `json:"level"` // debug, info, warning or error; "" is info
	Message string `json:"message"`
}

// Result is the session's answer, its last line.
type Result struct {
	Output json.RawMessage `json:"output"` // text (a JSON string) or any JSON; nil is null
}

// ErrorMessage says the session failed; it is the session's last line.
type ErrorMessage struct {
	Message string `json:"message"`
}

// Unknown is a JSON object whose "type" the protocol does not define (or that has no string
// "type"): recorded and ignored (rule 3).
type Unknown struct {
	Type string          // "" when the object has no string "type"
	Raw  json.RawMessage // the whole object
}

func (SessionRequest) MessageType() string    { return TypeSession }
func (Permission) MessageType() string        { return TypePermission }
func (Say) MessageType() string               { return TypeSay }
func (PermissionRequest) MessageType() string { return TypePermissionRequest }
func (ToolResult) MessageType() string        { return TypeToolResult }
func (Log) MessageType() string               { return TypeLog }
func (Result) MessageType() string            { return TypeResult }
func (ErrorMessage) MessageType() string      { return TypeError }
func (u Unknown) MessageType() string         { return u.Type }

// ---- encoding ---------------------------------------------------------------------------------

// raw returns r, or def when r is empty.
func raw(r json.RawMessage, def string) json.RawMessage {
	if len(bytes.TrimSpace(r)) == 0 {
		return json.RawMessage(def)
	}
	return r
}

func (m SessionRequest) MarshalJSON() ([]byte, error) {
	type wire SessionRequest
	w := wire(m)
	w.Input = raw(m.Input, "null")
	w.Options = raw(m.Options, "{}")
	if w.Tools == nil {
		w.Tools = []string{}
	}
	return marshal(struct {
		Type string `json:"type"`
		wire
	}{TypeSession, w})
}

func (m Permission) MarshalJSON() ([]byte, error) {
	if m.Allow {
		return marshal(struct {
			Type      string          `json:"type"`
			ID        string          `json:"id"`
			Decision  string          `json:"decision"`
			Arguments json.RawMessage `json:"arguments"`
		}{TypePermission, m.ID, DecisionAllow, raw(m.Arguments, "{}")})
	}
	return marshal(struct {
		Type     string `json:"type"`
		ID       string `json:"id"`
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
	}{TypePermission, m.ID, DecisionDeny, m.Reason})
}

func (m Say) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{TypeSay, m.Text})
}

func (m PermissionRequest) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		Type      string          `json:"type"`
		ID        string          `json:"id"`
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
	}{TypePermissionRequest, m.ID, m.Tool, raw(m.Arguments, "{}")})
}

func (m ToolResult) MarshalJSON() ([]byte, error) {
	if m.Error != "" {
		return marshal(struct {
			Type  string `json:"type"`
			ID    string `json:"id"`
			Tool  string `json:"tool"`
			Error string `json:"error"`
		}{TypeToolResult, m.ID, m.Tool, m.Error})
	}
	return marshal(struct {
		Type   string          `json:"type"`
		ID     string          `json:"id"`
		Tool   string          `json:"tool"`
		Result json.RawMessage `json:"result"`
	}{TypeToolResult, m.ID, m.Tool, raw(m.Result, "null")})
}

func (m Log) MarshalJSON() ([]byte, error) {
	level := m.Level
	if level == "" {
		level = LevelInfo
	}
	return marshal(struct {
		Type    string `json:"type"`
		Level   string `json:"level"`
		Message string `json:"message"`
	}{TypeLog, level, m.Message})
}

func (m Result) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		Type   string          `json:"type"`
		Output json.RawMessage `json:"output"`
	}{TypeResult, raw(m.Output, "null")})
}

func (m ErrorMessage) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}{TypeError, m.Message})
}

func (m Unknown) MarshalJSON() ([]byte, error) {
	if len(m.Raw) > 0 {
		return m.Raw, nil
	}
	return marshal(struct {
		Type string `json:"type"`
	}{m.Type})
}

// Encode returns the wire form of m: one compact JSON object, without the newline. Like the
// Python template's, it leaves <, > and & as they are (encoding/json's json.Marshal escapes them)
// and escapes U+2028 and U+2029.
func Encode(m Message) ([]byte, error) { return marshal(m) }

// marshal is json.Marshal without HTML escaping.
var marshal = jsonutil.Marshal

// ---- decoding ---------------------------------------------------------------------------------

// The kinds of line that Decode refuses; a *DecodeError wraps one of them.
var (
	// ErrNotJSON: the line is not JSON (rule 3: stray output).
	ErrNotJSON = errors.New("not JSON")
	// ErrNotObject: the line is JSON but not an object (stray output too).
	ErrNotObject = errors.New("not a JSON object")
	// ErrInvalidMessage: an object of a type the protocol defines whose fields do not match it.
	ErrInvalidMessage = errors.New("not a valid protocol message")
	// ErrDuplicateKey: an object with a member twice ("type", "id", …, compared as they decode,
	// case folded as encoding/json matches a field). JSON parsers differ on which one counts
	// (Go's and Python's take the last), so it is no message at all: a node acts on neither.
	ErrDuplicateKey = errors.New("a key twice")
)

// DecodeError says why a line is not a protocol message.
type DecodeError struct {
	Err    error  // ErrNotJSON, ErrNotObject, ErrInvalidMessage or ErrDuplicateKey
	Type   string // ErrInvalidMessage: the message's type
	Detail string // what is wrong, for a person
	Key    string // ErrDuplicateKey: the key, as the line has it the second time
}

func (e *DecodeError) Error() string {
	switch {
	case e.Err == ErrDuplicateKey:
		return fmt.Sprintf("an object with the key %q twice", e.Key)
	case e.Err == ErrInvalidMessage && e.Detail != "":
		return fmt.Sprintf("%s %s message that is not valid: %s", Article(e.Type), e.Type, e.Detail)
	case e.Err == ErrInvalidMessage:
		return fmt.Sprintf("%s %s message that is not valid", Article(e.Type), e.Type)
	case e.Detail != "":
		return e.Err.Error() + ": " + e.Detail
	}
	return e.Err.Error()
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Article is the indefinite article of word ("a say", "an approval"), for messages that name a
// message type.
func Article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

// envelope has every field of every message, so that one json.Unmarshal reads any line.
// Pointers and RawMessages tell a missing field from an empty one.
type envelope struct {
	Type      *string  `json:"type"`
	Protocol  *int     `json:"protocol"`
	ID        *string  `json:"id"`
	Text      *string  `json:"text"`
	Tool      *string  `json:"tool"`
	Arguments rawValue `json:"arguments"`
	Result    rawValue `json:"result"`
	Error     *string  `json:"error"`
	Level     *string  `json:"level"`
	Message   *string  `json:"message"`
	Output    rawValue `json:"output"`
	Decision  *string  `json:"decision"`
	Reason    *string  `json:"reason"`
}

// rawValue is a JSON value of a line as it is there: a slice of the line, not a copy (decode
// copies it unless the caller gives the line up).
type rawValue []byte

func (r *rawValue) UnmarshalJSON(b []byte) error {
	*r = b
	return nil
}

// raw is the value as a json.RawMessage: the line's bytes when given, else a copy.
func (r rawValue) raw(given bool) json.RawMessage {
	if r == nil || given {
		return json.RawMessage(r)
	}
	return bytes.Clone(r)
}

// DecodeHarnessLine is DecodeHarnessMessage of a line the caller gives up: the message's JSON
// values (a call's arguments, a tool's result, an answer's output) are slices of line rather than
// copies of them, so the caller must never change line again. For a long line read into a buffer
// of its own (Reader.Keep): its values are then held once, not twice.
func DecodeHarnessLine(line []byte) (Message, error) { return decodeHarness(line, true) }

// DecodeHarnessMessage reads one line a harness wrote (without its newline): Say,
// PermissionRequest, ToolResult, Log, Result, ErrorMessage, or Unknown for an object of another
// type (node → harness types included). A line that is not a JSON object, or an object of a
// harness message type whose fields do not match it, or an object with a key twice
// (ErrDuplicateKey, whatever its type), is a *DecodeError. Unknown fields are ignored. Decoding
// copies what it keeps: line may be reused.
func DecodeHarnessMessage(line []byte) (Message, error) { return decodeHarness(line, false) }

func decodeHarness(line []byte, given bool) (Message, error) {
	if m, ok := decodePlainSay(line); ok {
		return m, nil
	}
	env, typ, err := decodeEnvelope(line)
	if err != nil || env == nil {
		return Unknown{Type: typ, Raw: bytes.Clone(line)}, err
	}
	invalid := func(detail string) (Message, error) {
		return nil, &DecodeError{Err: ErrInvalidMessage, Type: typ, Detail: detail}
	}
	switch typ {
	case TypeSay:
		if env.Text == nil {
			return invalid("no text")
		}
		return Say{Text: *env.Text}, nil
	case TypePermissionRequest:
		if env.ID == nil || *env.ID == "" {
			return invalid("no id")
		}
		if env.Tool == nil || *env.Tool == "" {
			return invalid("no tool")
		}
		if !jsonutil.IsObject(json.RawMessage(env.Arguments)) {
			return invalid("arguments is not a JSON object")
		}
		return PermissionRequest{ID: *env.ID, Tool: *env.Tool, Arguments: env.Arguments.raw(given)}, nil
	case TypeToolResult:
		m := ToolResult{Result: env.Result.raw(given)}
		if env.ID != nil {
			m.ID = *env.ID
		}
		if env.Tool != nil {
			m.Tool = *env.Tool
		}
		if env.Error != nil {
			m.Error = *env.Error
		}
		if m.ID == "" {
			return invalid("no id")
		}
		if env.Result == nil && env.Error == nil {
			return invalid("neither result nor error")
		}
		return m, nil
	case TypeLog:
		if env.Message == nil {
			return invalid("no message")
		}
		m := Log{Level: LevelInfo, Message: *env.Message}
		if env.Level != nil && *env.Level != "" {
			m.Level = *env.Level
		}
		return m, nil
	case TypeResult:
		if env.Output == nil {
			return invalid("no output")
		}
		return Result{Output: env.Output.raw(given)}, nil
	case TypeError:
		if env.Message == nil {
			return invalid("no message")
		}
		return ErrorMessage{Message: *env.Message}, nil
	}
	return Unknown{Type: typ, Raw: bytes.Clone(line)}, nil
}

var (
	sayPrefix = []byte(`{"type":"say","text":"`)
	saySuffix = []byte(`"}`)
)

// decodePlainSay decodes a say line as the SDKs write it, {"type":"say","text":"…"} with a text that
// has no escape, without encoding/json: a chatty harness's every line is one, and a general
// decoder costs several times the rest of the line's way to the store. Anything else is left to
// DecodeHarnessMessage's decoder.
func decodePlainSay(line []byte) (Say, bool) {
	if len(line) < len(sayPrefix)+len(saySuffix) || !bytes.HasPrefix(line, sayPrefix) || !bytes.HasSuffix(line, saySuffix) {
		return Say{}, false
	}
	text := line[len(sayPrefix) : len(line)-len(saySuffix)]
	for _, c := range text {
		if c < 0x20 || c == '"' || c == '\\' {
			return Say{}, false
		}
	}
	if !utf8.Valid(text) {
		return Say{}, false
	}
	return Say{Text: string(text)}, true
}

// DecodeNodeMessage reads one line a node wrote: SessionRequest, Permission, or Unknown for
// another type. Like DecodeHarnessMessage, it refuses a line that is
// not an object and a session or permission message that does not match its type.
func DecodeNodeMessage(line []byte) (Message, error) {
	env, typ, err := decodeEnvelope(line)
	if err != nil || env == nil {
		return Unknown{Type: typ, Raw: bytes.Clone(line)}, err
	}
	switch typ {
	case TypeSession:
		var m SessionRequest
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, &DecodeError{Err: ErrInvalidMessage, Type: typ, Detail: typeErrorDetail(err)}
		}
		if env.Protocol == nil {
			return nil, &DecodeError{Err: ErrInvalidMessage, Type: typ, Detail: "no protocol"}
		}
		if m.Input == nil {
			m.Input = json.RawMessage("null")
		}
		return m, nil
	case TypePermission:
		if env.ID == nil || *env.ID == "" {
			return nil, &DecodeError{Err: ErrInvalidMessage, Type: typ, Detail: "no id"}
		}
		m := Permission{ID: *env.ID}
		switch {
		case env.Decision != nil && *env.Decision == DecisionAllow:
			m.Allow = true
			if env.Arguments != nil && !jsonutil.IsObject(json.RawMessage(env.Arguments)) {
				return nil, &DecodeError{Err: ErrInvalidMessage, Type: typ, Detail: "arguments is not a JSON object"}
			}
			m.Arguments = env.Arguments.raw(false)
		case env.Decision != nil && *env.Decision == DecisionDeny:
			if env.Reason != nil {
				m.Reason = *env.Reason
			}
		default:
			return nil, &DecodeError{Err: ErrInvalidMessage, Type: typ, Detail: `decision is neither "allow" nor "deny"`}
		}
		return m, nil
	}
	return Unknown{Type: typ, Raw: bytes.Clone(line)}, nil
}

// decodeEnvelope parses line into an envelope. It returns env == nil and err == nil for an
// object of unknown type (typ is its type, or "").
func decodeEnvelope(line []byte) (env *envelope, typ string, err error) {
	trimmed := bytes.TrimLeft(line, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		if json.Valid(line) {
			return nil, "", &DecodeError{Err: ErrNotObject}
		}
		return nil, "", &DecodeError{Err: ErrNotJSON}
	}
	env = new(envelope)
	uerr := json.Unmarshal(line, env)
	var syn *json.SyntaxError
	if errors.As(uerr, &syn) || (uerr != nil && !json.Valid(line)) {
		return nil, "", &DecodeError{Err: ErrNotJSON, Detail: uerr.Error()}
	}
	// The JSON is valid: before its type is trusted, each member must come once ("say" then
	// "result" is taken last-wins by encoding/json, first-wins by other parsers).
	if key, dup := jsonutil.DuplicateMember(line); dup {
		return nil, "", &DecodeError{Err: ErrDuplicateKey, Key: key}
	}
	if env.Type == nil {
		return nil, "", nil
	}
	typ = *env.Type
	if SchemaFor(typ) == "" {
		return nil, typ, nil
	}
	if uerr != nil {
		return nil, typ, &DecodeError{Err: ErrInvalidMessage, Type: typ, Detail: typeErrorDetail(uerr)}
	}
	return env, typ, nil
}

// typeErrorDetail explains a json.Unmarshal error about a field's type.
func typeErrorDetail(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("%s is %s, not %s", te.Field, te.Value, jsonKind(te.Type.Kind().String()))
	}
	return err.Error()
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "int", "int64", "float64":
		return "a number"
	case "slice":
		return "an array"
	case "struct", "map":
		return "an object"
	case "bool":
		return "a boolean"
	}
	return strconv.Quote(goKind)
}
