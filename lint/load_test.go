package lint

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/diag"
)

const shopManifest = `apiVersion: oz0/v1
name: shop
version: 0.1.0
runtime: binary
harnesses:
  - name: shop
    command: ["./run"]
    permissions: true
    tools: [lookup_order]
    formats: [anthropic-messages]
agents: [agents/]
`

func TestLoadMakesTheTypedPlugin(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"oz0-plugin.yaml": shopManifest,
		"run":             "#!/bin/sh\n",
		"agents/orders.yaml": `name: orders
runtime: harness:shop
instructions: prompts/p.md
input: {schema: schemas/in.json}
output: {schema: {type: object, required: [answer]}}
limits: {max_steps: 3, timeout: 90s, max_concurrent: 2}
`,
		"agents/chat.yaml":   "name: chat\nruntime: harness:shop\ninstructions: prompts/p.md\nharness: {tools: [refund], options: {tone: dry}}\n",
		"prompts/p.md":       "Help with orders.\n",
		"schemas/in.json":    `{"type":"object","required":["order"],"properties":{"order":{"$ref":"order.json"}}}`,
		"schemas/order.json": `{"type":"integer"}`,
	}, nil)
	p, rep, err := Load(dir)
	if err != nil {
		t.Fatalf("%v %v", err, rep)
	}
	if abs, _ := filepath.Abs(dir); p.Dir != abs {
		t.Errorf("dir %s", p.Dir)
	}
	if got := strings.Join(p.AgentNames(), ","); got != "chat,orders" {
		t.Errorf("agents %s", got)
	}
	if h := p.Harness("shop"); h == nil || h.Command[0] != "./run" || !h.Permissions || h.Formats[0] != "anthropic-messages" {
		t.Errorf("harness %+v", h)
	}
	orders := p.Agent("orders")
	if orders.File != "agents/orders.yaml" || orders.Input.Kind != "json" || orders.Input.SchemaFile != "schemas/in.json" || !strings.Contains(string(orders.Input.Schema), `"order"`) {
		t.Errorf("input %+v", orders.Input)
	}
	// The compiled schema has the plugin's files for its $refs, as lint checked it.
	if err := orders.Input.Compiled.Validate(map[string]any{"order": "x"}); err == nil {
		t.Error("the input schema's $ref to order.json was not followed")
	}
	if orders.Output.Kind != "json" || !strings.Contains(string(orders.Output.Schema), `"answer"`) || orders.Output.Compiled == nil {
		t.Errorf("output %+v", orders.Output)
	}
	if orders.InstructionsText != "Help with orders.\n" || orders.Limits.TimeoutDuration().Seconds() != 90 || orders.Limits.MaxSteps != 3 || orders.Limits.MaxConcurrent != 2 {
		t.Errorf("instructions %q, limits %+v", orders.InstructionsText, orders.Limits)
	}
	if got := p.Tools(orders); len(got) != 1 || got[0] != "lookup_order" {
		t.Errorf("orders' tools %v: the harness's when the agent lists none", got)
	}
	chat := p.Agent("chat")
	if got := p.Tools(chat); len(got) != 1 || got[0] != "refund" || chat.Harness.Options["tone"] != "dry" {
		t.Errorf("chat: tools %v options %v", got, chat.Harness.Options)
	}
	if chat.Input.Kind != "text" || chat.HarnessName() != "shop" {
		t.Errorf("chat input %q harness %q", chat.Input.Kind, chat.HarnessName())
	}
}

func TestLoadRefusesWhatLintRefuses(t *testing.T) {
	dir := writePlugin(t, map[string]string{"oz0-plugin.yaml": strings.Replace(templateManifest, "tools:", "tool:", 1)})
	p, rep, err := Load(dir)
	var re *diag.ReportError
	if p != nil || !errors.As(err, &re) || re.Report != rep || !rep.HasErrors() {
		t.Fatalf("got %v, %v", p, err)
	}
	if !strings.Contains(err.Error(), "the plugin in "+dir+" has 1 error; the first: "+dir+"/oz0-plugin.yaml:") {
		t.Errorf("error %q", err)
	}
	// Warnings alone do not refuse it.
	dir = writePlugin(t, map[string]string{"agents/x.yml": "name: x\n"})
	if p, rep, err := Load(dir); err != nil || p == nil || len(rep.Diagnostics) != 1 {
		t.Fatalf("a warning: %v %v", err, rep)
	}
}

// agents: ["."] lists the plugin's top: its manifest is not an agent, for lint and Load alike.
func TestLoadAgentsAtTheTop(t *testing.T) {
	dir := writePlugin(t, map[string]string{
		"oz0-plugin.yaml":         strings.Replace(templateManifest, "agents: [agents/]", `agents: ["."]`, 1),
		"agents/acme-triage.yaml": del,
		"acme-triage.yaml":        templateAgent,
	})
	p, rep, err := Load(dir)
	if err != nil {
		t.Fatalf("%v", err)
	}
	if len(rep.Diagnostics) != 0 || strings.Join(p.AgentNames(), ",") != "acme-triage" || p.Agents[0].File != "acme-triage.yaml" {
		t.Errorf("agents %v, findings %v", p.AgentNames(), rep.Diagnostics)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// Symbolic links that lead out of the plugin are findings where the path is named, and the loader
// does not read through them; links inside the plugin are fine.
func TestLoadSymlinksStayInside(t *testing.T) {
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret.md": "the tenant's key", "acme-triage.yaml": templateAgent}, nil)

	dir := writePlugin(t, map[string]string{"prompts/acme-triage.md": del})
	symlink(t, filepath.Join(outside, "secret.md"), filepath.Join(dir, "prompts", "acme-triage.md"))
	p, rep, err := Load(dir)
	if p != nil || err == nil {
		t.Fatal("a prompt linked outside the plugin was loaded")
	}
	checkFindings(t, rep, expect{"agents/acme-triage.yaml:7:15 path-escape", "`instructions`: prompts/acme-triage.md is a symbolic link that leads outside the plugin"})

	dir = writePlugin(t, map[string]string{"agents/acme-triage.yaml": del})
	if err := os.RemoveAll(filepath.Join(dir, "agents")); err != nil {
		t.Fatal(err)
	}
	symlink(t, outside, filepath.Join(dir, "agents"))
	_, rep, _ = Load(dir)
	checkFindings(t, rep, expect{"oz0-plugin.yaml:13:10 path-escape", "`agents` entry `agents/`: agents is a symbolic link that leads outside the plugin"})

	// A link to a place outside that does not exist is refused as well.
	dir = writePlugin(t, map[string]string{"prompts/acme-triage.md": del})
	symlink(t, filepath.Join(outside, "nothing-here.md"), filepath.Join(dir, "prompts", "acme-triage.md"))
	_, rep, _ = Load(dir)
	checkFindings(t, rep, expect{"agents/acme-triage.yaml:7:15 path-escape", "leads outside the plugin"})

	// Inside the plugin, a link is followed.
	dir = writePlugin(t, map[string]string{"prompts/acme-triage.md": del, "prompts/shared.md": "Sort tickets.\n"})
	symlink(t, "shared.md", filepath.Join(dir, "prompts", "acme-triage.md"))
	p, rep, err = Load(dir)
	if err != nil || p.Agents[0].InstructionsText != "Sort tickets.\n" {
		t.Fatalf("a link inside: %v %v", err, rep)
	}
}

// A symbolic link loop is a finding, not a failure to read the plugin.
func TestLoadSymlinkLoops(t *testing.T) {
	dir := writePlugin(t, map[string]string{"oz0-plugin.yaml": del})
	symlink(t, "oz0-plugin.yaml", filepath.Join(dir, "oz0-plugin.yaml"))
	_, rep, err := Load(dir)
	var re *diag.ReportError
	if !errors.As(err, &re) {
		t.Fatalf("got %v", err)
	}
	checkFindings(t, rep, expect{"oz0-plugin.yaml:0:0 symlink-loop", "oz0-plugin.yaml is a symbolic link that loops"})

	dir = writePlugin(t, map[string]string{"agents/acme-triage.yaml": del})
	if err := os.RemoveAll(filepath.Join(dir, "agents")); err != nil {
		t.Fatal(err)
	}
	symlink(t, "agents2", filepath.Join(dir, "agents"))
	symlink(t, "agents", filepath.Join(dir, "agents2"))
	_, rep, _ = Load(dir)
	checkFindings(t, rep, expect{"oz0-plugin.yaml:13:10 symlink-loop", "`agents` entry `agents/`: agents is a symbolic link that loops"})
}
