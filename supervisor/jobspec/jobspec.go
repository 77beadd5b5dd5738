// Package jobspec turns a job of an agent into the harness session a node runs for it: the input
// the agent takes, the model record its model resolves to, the session request, the gateway grant
// of the session's key, and the output the agent may give. oz0 dev's node and oz0 plugin test's
// conformance kit both build their sessions here and nowhere else, so that the kit certifies the
// very request the node sends.
//
// Decisions a reader would otherwise reverse-engineer:
//   - An agent that sets no limits.max_steps gets 0, no limit, like every other limit it leaves
//     out; lint refuses an explicit value below 1.
//   - A harness that no agent uses (the kit tests it all the same) runs as an agent named after
//     the harness would with nothing set: no instructions, the harness's tools, no options, no
//     limits, the input as text, model {use: default}.
package jobspec

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/gateway"
	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
	"github.com/orchestrator-zero/oz0/internal/textclip"
	"github.com/orchestrator-zero/oz0/plugin"
	"github.com/orchestrator-zero/oz0/schemas"
	"github.com/orchestrator-zero/oz0/supervisor"
)

// Job is one job of an agent, as its session is built from it.
type Job struct {
	ID      string
	Plugin  *plugin.Plugin
	Harness *plugin.Harness
	// Agent is nil for a harness that no agent uses.
	Agent *plugin.Agent
	Input Input
	Model Model
}

// Input is a job's input: as the user gave it, and as the session's JSON "input".
type Input struct {
	Text string
	JSON json.RawMessage
}

// TextInput is text as the input of an agent that takes text: the JSON string of it.
func TextInput(text string) Input {
	b, _ := json.Marshal(text) // a string always encodes
	return Input{Text: text, JSON: b}
}

// Model is what serves a job's model calls: the record, the format the harness speaks to it, and
// the model name the session is told.
type Model struct {
	Record gateway.Record
	Format gateway.Format
	Name   string
}

// ResolveModel resolves the agent's model: {use, name} against the tenant's records for the
// formats harness h speaks (see gateway.ResolveModel); a nil agent is {use: default}. The name is
// the agent's model.name, else the record's model.
func ResolveModel(records []gateway.Record, h *plugin.Harness, a *plugin.Agent) (Model, error) {
	formats := make([]gateway.Format, len(h.Formats))
	for i, f := range h.Formats {
		formats[i] = gateway.Format(f)
	}
	var use, name string
	if a != nil {
		use, name = a.Model.Use, a.Model.Name
	}
	rec, format, err := gateway.ResolveModel(records, use, formats)
	if err != nil {
		// A near miss of a name it may give is a typo (defualt): say the name meant.
		if uses := gateway.Uses(records); !slices.Contains(uses, use) {
			if near, ok := schemas.Closest(use, uses); ok {
				err = fmt.Errorf("%w; did you mean `%s`?", err, near)
			}
		}
		return Model{}, err
	}
	if name == "" {
		name = rec.Model
	}
	return Model{Record: *rec, Format: format, Name: name}, nil
}

// AgentName is the name the session and its key carry: the agent's, or for a harness that no
// agent uses, the harness's.
func (j *Job) AgentName() string {
	if j.Agent == nil {
		return j.Harness.Name
	}
	return j.Agent.Name
}

// Limits are the agent's limits; none for a harness that no agent uses.
func (j *Job) Limits() plugin.Limits {
	if j.Agent == nil {
		return plugin.Limits{}
	}
	return j.Agent.Limits
}

// Tools are what the session may call (rule 1): the agent's harness.tools, else its harness's
// tools; never nil, so that the request says [] rather than null.
func (j *Job) Tools() []string {
	tools := j.Harness.Tools
	if j.Agent != nil {
		tools = j.Plugin.Tools(j.Agent)
	}
	if tools == nil {
		return []string{}
	}
	return slices.Clone(tools)
}

// Request is the session request the node sends. The supervisor fills in the protocol, the
// session's directories and limits.timeout_s (from Spec's Limits.Timeout).
func (j *Job) Request() harnesskit.SessionRequest {
	var instructions string
	var options json.RawMessage
	if a := j.Agent; a != nil {
		instructions = a.InstructionsText
		if len(a.Harness.Options) > 0 {
			options, _ = json.Marshal(a.Harness.Options) // decoded from YAML: always encodes
		}
	}
	return harnesskit.SessionRequest{
		Job: j.ID, Agent: j.AgentName(), Harness: j.Harness.Name,
		Text: j.Input.Text, Input: j.Input.JSON, Instructions: instructions,
		Model:   harnesskit.Model{Name: j.Model.Name, Format: string(j.Model.Format), Record: j.Model.Record.Name},
		Tools:   j.Tools(),
		Limits:  harnesskit.RequestLimits{MaxSteps: j.Limits().MaxSteps},
		Options: options,
	}
}

// Grant is the gateway grant of the session's key: the job's record and the agent's limits.
func (j *Job) Grant() gateway.Grant {
	l := j.Limits()
	return gateway.Grant{
		Job: j.ID, Agent: j.AgentName(), Record: j.Model.Record,
		Limits: gateway.Limits{MaxSteps: l.MaxSteps, MaxTokens: l.MaxTokens, MaxCostUSD: l.MaxCostUSD},
	}
}

// Spec is the session's supervisor.Spec against the gateway at gatewayURL (its faces are
// gatewayURL + "/anthropic" and "/openai") with the session key key, issued for Grant, in the
// node's sandbox. The caller sets what is its own: Decider, Sink, TempDir and Limits.Grace.
func (j *Job) Spec(gatewayURL, key string, sandbox supervisor.Sandbox) supervisor.Spec {
	spec := HarnessSpec(j.Plugin, j.Harness, gatewayURL, sandbox)
	spec.Request = j.Request()
	spec.Env.AnthropicAPIKey, spec.Env.OpenAIAPIKey = key, key
	spec.Limits = supervisor.Limits{Timeout: j.Limits().TimeoutDuration(),
		EventBytes: j.Limits().MaxEventBytes, EventBytesPerSecond: j.Limits().MaxEventBytesPerSecond}
	return spec
}

// HarnessSpec is what every session of harness h of plugin p shares, against the gateway at
// gatewayURL in the node's sandbox: a session made ahead of its job is made with it, and a job's
// Spec is it and the job's own (its request, key and limits).
func HarnessSpec(p *plugin.Plugin, h *plugin.Harness, gatewayURL string, sandbox supervisor.Sandbox) supervisor.Spec {
	return supervisor.Spec{
		Command:   h.Command,
		PluginDir: p.Dir,
		Request:   harnesskit.SessionRequest{Harness: h.Name},
		Env:       supervisor.Env{AnthropicBaseURL: gatewayURL + "/anthropic", OpenAIBaseURL: gatewayURL + "/openai"},
		Sandbox:   sandbox,
	}
}

// requestReserve is room on the session request's line for what the supervisor fills in (the
// session's directories, whose paths are each at most PATH_MAX, the protocol, the timeout) and
// the job's ID.
const requestReserve = 16 << 10

// CheckRequest refuses, as an *InputError, a job whose session request would not fit the
// protocol's line (harnesskit.MaxLine): an input within apiv1.MaxInput always fits beside
// ordinary instructions, and this says so when an agent's own instructions or options are what
// leave no room. The node and the kit check it before a job is made.
func (j *Job) CheckRequest() error {
	r := j.Request()
	input, instructions := apiv1.InputSize(r.Text)+len(r.Input), apiv1.InputSize(r.Instructions)
	r.Job, r.Text, r.Input, r.Instructions = "", "", nil, ""
	rest, err := jsonutil.Marshal(r)
	if err != nil {
		return &InputError{Msg: err.Error()}
	}
	size := input + instructions + len(rest) + requestReserve
	if size <= harnesskit.MaxLine {
		return nil
	}
	return &InputError{Msg: fmt.Sprintf("the session request would be over the protocol's line of %s: the input takes %d bytes in it (as text and as JSON), agent %s's instructions %d and the rest %d; give a shorter input", textclip.SizeName(harnesskit.MaxLine), input, j.AgentName(), instructions, len(rest))}
}
