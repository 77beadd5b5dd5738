// Package harness is the Go SDK for oz0 harnesses: the harness side of the harness protocol,
// version 1, the same Session as the byo-agent template's Python harness.
//
//	func main() {
//		harness.Main(func(s *harness.Session) (any, error) {
//			s.Say("Sorting the ticket. ")
//			answer, err := s.Complete(prompt(s.Text()))
//			if err != nil {
//				return nil, err
//			}
//			_, err = s.CallTool("notify_team", map[string]string{"team": "billing"}, notifyTeam)
//			var refused *harness.Refused
//			if errors.As(err, &refused) {
//				s.Say("(The team was not told: " + refused.Reason + ") ")
//			}
//			return answer, nil
//		})
//	}
//
// Main reads the session request from stdin, runs the function, writes its answer as the
// session's result (or its error as the session's error) and exits. stdout is the protocol's
// alone: Main moves file descriptor 1 to stderr before the function runs, so a stray print lands
// in the job's log, and points file descriptor 0 at /dev/null.
package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
)

// Protocols lists the protocol versions this SDK speaks.
var Protocols = harnesskit.Protocols

// ModelTimeout is how long one model call may take.
const ModelTimeout = 600 * time.Second

// AnthropicVersion is the anthropic-version header of model calls.
const AnthropicVersion = "2023-06-01"

// DefaultMaxTokens is the max_tokens of Complete.
const DefaultMaxTokens = 1024

// Func is a harness's agent: it gets the session and returns the answer — text, or anything
// encoding/json can marshal (a json.RawMessage is sent as it is).
type Func func(s *Session) (any, error)

// Refused is the error of CallTool when the job refuses the call: a hook, the default-deny
// policy, a person, or the agent's list of tools (rule 1) said no.
type Refused struct {
	Tool   string
	Reason string
}

func (r *Refused) Error() string { return r.Reason }

// ErrStepLimit is wrapped by the *ModelError of a model call past limits.max_steps; the call was
// not made.
var ErrStepLimit = errors.New("limits.max_steps reached")

// ModelError is a model call that failed: the gateway or the provider answered with an error,
// or did not answer.
type ModelError struct {
	Status  int // the HTTP status; 0 when there was no answer
	Message string
	Err     error // ErrStepLimit, or the transport's error
}

func (e *ModelError) Error() string { return e.Message }
func (e *ModelError) Unwrap() error { return e.Err }

// ProtocolError is a session request this harness cannot work with; Serve answers it with an
// error line that names the versions it speaks (rule 5).
type ProtocolError struct{ Reason string }

func (e *ProtocolError) Error() string { return e.Reason }

// Session is one job's session: the request's fields, and the calls the agent makes back to the
// job. Its methods are safe for concurrent use.
type Session struct {
	req   harnesskit.SessionRequest
	out   *output
	inbox *inbox

	mu    sync.Mutex
	steps int
	ids   int

	client  *http.Client
	baseURL string
	apiKey  string
}

func newSession(req harnesskit.SessionRequest, out *output, inbox *inbox) *Session {
	return &Session{
		req: req, out: out, inbox: inbox,
		client:  &http.Client{Timeout: ModelTimeout},
		baseURL: strings.TrimRight(os.Getenv("ANTHROPIC_BASE_URL"), "/"),
		apiKey:  os.Getenv("ANTHROPIC_API_KEY"),
	}
}

// NewSession returns a Session outside a node, for a unit test of an agent: its events are
// written to w as protocol lines, and its tool calls are refused (there is no node to ask).
func NewSession(req harnesskit.SessionRequest, w io.Writer) *Session {
	in := newInbox()
	in.close("no node to ask: this session does not run under harness.Main")
	return newSession(req, &output{w: harnesskit.NewWriter(w)}, in)
}

// Request is the session request.
func (s *Session) Request() harnesskit.SessionRequest { return s.req }

// Text is the job's input as text: the request's text, else its input (a JSON string as the
// string, anything else as JSON).
func (s *Session) Text() string {
	if s.req.Text != "" {
		return s.req.Text
	}
	in := bytes.TrimSpace(s.req.Input)
	if len(in) == 0 || string(in) == "null" {
		return ""
	}
	var text string
	if json.Unmarshal(in, &text) == nil {
		return text
	}
	return string(in)
}

// Input is the job's input as it came (JSON; null when there is none).
func (s *Session) Input() json.RawMessage {
	if len(s.req.Input) == 0 {
		return json.RawMessage("null")
	}
	return s.req.Input
}

func (s *Session) Job() string {
	if s.req.Job != "" {
		return s.req.Job
	}
	return os.Getenv("OZ0_JOB")
}

func (s *Session) Agent() string {
	if s.req.Agent != "" {
		return s.req.Agent
	}
	return os.Getenv("OZ0_AGENT")
}

func (s *Session) Harness() string                  { return s.req.Harness }
func (s *Session) Model() harnesskit.Model          { return s.req.Model }
func (s *Session) Instructions() string             { return s.req.Instructions }
func (s *Session) Tools() []string                  { return append([]string(nil), s.req.Tools...) }
func (s *Session) Limits() harnesskit.RequestLimits { return s.req.Limits }
func (s *Session) Workdir() string                  { return s.req.Workdir }
func (s *Session) StateDir() string                 { return s.req.StateDir }
func (s *Session) Options() json.RawMessage         { return orRaw(s.req.Options, "{}") }
func (s *Session) write(m harnesskit.Message) error { return s.out.write(m, false) }
func (s *Session) String() string {
	return fmt.Sprintf("Session(job=%q, agent=%q)", s.Job(), s.Agent())
}
func orRaw(r json.RawMessage, def string) json.RawMessage {
	if len(bytes.TrimSpace(r)) == 0 {
		return json.RawMessage(def)
	}
	return r
}

// Say streams text to the job's live view.
func (s *Session) Say(text string) error { return s.write(harnesskit.Say{Text: text}) }

// Log writes a line to the job's trace (not its live view); level is debug, info, warning or
// error ("" is info).
func (s *Session) Log(level, message string) error {
	return s.write(harnesskit.Log{Level: level, Message: message})
}

// Steps is the number of model calls Complete has made.
func (s *Session) Steps() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.steps
}

func (s *Session) takeStep() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A max_steps of 0 is no limit here; the gateway still counts.
	if limit := s.req.Limits.MaxSteps; limit > 0 && s.steps >= limit {
		plural := "s"
		if limit == 1 {
			plural = ""
		}
		return &ModelError{Status: 429, Err: ErrStepLimit, Message: fmt.Sprintf(
			"limits.max_steps reached: this session may make %d model call%s and has made %d", limit, plural, s.steps)}
	}
	s.steps++
	return nil
}

// Complete makes one model call through the node's LLM gateway (Anthropic's Messages API at
// $ANTHROPIC_BASE_URL/v1/messages) with the agent's instructions as the system prompt and prompt
// as the user message, and returns the text of the answer. It counts toward limits.max_steps:
// past it, it returns a *ModelError wrapping ErrStepLimit without calling.
func (s *Session) Complete(prompt string) (string, error) {
	return s.CompleteContext(context.Background(), prompt)
}

// CompleteContext is Complete with a context.
func (s *Session) CompleteContext(ctx context.Context, prompt string) (string, error) {
	if s.baseURL == "" {
		return "", &ModelError{Message: "ANTHROPIC_BASE_URL is not set: run the harness from a node (oz0 dev, oz0 plugin test) or set it to a model API"}
	}
	if err := s.takeStep(); err != nil {
		return "", err
	}
	body := map[string]any{
		"model":      s.req.Model.Name,
		"max_tokens": DefaultMaxTokens,
		"messages":   []map[string]string{{"role": "user", "content": prompt}},
	}
	if s.req.Instructions != "" {
		body["system"] = s.req.Instructions
	}
	data, err := json.Marshal(body)
	if err != nil {
		return "", &ModelError{Message: err.Error(), Err: err}
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, s.baseURL+"/v1/messages", bytes.NewReader(data))
	if err != nil {
		return "", &ModelError{Message: fmt.Sprintf("cannot call the model API at %s: %v", s.baseURL, err), Err: err}
	}
	r.Header.Set("x-api-key", s.apiKey)
	r.Header.Set("anthropic-version", AnthropicVersion)
	r.Header.Set("content-type", "application/json")
	r.Header.Set("accept", "application/json")
	r.Header.Set("Oz0-Job", s.Job())
	r.Header.Set("Oz0-Agent", s.Agent())
	resp, err := s.client.Do(r)
	if err != nil {
		return "", &ModelError{Message: fmt.Sprintf("cannot reach the model API at %s: %v", s.baseURL, err), Err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return "", &ModelError{Status: resp.StatusCode, Message: fmt.Sprintf("the model API did not answer: %v", err), Err: err}
	}
	if resp.StatusCode/100 != 2 {
		return "", &ModelError{Status: resp.StatusCode, Message: fmt.Sprintf("the model API answered %d: %s", resp.StatusCode, errorMessage(raw))}
	}
	var answer struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil || answer.Content == nil {
		return "", &ModelError{Status: resp.StatusCode, Message: fmt.Sprintf("the model API's answer has no content: %.200s", raw)}
	}
	var text strings.Builder
	for _, b := range answer.Content {
		if b.Type == "text" {
			text.WriteString(b.Text)
		}
	}
	return text.String(), nil
}

// errorMessage is the provider's message from an error answer: Anthropic's shape has
// error.type and error.message.
func errorMessage(raw []byte) string {
	var body struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &body) != nil || body.Error == nil {
		s := strings.TrimSpace(strings.ToValidUTF8(string(raw), "\uFFFD"))
		if len(s) > 500 {
			s = s[:500]
		}
		return s
	}
	var e struct{ Type, Message string }
	if json.Unmarshal(body.Error, &e) == nil && e.Message != "" {
		if e.Type != "" {
			return e.Type + ": " + e.Message
		}
		return e.Message
	}
	var s string
	if json.Unmarshal(body.Error, &s) == nil {
		return s
	}
	return string(body.Error)
}

// CallTool asks the job before a tool call, then runs fn with the arguments it allowed (which a
// hook may have changed), and reports the call's result or error to the job. args is anything
// that marshals to a JSON object (nil is {}). It blocks until the job answers: a person's
// approval may take a while. When the job says no, it returns a *Refused and does not run fn.
func (s *Session) CallTool(name string, args any, fn func(args json.RawMessage) (any, error)) (any, error) {
	asked, err := objectJSON(args)
	if err != nil {
		return nil, fmt.Errorf("the arguments of %s: %w", name, err)
	}
	s.mu.Lock()
	s.ids++
	id := "p" + strconv.Itoa(s.ids)
	s.mu.Unlock()

	answer := s.inbox.expect(id)
	if err := s.write(harnesskit.PermissionRequest{ID: id, Tool: name, Arguments: asked}); err != nil {
		s.inbox.forget(id)
		return nil, err
	}
	p := <-answer
	if !p.Allow {
		reason := p.Reason
		if reason == "" {
			reason = "the job denied " + name
		}
		return nil, &Refused{Tool: name, Reason: reason}
	}
	allowed := p.Arguments
	if len(allowed) == 0 {
		allowed = asked
	}
	result, err := fn(allowed)
	if err != nil {
		msg := err.Error()
		if msg == "" {
			msg = fmt.Sprintf("%T", err)
		}
		_ = s.write(harnesskit.ToolResult{ID: id, Tool: name, Error: msg})
		return nil, err
	}
	_ = s.write(harnesskit.ToolResult{ID: id, Tool: name, Result: jsonable(result)})
	return result, nil
}

// objectJSON marshals v, which must make a JSON object.
func objectJSON(v any) (json.RawMessage, error) {
	if v == nil {
		return json.RawMessage("{}"), nil
	}
	var data []byte
	if raw, ok := v.(json.RawMessage); ok {
		data = raw
	} else {
		var err error
		if data, err = marshal(v); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return nil, err
	}
	if buf.Len() == 0 || buf.Bytes()[0] != '{' {
		return nil, fmt.Errorf("not a JSON object: %.40s", buf.Bytes())
	}
	return buf.Bytes(), nil
}

// jsonable is v as JSON, or its fmt.Sprint as a JSON string when it does not marshal.
func jsonable(v any) json.RawMessage {
	if raw, ok := v.(json.RawMessage); ok && json.Valid(raw) {
		return raw
	}
	data, err := marshal(v)
	if err != nil {
		data, _ = marshal(fmt.Sprint(v))
	}
	return data
}

// marshal is json.Marshal without HTML escaping, as the Python template writes JSON.
var marshal = jsonutil.Marshal

// ---- the protocol's lines ----------------------------------------------------------------------

// output writes the harness's lines; after the last (result or error) it writes nothing more.
type output struct {
	w        *harnesskit.Writer
	mu       sync.Mutex
	finished bool
}

var errFinished = errors.New("the session has ended: its last line is written")

func (o *output) write(m harnesskit.Message, last bool) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.finished {
		logf("dropped a %s line after the session's last line", m.MessageType())
		return errFinished
	}
	if last {
		o.finished = true
	}
	return o.w.Encode(m)
}

// inbox routes the node's permission answers to the CallTool that waits for each.
type inbox struct {
	mu      sync.Mutex
	waiters map[string]chan harnesskit.Permission
	closed  string // why, once closed
}

func newInbox() *inbox { return &inbox{waiters: map[string]chan harnesskit.Permission{}} }

func (in *inbox) expect(id string) <-chan harnesskit.Permission {
	c := make(chan harnesskit.Permission, 1)
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed != "" {
		c <- harnesskit.Permission{ID: id, Reason: in.closed}
	} else {
		in.waiters[id] = c
	}
	return c
}

func (in *inbox) forget(id string) {
	in.mu.Lock()
	delete(in.waiters, id)
	in.mu.Unlock()
}

func (in *inbox) deliver(p harnesskit.Permission) {
	in.mu.Lock()
	c, ok := in.waiters[p.ID]
	delete(in.waiters, p.ID)
	in.mu.Unlock()
	if !ok {
		logf("ignored a permission answer for %q: no request of that id is open", p.ID)
		return
	}
	c <- p
}

// close denies every open and every later request with reason.
func (in *inbox) close(reason string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.closed = reason
	for id, c := range in.waiters {
		c <- harnesskit.Permission{ID: id, Reason: reason}
	}
	clear(in.waiters)
}

// readFrom reads the node's lines until the end of stdin.
func (in *inbox) readFrom(r *harnesskit.Reader) {
	defer in.close("the node closed the session before answering")
	for {
		line, err := r.ReadLine()
		if err != nil && !errors.Is(err, harnesskit.ErrInvalidUTF8) {
			if !errors.Is(err, io.EOF) && !errors.Is(err, harnesskit.ErrLineTooLong) {
				logf("stopped reading stdin: %v", err)
				return
			}
			if errors.Is(err, io.EOF) {
				return
			}
			logf("ignored a line on stdin: %v", err)
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		m, err := harnesskit.DecodeNodeMessage(line)
		switch m := m.(type) {
		case harnesskit.Permission:
			in.deliver(m)
		default:
			if err != nil {
				logf("ignored a line on stdin: %v: %.200s", err, line)
			} else {
				logf("ignored a message of type %q on stdin", m.MessageType())
			}
		}
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[oz0 harness] "+format+"\n", args...)
}

// ---- running a session -------------------------------------------------------------------------

func speaks() string {
	vs := make([]string, len(Protocols))
	for i, v := range Protocols {
		vs[i] = strconv.Itoa(v)
	}
	return "this harness speaks protocol " + strings.Join(vs, ", ")
}

// readRequest reads the session request, the first line.
func readRequest(r *harnesskit.Reader) (harnesskit.SessionRequest, error) {
	line, err := r.ReadLine()
	if errors.Is(err, io.EOF) {
		return harnesskit.SessionRequest{}, &ProtocolError{"stdin closed before the session request"}
	}
	if err != nil && !errors.Is(err, harnesskit.ErrInvalidUTF8) {
		return harnesskit.SessionRequest{}, &ProtocolError{"cannot read the session request: " + err.Error()}
	}
	var probe struct {
		Type     *string          `json:"type"`
		Protocol *json.RawMessage `json:"protocol"`
	}
	if json.Unmarshal(line, &probe) != nil {
		return harnesskit.SessionRequest{}, &ProtocolError{"the first line is not a JSON session request"}
	}
	if probe.Type == nil || *probe.Type != harnesskit.TypeSession {
		return harnesskit.SessionRequest{}, &ProtocolError{"the first line is not a session request"}
	}
	version := "none"
	if probe.Protocol != nil {
		version = string(*probe.Protocol)
	}
	ok := false
	for _, v := range Protocols {
		ok = ok || version == strconv.Itoa(v)
	}
	if !ok {
		return harnesskit.SessionRequest{}, &ProtocolError{"the session asks for protocol " + version}
	}
	m, err := harnesskit.DecodeNodeMessage(line)
	if err != nil {
		return harnesskit.SessionRequest{}, &ProtocolError{"the session request is not valid: " + err.Error()}
	}
	return m.(harnesskit.SessionRequest), nil
}

// Serve runs one session over in and out: it reads the session request, calls run, and writes its
// answer as the result, or its error (or panic) as the session's error. It returns nil when it
// wrote a result. A request for a protocol this SDK does not speak is answered with an error that
// names the versions it speaks (rule 5), returned as a *ProtocolError. Serve leaves a goroutine
// reading in until in ends (at the end of the process, for Main).
func Serve(in io.Reader, out io.Writer, run Func) error {
	o := &output{w: harnesskit.NewWriter(out)}
	r := harnesskit.NewReader(in)
	req, err := readRequest(r)
	if err != nil {
		logf("%v", err)
		if werr := o.write(harnesskit.ErrorMessage{Message: err.Error() + ": " + speaks()}, true); werr != nil {
			logf("cannot write the session's last line: %v", werr)
		}
		return err
	}
	box := newInbox()
	go box.readFrom(r)

	output, err := call(run, newSession(req, o, box))
	if err != nil {
		msg := err.Error()
		if msg == "" {
			msg = fmt.Sprintf("%T", err)
		}
		if werr := o.write(harnesskit.ErrorMessage{Message: msg}, true); werr != nil {
			logf("cannot write the session's last line: %v", werr)
		}
		return err
	}
	if werr := o.write(harnesskit.Result{Output: jsonable(output)}, true); werr != nil {
		logf("cannot write the session's last line: %v", werr)
		return werr
	}
	return nil
}

// call runs run, turning a panic into an error.
func call(run Func, s *Session) (output any, err error) {
	defer func() {
		if r := recover(); r != nil {
			logf("panic: %v\n%s", r, debug.Stack())
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return run(s)
}

// Main runs one session of the protocol over the process's stdin and stdout, then exits: 0 after
// a result, 1 after an error. It never returns.
func Main(run Func) {
	in, out, err := takeStdio()
	if err != nil {
		logf("cannot take stdin and stdout for the protocol: %v", err)
		os.Exit(1)
	}
	if err := Serve(in, out, run); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// takeStdio keeps private handles on stdin and stdout for the protocol, then points file
// descriptor 1 (and os.Stdout) at stderr and file descriptor 0 at /dev/null, so nothing else in
// the process can corrupt the protocol. The private handles are close-on-exec: children do not
// inherit them. unix.Dup2 is dup3 on Linux and dup2 on darwin: the same effect on both.
func takeStdio() (in, out *os.File, err error) {
	outFD, err := unix.FcntlInt(1, unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	inFD, err := unix.FcntlInt(0, unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.Dup2(2, 1); err != nil {
		return nil, nil, err
	}
	os.Stdout = os.Stderr
	null, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.Dup2(null, 0); err != nil {
		return nil, nil, err
	}
	unix.Close(null)
	return os.NewFile(uintptr(inFD), "protocol-stdin"), os.NewFile(uintptr(outFD), "protocol-stdout"), nil
}
