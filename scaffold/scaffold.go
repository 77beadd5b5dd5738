// Package scaffold writes a new plugin from a template embedded in the binary. A plugin is
// rendered whole in memory, written into a temporary directory beside the target and renamed
// into place, so a failure never leaves half a plugin behind.
package scaffold

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"text/template"
	"unicode/utf8"

	"github.com/orchestrator-zero/oz0/api/discovery"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
	"github.com/orchestrator-zero/oz0/schemas"
)

// Template is one entry of the catalogue.
type Template struct {
	Name        string
	Description string
	// NextSteps are the commands that get a new plugin of the template tested, in order, after
	// cd into it.
	NextSteps []string
	// NeedsTool is the program NextSteps run (uv, npm). WithoutTool, when set, is the command
	// that tests a new plugin without it, for when NeedsTool is not installed.
	NeedsTool, WithoutTool string
	// layers are the directories under templates/ the plugin is rendered from, in order: a file
	// of a later layer replaces one of the same path in an earlier one. Templates share files
	// (the Python harness) through a common layer, so that there is one source of each.
	layers []string
}

// agentLayer holds what every template shares: the agent definition and its instructions.
// pythonLayer holds what every Python template shares: the harness protocol (harness.py), the
// package's __main__ and its tests over a pipe. frameworkLayer adds what the Python templates of
// an agent framework share: AGENTS.md, the skill, and tests of the wiring on the framework uv
// installs. mcpLayer adds the test of an MCP server's tool that Strands and Agent Framework share
// (test_mcp.py, over a tiny server, mcp_server.py); each brings the agent it runs, mcp_agent.py.
// nodeLayer is the Node kit: the harness protocol (harness.mjs), its entry (main.mjs),
// its tests over a pipe and the CI workflow.
const (
	agentLayer     = "_agent"
	pythonLayer    = "_python"
	frameworkLayer = "_framework"
	mcpLayer       = "_mcp"
	nodeLayer      = "_node"
)

// The first commands in a new plugin: its dependencies installed, its tests run, lint.
var (
	pythonSteps = []string{"uv lock && uv sync", "uv run pytest", "oz0 plugin lint"}
	nodeSteps   = []string{"npm ci", "npm test", "oz0 plugin lint"}
)

// pythonStdlibTests runs byo-agent's tests on the standard library alone, as its README says: they
// need nothing uv installs. A framework template's tests run its framework, which uv installs.
const pythonStdlibTests = "python3 -m unittest discover -s tests -v"

// catalogue lists the templates in the order `oz0 plugin templates` shows them. Each has a
// directory of the same name under templates/, its last layer. A description starts with what
// tells it apart (language, framework, model API) and fits a terminal of 80 columns beside its
// name (cmd/oz0's TestPluginTemplatesFit); what every template does (its model on the gateway,
// its tool calls asked first) is said once, in docs/templates.md.
var catalogue = []Template{
	{Name: "byo-agent", Description: "Python: your own agent loop, LangGraph graph or CrewAI crew",
		NextSteps: pythonSteps, NeedsTool: "uv", WithoutTool: pythonStdlibTests, layers: []string{agentLayer, pythonLayer, "byo-agent"}},
	{Name: "agent-framework", Description: "Python: Microsoft Agent Framework, on OpenAI Chat Completions",
		NextSteps: pythonSteps, NeedsTool: "uv", layers: []string{agentLayer, pythonLayer, frameworkLayer, mcpLayer, "agent-framework"}},
	{Name: "adk", Description: "Python: Google ADK, on Anthropic Messages (AnthropicLlm)",
		NextSteps: pythonSteps, NeedsTool: "uv", layers: []string{agentLayer, pythonLayer, frameworkLayer, "adk"}},
	{Name: "strands", Description: "Python: AWS Strands Agents, on Anthropic or OpenAI Chat",
		NextSteps: pythonSteps, NeedsTool: "uv", layers: []string{agentLayer, pythonLayer, frameworkLayer, mcpLayer, "strands"}},
	{Name: "strands-ts", Description: "Node (TypeScript): AWS Strands Agents, on Anthropic or OpenAI",
		NextSteps: nodeSteps, NeedsTool: "npm", layers: []string{agentLayer, nodeLayer, "strands-ts"}},
	{Name: "adk-ts", Description: "Node (TypeScript): Google ADK, on Anthropic Messages",
		NextSteps: nodeSteps, NeedsTool: "npm", layers: []string{agentLayer, nodeLayer, "adk-ts"}},
}

// Templates returns the catalogue.
func Templates() []Template { return append([]Template(nil), catalogue...) }

// TemplateNames returns the names of the templates, for messages and completion.
func TemplateNames() []string {
	names := make([]string, len(catalogue))
	for i, t := range catalogue {
		names[i] = t.Name
	}
	return names
}

// LookupTemplate finds a template by name.
func LookupTemplate(name string) (Template, error) {
	for _, t := range catalogue {
		if t.Name == name {
			return t, nil
		}
	}
	return Template{}, fmt.Errorf("unknown template %q; choose one of: %s (see `oz0 plugin templates`)", name, strings.Join(TemplateNames(), ", "))
}

// Options say what to write.
type Options struct {
	Name        string
	Template    string
	Description string
	// Parent is the directory the plugin directory is created in.
	Parent string
	// Ref is the git ref of oz0's repository that the plugin's files point at: the JSON Schemas
	// of its yaml-language-server lines and the GitHub Action of its CI workflow. The oz0 that
	// writes the plugin gives its own (a release's tag); "" is main.
	Ref string
}

// Target is the plugin's directory.
func (o Options) Target() string { return filepath.Join(o.Parent, o.Name) }

// File is one rendered file, path relative to the plugin root with forward slashes.
type File struct {
	Path string
	Data []byte
}

// ErrTargetNotEmpty is returned, wrapped, when the target exists and has something in it.
var ErrTargetNotEmpty = errors.New("target is not empty")

// targetError is a message about the target that is ErrTargetNotEmpty without saying its words
// again.
type targetError struct{ msg string }

func (e *targetError) Error() string        { return e.msg }
func (e *targetError) Is(target error) bool { return target == ErrTargetNotEmpty }

func targetErrorf(format string, args ...any) error {
	return &targetError{msg: fmt.Sprintf(format, args...)}
}

// CheckTarget refuses a target that exists and is not an empty directory, or that lies inside
// another plugin. It is called before anything is asked, and again just before writing.
func CheckTarget(dir string) error {
	// Inside another plugin, the new one's files would be that plugin's too: its lint, tests,
	// watcher and sandbox would take them (and oz0 dev on it reloads as they are written).
	if outer, ok := discovery.PluginRoot(filepath.Dir(dir)); ok {
		return targetErrorf("%s would be inside the plugin in %s (it has an %s), whose lint, tests and oz0 dev would take its files as their own; make it beside that plugin: --dir %s",
			dir, outer, discovery.ManifestFile, filepath.Dir(outer))
	}
	info, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot check %s: %w", dir, err)
	}
	if !info.IsDir() {
		return targetErrorf("%s exists and is a file; choose another name or --dir", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", dir, err)
	}
	if len(entries) > 0 {
		return targetErrorf("%s already exists and is not empty; choose another name or --dir, or remove it", dir)
	}
	return nil
}

// Validate checks every option before anything is rendered or written.
func (o Options) Validate() error {
	if err := ValidateName(o.Name); err != nil {
		return err
	}
	if _, err := LookupTemplate(o.Template); err != nil {
		return err
	}
	return ValidateDescription(o.Description)
}

// Render renders the template into memory, sorted by path.
func Render(o Options) ([]File, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	ref := o.Ref
	if ref == "" {
		ref = "main"
	}
	data := map[string]string{
		"Name":        o.Name,
		"Package":     PackageName(o.Name),
		"Description": o.Description,
		"Ref":         ref,
	}
	funcs := templateFuncs(ref)
	t, _ := LookupTemplate(o.Template)
	rendered := map[string]File{}
	for _, layer := range t.layers {
		root := path.Join("templates", layer)
		err := fs.WalkDir(templatesFS, root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			raw, err := fs.ReadFile(templatesFS, p)
			if err != nil {
				return err
			}
			rel := strings.TrimPrefix(p, root+"/")
			tmpl, err := template.New(rel).Option("missingkey=error").Funcs(funcs).Parse(string(raw))
			if err != nil {
				return fmt.Errorf("template %s/%s is broken: %w", layer, rel, err)
			}
			var buf bytes.Buffer
			if err := tmpl.Execute(&buf, data); err != nil {
				return fmt.Errorf("template %s/%s is broken: %w", layer, rel, err)
			}
			f := File{Path: renderPath(rel, data), Data: buf.Bytes()}
			rendered[f.Path] = f
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	files := make([]File, 0, len(rendered))
	for _, f := range rendered {
		files = append(files, f)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// renderPath replaces the placeholder segments of a template path.
func renderPath(rel string, data map[string]string) string {
	parts := strings.Split(rel, "/")
	for i, p := range parts {
		p = strings.ReplaceAll(p, "__package__", data["Package"])
		parts[i] = strings.ReplaceAll(p, "__name__", data["Name"])
	}
	return strings.Join(parts, "/")
}

// templateFuncs are the functions templates call; ref is Options.Ref.
func templateFuncs(ref string) template.FuncMap {
	return template.FuncMap{
		// quote renders a string as a double-quoted JSON string, which YAML, TOML and Python
		// all read as the same string.
		"quote": func(s string) (string, error) {
			b, err := jsonutil.Marshal(s)
			return string(b), err
		},
		// pad is s, then spaces to width (at least two): a README's tree comment in its column
		// whatever the name's length (a name longer than the column leaves its row wider).
		"pad": func(width int, s string) string {
			return s + strings.Repeat(" ", max(2, width-utf8.RuneCountInString(s)))
		},
		// schema is the URL of an embedded schema file at ref, for a yaml-language-server line;
		// a name that is not one is an error, so a template cannot point at nothing.
		"schema": func(name string) (string, error) {
			if _, ok := schemas.Lookup(name); !ok || !strings.HasSuffix(name, ".schema.json") {
				return "", fmt.Errorf("no schema file %q in schemas/", name)
			}
			return schemas.URLAt(ref, name), nil
		},
	}
}

// Create renders the plugin and writes it atomically: into a temporary directory beside the
// target, then renamed into place. It returns the files written.
func Create(o Options) ([]File, error) {
	files, err := Render(o)
	if err != nil {
		return nil, err
	}
	target := o.Target()
	if err := CheckTarget(target); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Parent, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create %s: %w", o.Parent, err)
	}
	tmp, err := os.MkdirTemp(o.Parent, "."+o.Name+".oz0-new-")
	if err != nil {
		return nil, fmt.Errorf("cannot write in %s: %w", o.Parent, err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	for _, f := range files {
		dst := filepath.Join(tmp, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, fmt.Errorf("cannot write %s: %w", f.Path, err)
		}
		if err := os.WriteFile(dst, f.Data, 0o644); err != nil {
			return nil, fmt.Errorf("cannot write %s: %w", f.Path, err)
		}
	}
	// An empty target directory makes way; os.Remove fails on one that has filled up since the
	// check, and os.Rename never replaces a directory, so nothing of the user's is overwritten.
	if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, targetErrorf("%s appeared while writing; nothing was written", target)
	}
	if err := os.Rename(tmp, target); err != nil {
		if CheckTarget(target) != nil {
			return nil, targetErrorf("%s appeared while writing; nothing was written", target)
		}
		return nil, fmt.Errorf("cannot move the new plugin into %s: %w", target, err)
	}
	ok = true
	return files, nil
}
