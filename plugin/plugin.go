// Package plugin loads a plugin that lints clean into typed values: the manifest, its harnesses
// and its agents with their instructions read. The node, the dev server and the conformance kit
// run plugins from these; `lint` is what checks them, so Load lints first and refuses on errors.
package plugin

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/orchestrator-zero/oz0/lint"
)

// Plugin is a loaded plugin.
type Plugin struct {
	Dir      string // absolute
	Manifest Manifest
	Agents   []*Agent // sorted by name
}

// Manifest is oz0-plugin.yaml.
type Manifest struct {
	APIVersion  string    `yaml:"apiVersion"`
	Name        string    `yaml:"name"`
	Version     string    `yaml:"version"`
	Description string    `yaml:"description"`
	Runtime     string    `yaml:"runtime"`
	Harnesses   []Harness `yaml:"harnesses"`
	AgentDirs   []string  `yaml:"agents"`
	SkillDirs   []string  `yaml:"skills"`
}

// Harness is one of the manifest's harnesses.
type Harness struct {
	Name        string   `yaml:"name"`
	Description string   `yaml:"description"`
	Command     []string `yaml:"command"`
	Permissions bool     `yaml:"permissions"`
	Tools       []string `yaml:"tools"`
	Formats     []string `yaml:"formats"`
}

// Agent is an agent definition.
type Agent struct {
	File         string `yaml:"-"` // relative to the plugin, slash-separated
	Name         string `yaml:"name"`
	Description  string `yaml:"description"`
	Runtime      string `yaml:"runtime"`
	Model        Model  `yaml:"model"`
	Instructions string `yaml:"instructions"`
	Input        IO     `yaml:"input"`
	Output       IO     `yaml:"output"`
	Limits       Limits `yaml:"limits"`
	Harness      struct {
		Tools            []string       `yaml:"tools"`
		RequiresApproval []string       `yaml:"requires_approval"`
		Options          map[string]any `yaml:"options"`
	} `yaml:"harness"`

	// InstructionsText is the prompt file's text.
	InstructionsText string `yaml:"-"`
}

// Model is an agent's model: {use, name}.
type Model struct {
	Use  string `yaml:"use"`
	Name string `yaml:"name"`
}

// IO is an agent's input or output: text, json, or JSON checked against a schema.
type IO struct {
	Kind   string          // "text" or "json"
	Schema json.RawMessage // the JSON Schema, read from its file when given as a path; nil: none
	// SchemaFile is the schema's path when it came from a file, for messages.
	SchemaFile string
	node       *yaml.Node
}

// UnmarshalYAML keeps the node; Load resolves it once the plugin's directory is known.
func (io *IO) UnmarshalYAML(n *yaml.Node) error {
	io.node = n
	return nil
}

// Limits are an agent's limits.
type Limits struct {
	MaxSteps   int     `yaml:"max_steps"`
	Timeout    string  `yaml:"timeout"`
	MaxTokens  int64   `yaml:"max_tokens"`
	MaxCostUSD float64 `yaml:"max_cost_usd"`
}

// TimeoutDuration is the timeout as a duration; 0 when none is set.
func (l Limits) TimeoutDuration() time.Duration {
	d, _ := time.ParseDuration(l.Timeout) // lint has checked it
	return d
}

// HarnessName is the harness the agent runs on: runtime harness:NAME.
func (a *Agent) HarnessName() string { return strings.TrimPrefix(a.Runtime, "harness:") }

// LintError is returned by Load when the plugin has lint errors; the report says which.
type LintError struct{ Report *lint.Report }

func (e *LintError) Error() string {
	n, _ := e.Report.Counts()
	return fmt.Sprintf("the plugin in %s has %d lint error(s); run `oz0 plugin lint %s` and fix them", e.Report.Dir, n, e.Report.Dir)
}

// Load lints the plugin in dir and, when it has no errors, loads it. A plugin with lint errors
// gives a *LintError; one that cannot be read, another error.
func Load(dir string) (*Plugin, *lint.Report, error) {
	rep, err := lint.Run(dir)
	if err != nil {
		return nil, nil, err
	}
	if rep.HasErrors() {
		return nil, rep, &LintError{Report: rep}
	}
	p, err := read(dir)
	return p, rep, err
}

// read decodes a plugin that lints clean.
func read(dir string) (*Plugin, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	p := &Plugin{Dir: abs}
	if err := decodeFile(filepath.Join(abs, lint.ManifestFile), &p.Manifest); err != nil {
		return nil, err
	}
	for _, d := range p.Manifest.AgentDirs {
		entries, err := os.ReadDir(filepath.Join(abs, filepath.FromSlash(d)))
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.IsDir() || strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".yaml") {
				continue
			}
			a := &Agent{File: path.Join(path.Clean(d), e.Name())}
			if err := decodeFile(filepath.Join(abs, filepath.FromSlash(a.File)), a); err != nil {
				return nil, err
			}
			text, err := os.ReadFile(filepath.Join(abs, filepath.FromSlash(a.Instructions)))
			if err != nil {
				return nil, fmt.Errorf("agent %s: %w", a.Name, err)
			}
			a.InstructionsText = string(text)
			for _, io := range []*IO{&a.Input, &a.Output} {
				if err := io.resolve(abs); err != nil {
					return nil, fmt.Errorf("agent %s: %w", a.Name, err)
				}
			}
			p.Agents = append(p.Agents, a)
		}
	}
	sort.Slice(p.Agents, func(i, j int) bool { return p.Agents[i].Name < p.Agents[j].Name })
	return p, nil
}

func decodeFile(name string, v any) error {
	b, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// resolve turns the YAML of input/output into Kind and Schema.
func (io *IO) resolve(dir string) error {
	n := io.node
	io.node = nil
	io.Kind = "text"
	if n == nil {
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		io.Kind = n.Value
		return nil
	}
	var v struct {
		Schema yaml.Node `yaml:"schema"`
	}
	if err := n.Decode(&v); err != nil {
		return err
	}
	io.Kind = "json"
	if v.Schema.Kind == yaml.ScalarNode {
		io.SchemaFile = v.Schema.Value
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(v.Schema.Value)))
		if err != nil {
			return err
		}
		io.Schema = b
		return nil
	}
	var schema any
	if err := v.Schema.Decode(&schema); err != nil {
		return err
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return fmt.Errorf("inline schema: %w", err)
	}
	io.Schema = b
	return nil
}

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
