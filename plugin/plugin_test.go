package plugin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, data := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const manifest = `apiVersion: oz0/v1
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

func TestLoadResolvesAgentsSchemasAndTools(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"oz0-plugin.yaml": manifest,
		"agents/orders.yaml": `name: orders
runtime: harness:shop
instructions: prompts/p.md
input: {schema: schemas/in.json}
output: {schema: {type: object, required: [answer]}}
limits: {max_steps: 3, timeout: 90s}
`,
		"agents/chat.yaml": "name: chat\nruntime: harness:shop\ninstructions: prompts/p.md\nharness: {tools: [refund], options: {tone: dry}}\n",
		"prompts/p.md":     "Help with orders.\n",
		"schemas/in.json":  `{"type":"object","required":["order"]}`,
	})
	p, rep, err := Load(dir)
	if err != nil {
		t.Fatalf("%v %v", err, rep)
	}
	if got := strings.Join(p.AgentNames(), ","); got != "chat,orders" {
		t.Errorf("agents %s", got)
	}
	orders := p.Agent("orders")
	if orders.Input.Kind != "json" || orders.Input.SchemaFile != "schemas/in.json" || !strings.Contains(string(orders.Input.Schema), `"order"`) {
		t.Errorf("input %+v", orders.Input)
	}
	if orders.Output.Kind != "json" || !strings.Contains(string(orders.Output.Schema), `"answer"`) {
		t.Errorf("output %+v", orders.Output)
	}
	if orders.InstructionsText != "Help with orders.\n" || orders.Limits.TimeoutDuration().Seconds() != 90 {
		t.Errorf("instructions %q, timeout %v", orders.InstructionsText, orders.Limits.TimeoutDuration())
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

func TestLoadRefusesAPluginThatDoesNotLint(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"oz0-plugin.yaml": strings.Replace(manifest, "tools:", "tool:", 1)})
	_, rep, err := Load(dir)
	var lintErr *LintError
	if !errors.As(err, &lintErr) || !rep.HasErrors() || !strings.Contains(err.Error(), "oz0 plugin lint") {
		t.Fatalf("got %v", err)
	}
}
