// Package plugin is a plugin as the node and the conformance kit run it: the manifest, its
// harnesses and its agents with their instructions and schemas read, as typed values. It does no
// I/O: lint.Load is the one loader that reads a plugin directory, checks it, and makes these.
package plugin

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Plugin is a loaded plugin.
type Plugin struct {
	Dir      string // absolute
	Manifest Manifest
	Agents   []*Agent // sorted by name
}

// Manifest is oz0-plugin.yaml.
type Manifest struct {
	APIVersion  string    `json:"apiVersion"`
	Name        string    `json:"name"`
	Version     string    `json:"version"`
	Description string    `json:"description"`
	Runtime     string    `json:"runtime"`
	Harnesses   []Harness `json:"harnesses"`
	AgentDirs   []string  `json:"agents"`
	SkillDirs   []string  `json:"skills"`
}

// The model API formats a harness speaks (Harness.Formats) and a model record serves.
const (
	FormatAnthropicMessages = "anthropic-messages"
	FormatOpenAIChat        = "openai-chat"
)

// Harness is one of the manifest's harnesses.
type Harness struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Command     []string `json:"command"`
	Permissions bool     `json:"permissions"`
	Tools       []string `json:"tools"`
	Formats     []string `json:"formats"`
}

// Agent is an agent definition.
type Agent struct {
	File         string `json:"-"` // relative to the plugin, slash-separated
	Name         string `json:"name"`
	Description  string `json:"description"`
	Runtime      string `json:"runtime"`
	Model        Model  `json:"model"`
	Instructions string `json:"instructions"`
	Input        IO     `json:"-"`
	Output       IO     `json:"-"`
	Limits       Limits `json:"limits"`
	Harness      struct {
		Tools            []string       `json:"tools"`
		RequiresApproval []string       `json:"requires_approval"`
		Options          map[string]any `json:"options"`
	} `json:"harness"`

	// InstructionsText is the prompt file's text.
	InstructionsText string `json:"-"`
}

// Model is an agent's model: {use, name}.
type Model struct {
	Use  string `json:"use"`
	Name string `json:"name"`
}

// IO is an agent's input or output: text, or JSON, checked against a schema when it has one.
type IO struct {
	Kind   string          // "text" or "json"
	Schema json.RawMessage // the JSON Schema as written; nil: none
	// SchemaFile is the schema's path in the plugin when it came from a file, for messages.
	SchemaFile string
	// Compiled is Schema compiled, its $refs to the plugin's files resolved; nil: none.
	Compiled *jsonschema.Schema
}

// Limits are an agent's limits.
type Limits struct {
	MaxSteps   int     `json:"max_steps"`
	Timeout    string  `json:"timeout"`
	MaxTokens  int64   `json:"max_tokens"`
	MaxCostUSD float64 `json:"max_cost_usd"`
	// MaxEventBytes and MaxEventBytesPerSecond bound what a session writes on stdout; 0 is
	// harnesskit's default.
	MaxEventBytes          int64 `json:"max_event_bytes"`
	MaxEventBytesPerSecond int64 `json:"max_event_bytes_per_second"`
	// MaxConcurrent is the most sessions of the agent a node runs at once; 0: no limit of the
	// agent's own (the node's applies).
	MaxConcurrent int `json:"max_concurrent"`
}

// TimeoutDuration is the timeout as a duration; 0 when none is set.
func (l Limits) TimeoutDuration() time.Duration {
	d, _ := time.ParseDuration(l.Timeout) // the loader has checked it
	return d
}

// HarnessName is the harness the agent runs on: runtime harness:NAME.
func (a *Agent) HarnessName() string { return strings.TrimPrefix(a.Runtime, "harness:") }

// Harness finds a harness by name.
func (p *Plugin) Harness(name string) *Harness {
	for i := range p.Manifest.Harnesses {
		if p.Manifest.Harnesses[i].Name == name {
			return &p.Manifest.Harnesses[i]
		}
	}
	return nil
}

// Agent finds an agent by name.
func (p *Plugin) Agent(name string) *Agent {
	for _, a := range p.Agents {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// AgentNames lists the agents' names.
func (p *Plugin) AgentNames() []string {
	names := make([]string, len(p.Agents))
	for i, a := range p.Agents {
		names[i] = a.Name
	}
	return names
}

// Tools are what the agent's sessions may call: its harness.tools, else its harness's tools.
func (p *Plugin) Tools(a *Agent) []string {
	if a.Harness.Tools != nil {
		return a.Harness.Tools
	}
	if h := p.Harness(a.HarnessName()); h != nil {
		return h.Tools
	}
	return nil
}
