package lint

import (
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
)

// The byo-agent template plugin of the guide, which must lint clean.
const (
	templateManifest = `# yaml-language-server: $schema=https://raw.githubusercontent.com/orchestrator-zero/oz0/main/schemas/oz0-plugin.schema.json
apiVersion: oz0/v1
name: acme-triage
version: 0.1.0
description: "Sorts support tickets"
runtime: python
harnesses:
  - name: acme-triage
    command: ["python", "-m", "acme_triage"]
    permissions: true # it asks before each tool call
    tools: [notify_team] # what a session may call when its agent lists no harness.tools
    formats: [anthropic-messages] # the model API your code speaks
agents: [agents/]
skills: [skills/]
`
	templateAgent = `# yaml-language-server: $schema=https://raw.githubusercontent.com/orchestrator-zero/oz0/main/schemas/agent.schema.json
name: acme-triage
description: "Sorts support tickets"
runtime: harness:acme-triage
model:
  use: default # an alias, resolved to a record that takes the harness's formats
instructions: prompts/acme-triage.md
input: text
output: text
limits:
  max_steps: 10 # the most model calls a session makes
  timeout: 10m
harness:
  tools: [notify_team]
  # requires_approval: [notify_team]
`
	templatePyproject = `[project]
name = "acme-triage"
version = "0.1.0"
description = "Sorts support tickets"
requires-python = ">=3.11"
dependencies = []

[dependency-groups]
dev = ["pytest>=8"]

[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[tool.hatch.build.targets.wheel]
packages = ["src/acme_triage"]
`
	templateSkill = `---
name: oz0-plugin
description: How to work on an oz0 plugin.
---
# oz0 plugin
`
)

// templateFiles is the template plugin, path → content.
func templateFiles() map[string]string {
	return map[string]string{
		"oz0-plugin.yaml":                    templateManifest,
		"agents/acme-triage.yaml":            templateAgent,
		"prompts/acme-triage.md":             "You sort support tickets into billing, shipping or other.\n",
		"src/acme_triage/__init__.py":        "",
		"src/acme_triage/__main__.py":        "from .harness import main\nmain()\n",
		"src/acme_triage/harness.py":         "def main():\n    pass\n",
		"src/acme_triage/agent.py":           "def run(session):\n    return 'ok'\n",
		"src/acme_triage/legacy.py":          "def triage(text, complete):\n    return {}\n",
		"src/acme_triage/tools.py":           "def notify_team(team, summary):\n    return team\n",
		"src/acme_triage/adapters.py":        "",
		"tests/test_harness.py":              "def test_nothing():\n    pass\n",
		"pyproject.toml":                     templatePyproject,
		"AGENTS.md":                          "# acme-triage\n",
		".claude/skills/oz0-plugin/SKILL.md": templateSkill,
	}
}

// del as the content of an edit deletes the file.
const del = "\x00delete"

// writePlugin writes the template under a new temporary directory, after
// applying edits (path → content, or del).
func writePlugin(t testing.TB, edits map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, templateFiles(), edits)
	return dir
}

func writeFiles(t testing.TB, dir string, files, edits map[string]string) {
	t.Helper()
	all := map[string]string{}
	for k, v := range files {
		all[k] = v
	}
	for k, v := range edits {
		if v == del {
			delete(all, k)
			continue
		}
		all[k] = v
	}
	for name, content := range all {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTemplateIsClean(t *testing.T) {
	dir := writePlugin(t, nil)
	rep, err := Run(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Diagnostics {
		t.Errorf("unexpected finding: %+v", f)
	}
}

func mapFS(files map[string]string) fstest.MapFS {
	m := fstest.MapFS{}
	for k, v := range files {
		m[k] = &fstest.MapFile{Data: []byte(v), Mode: 0o644}
	}
	return m
}
