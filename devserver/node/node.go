// Package node runs the dev server's jobs: one harness session per job through harnesskit, its
// events written to the job store before anyone sees them, its model calls through the gateway
// under a key of the job's own, and the job's end recorded with its reason. A session that fails
// fails the job; it is not retried.
package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/orchestrator-zero/oz0/devserver/gateway"
	"github.com/orchestrator-zero/oz0/devserver/store"
	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/plugin"
)

// Plugins gives the plugins as they are now: new jobs take the current ones, running jobs keep
// the ones they started with.
type Plugins interface {
	Plugins() []*plugin.Plugin
}

// Records gives the tenant's provider records, in the tenant's order.
type Records interface {
	Records() []gateway.Record
}

// Decider decides a job's permission requests for tools its agent lists. Who says who decided
// (e.g. "hook:NAME", "person", "policy"), for the trace.
type Decider interface {
	Decide(ctx context.Context, job *Job, ask *harnesskit.Ask) (d harnesskit.Decision, who string)
}

// AllowListed allows every call of a listed tool: the dev server's policy until hooks decide.
type AllowListed struct{}

// Decide allows.
func (AllowListed) Decide(context.Context, *Job, *harnesskit.Ask) (harnesskit.Decision, string) {
	return harnesskit.Allow(nil), "policy"
}

// Config wires a Node.
type Config struct {
	Store   *store.Store
	Keys    *gateway.MemResolver
	Gateway *gateway.Gateway
	Plugins Plugins
	Records Records
	Decider Decider // nil: AllowListed
	// GatewayURL is the gateway's base URL as sessions reach it: its faces are GatewayURL +
	// "/anthropic" and "/openai".
	GatewayURL string
	// Mask hides secret values in what the node writes outside the store (the job's output).
	Mask func([]byte) []byte
	// TempDir holds the sessions' directories; "" is os.TempDir().
	TempDir string
	// Grace is the sessions' grace period; 0 is harnesskit.DefaultGrace.
	Grace  time.Duration
	Logger *slog.Logger
	// BeforeEnd is called when a session has ended, before the job's end is recorded: the dev
	// server waits there for the job's model calls still being metered.
	BeforeEnd func(job string)
}

// Node runs jobs.
type Node struct {
	cfg Config

	mu      sync.Mutex
	running map[string]*Job
	wg      sync.WaitGroup
	closed  bool
}

// Job is a running job.
type Job struct {
	ID      string
	Agent   *plugin.Agent
	Plugin  *plugin.Plugin
	Harness *plugin.Harness
	Record  gateway.Record

	mu       sync.Mutex
	session  *harnesskit.Session
	cancel   bool // cancelled before its session started
	asked    map[string]json.RawMessage
	tools    map[string]string
	deciders map[string]string // permission id → who decided
	rec      *recorder
}

// New returns a node.
func New(cfg Config) *Node {
	if cfg.Decider == nil {
		cfg.Decider = AllowListed{}
	}
	if cfg.Mask == nil {
		cfg.Mask = func(b []byte) []byte { return b }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Node{cfg: cfg, running: map[string]*Job{}}
}

// InputError is a job input that the agent does not take; no job was made.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

// ErrUnknownAgent is wrapped by the error for an agent no loaded plugin has.
var ErrUnknownAgent = errors.New("unknown agent")

// ErrClosed is returned by Submit once the node is closing.
var ErrClosed = errors.New("the node is shutting down")

// Submit makes a job for agent with input as the user gave it, and starts it.
func (n *Node) Submit(agentName, input string) (store.Job, error) {
	p, a := n.findAgent(agentName)
	if a == nil {
		var names []string
		for _, p := range n.cfg.Plugins.Plugins() {
			names = append(names, p.AgentNames()...)
		}
		return store.Job{}, fmt.Errorf("%w %q; the dev server runs: %s", ErrUnknownAgent, agentName, strings.Join(names, ", "))
	}
	h := p.Harness(a.HarnessName())
	inputJSON, err := parseInput(a, input)
	if err != nil {
		return store.Job{}, err
	}
	formats := make([]gateway.Format, len(h.Formats))
	for i, f := range h.Formats {
		formats[i] = gateway.Format(f)
	}
	rec, _, err := gateway.ResolveModel(n.cfg.Records.Records(), a.Model.Use, formats)
	if err != nil {
		return store.Job{}, fmt.Errorf("agent %s: %w", a.Name, err)
	}
	model := a.Model.Name
	if model == "" {
		model = rec.Model
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return store.Job{}, ErrClosed
	}
	n.wg.Add(1)
	n.mu.Unlock()
	rec2 := *rec
	j, err := n.cfg.Store.CreateJob(store.NewJob{
		Agent: a.Name, Plugin: p.Manifest.Name, Input: inputJSON, InputText: input,
		ModelRecord: rec.Name, ModelName: model,
		Limits: store.Limits{MaxSteps: a.Limits.MaxSteps, Timeout: a.Limits.TimeoutDuration()},
	})
	if err != nil {
		n.wg.Done()
		return store.Job{}, err
	}
	job := &Job{ID: j.ID, Agent: a, Plugin: p, Harness: h, Record: rec2,
		asked: map[string]json.RawMessage{}, tools: map[string]string{}, deciders: map[string]string{}}
	n.mu.Lock()
	n.running[j.ID] = job
	n.mu.Unlock()
	go n.run(job, j, model)
	return j, nil
}

func (n *Node) findAgent(name string) (*plugin.Plugin, *plugin.Agent) {
	for _, p := range n.cfg.Plugins.Plugins() {
		if a := p.Agent(name); a != nil {
			return p, a
		}
	}
	return nil, nil
}

// parseInput turns the user's input into the job's input: a JSON string for a text agent; for
// an agent that takes JSON, the parsed value, checked against its schema.
func parseInput(a *plugin.Agent, input string) (json.RawMessage, error) {
	if a.Input.Kind != "json" {
		return json.Marshal(input)
	}
	// encoding/json checks the whole input first, so every syntax error, a truncated or a
	// trailing one too, comes with its offset.
	if err := json.Unmarshal([]byte(input), new(json.RawMessage)); err != nil {
		return nil, &InputError{Msg: fmt.Sprintf("agent %s takes JSON input, and this is not JSON: %s", a.Name, jsonErrorAt(input, err))}
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(input)))
	if err != nil {
		return nil, &InputError{Msg: fmt.Sprintf("agent %s takes JSON input, and this is not JSON: %v", a.Name, err)}
	}
	if sch := a.Input.Compiled; sch != nil {
		if err := sch.Validate(v); err != nil {
			return nil, &InputError{Msg: fmt.Sprintf("the input does not match agent %s's input schema: %s", a.Name, schemaError(err))}
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(input)); err != nil {
		return nil, &InputError{Msg: err.Error()}
	}
	return buf.Bytes(), nil
}

// jsonErrorAt names the line and column of a JSON syntax error: of the character that is wrong,
// or, when the input ends too soon, just past its end.
func jsonErrorAt(input string, err error) string {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return err.Error()
	}
	if strings.TrimSpace(input) == "" {
		return "the input is empty"
	}
	at := int(se.Offset) - 1 // the offset counts the wrong character
	if strings.HasSuffix(se.Error(), "end of JSON input") {
		at = len(strings.TrimRight(input, " \t\r\n"))
	}
	at = max(0, min(at, len(input)))
	line, col := 1, 1
	for _, r := range input[:at] {
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("line %d, column %d: %s", line, col, se.Error())
}

// schemaError is a validation error in one line: each leaf at its JSON pointer.
func schemaError(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var parts []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + joinPath(e.InstanceLocation)
			parts = append(parts, fmt.Sprintf("at %s: %s", loc, e.ErrorKind.LocalizedString(printer)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(parts) > 5 {
		parts = append(parts[:5], fmt.Sprintf("and %d more", len(parts)-5))
	}
	return joinSemi(parts)
}

var printer = message.NewPrinter(language.English)

func joinPath(p []string) string {
	var b bytes.Buffer
	for i, s := range p {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(s)
	}
	return b.String()
}

func joinSemi(parts []string) string {
	var b bytes.Buffer
	for i, s := range parts {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(s)
	}
	return b.String()
}
