package lint

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/diag"
)

// expect is one expected finding: "file:line:col rule" and a part of its
// message.
type expect struct {
	at, msg string
}

func (e expect) String() string { return e.at + " " + e.msg }

func runPlugin(t *testing.T, edits map[string]string) *diag.Report {
	t.Helper()
	dir := writePlugin(t, edits)
	rep, err := Run(dir)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func checkFindings(t *testing.T, rep *diag.Report, wants ...expect) {
	t.Helper()
	got := map[string][]diag.Diagnostic{}
	for _, f := range rep.Diagnostics {
		at := fmt.Sprintf("%s:%d:%d %s", f.File, f.Line, f.Col, f.Rule)
		got[at] = append(got[at], f)
		if r := f.Rule.Rule(); r.Severity != f.Severity {
			t.Errorf("%s: severity %s, the rule's is %s", at, f.Severity, r.Severity)
		}
	}
	for _, w := range wants {
		fs := got[w.at]
		if len(fs) == 0 {
			t.Errorf("missing finding %s", w)
			continue
		}
		if !strings.Contains(fs[0].Message, w.msg) {
			t.Errorf("%s: message %q does not contain %q", w.at, fs[0].Message, w.msg)
		}
		got[w.at] = fs[1:]
	}
	for at, fs := range got {
		for _, f := range fs {
			t.Errorf("unexpected finding %s %s", at, f.Message)
		}
	}
}

func replace(s string, oldnew ...string) string {
	for i := 0; i+1 < len(oldnew); i += 2 {
		if !strings.Contains(s, oldnew[i]) {
			panic("replace: no " + oldnew[i])
		}
		s = strings.Replace(s, oldnew[i], oldnew[i+1], 1)
	}
	return s
}

// nestedItems is a JSON Schema of arrays within arrays, depth levels of JSON objects in all.
func nestedItems(depth int) string {
	return strings.Repeat(`{"type": "array", "items": `, depth-1) + `{"type": "string"}` + strings.Repeat("}", depth-1)
}

func TestRules(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edits map[string]string
		want  []expect
	}{
		{"manifest-missing", map[string]string{"oz0-plugin.yaml": del}, []expect{
			{"oz0-plugin.yaml:0:0 manifest-missing", "no oz0-plugin.yaml in "},
		}},
		{"schema kinds in the manifest", map[string]string{"oz0-plugin.yaml": replace(templateManifest,
			"apiVersion: oz0/v1", "apiVersion: oz0/v2",
			"runtime: python\n", "",
			"    permissions: true", "    permission: true")}, []expect{
			{"oz0-plugin.yaml:2:13 invalid-value", "`apiVersion` must be `oz0/v1`, not `oz0/v2`"},
			{"oz0-plugin.yaml:2:1 missing-key", "missing required key `runtime`"},
			{"oz0-plugin.yaml:9:5 unknown-key", "unknown key `permission` in `harnesses[0]`; did you mean `permissions`?"},
		}},
		{"schema kinds in an agent", map[string]string{"agents/acme-triage.yaml": replace(templateAgent,
			"max_steps: 10", `max_steps: "10"`,
			"  tools: [notify_team]", "  tool: [notify_team]")}, []expect{
			{"agents/acme-triage.yaml:11:14 invalid-value", "`max_steps` must be an integer, not a string"},
			{"agents/acme-triage.yaml:14:3 unknown-key", "unknown key `tool` in `harness`; did you mean `tools`?"},
		}},
		{"max_concurrent below 1", map[string]string{"agents/acme-triage.yaml": replace(templateAgent,
			"max_steps: 10", "max_steps: 10\n  max_concurrent: 0")}, []expect{
			{"agents/acme-triage.yaml:12:19 invalid-value", "`max_concurrent` must be at least 1, not 0"},
		}},
		{"yaml-syntax", map[string]string{"agents/acme-triage.yaml": "name: a\n\truntime: x\n"}, []expect{
			{"agents/acme-triage.yaml:2:1 yaml-syntax", "tab"},
		}},
		{"duplicate key", map[string]string{"agents/acme-triage.yaml": templateAgent + "name: again\n"}, []expect{
			{"agents/acme-triage.yaml:16:1 yaml-syntax", "duplicate key `name` (first on line 2)"},
		}},
		{"duplicate-harness", map[string]string{"oz0-plugin.yaml": replace(templateManifest, "agents: [agents/]",
			"  - name: acme-triage\n    command: [python, -m, acme_triage]\n    formats: [openai-chat]\nagents: [agents/]")}, []expect{
			{"oz0-plugin.yaml:13:11 duplicate-harness", "harness `acme-triage` is declared twice (first on line 8)"},
		}},
		{"unknown-format", map[string]string{"oz0-plugin.yaml": replace(templateManifest, "formats: [anthropic-messages]", "formats: [anthropic, openai-chat, grpc]")}, []expect{
			{"oz0-plugin.yaml:12:15 unknown-format", "harness `acme-triage` has unknown format `anthropic`; did you mean `anthropic-messages`?"},
			{"oz0-plugin.yaml:12:39 unknown-format", "unknown format `grpc`; the formats are anthropic-messages, openai-chat"},
		}},
		{"no formats", map[string]string{"oz0-plugin.yaml": replace(templateManifest, "    formats: [anthropic-messages] # the model API your code speaks\n", "")}, []expect{
			{"oz0-plugin.yaml:8:5 unknown-format", "harness `acme-triage` lists no formats"},
		}},
		{"empty formats", map[string]string{"oz0-plugin.yaml": replace(templateManifest, "formats: [anthropic-messages]", "formats: []")}, []expect{
			{"oz0-plugin.yaml:12:14 unknown-format", "lists no formats"},
		}},
		{"module-missing", map[string]string{"oz0-plugin.yaml": replace(templateManifest, `"acme_triage"]`, `"acme_triag"]`)}, []expect{
			{"oz0-plugin.yaml:9:31 module-missing", "runs module `acme_triag`, but there is no src/acme_triag/__main__.py or src/acme_triag.py"},
		}},
		{"package without __main__", map[string]string{"src/acme_triage/__main__.py": del}, []expect{
			{"oz0-plugin.yaml:9:31 module-missing", "src/acme_triage/__main__.py does not exist; python -m needs it"},
		}},
		{"module file, dotted module, flat layout", map[string]string{
			"oz0-plugin.yaml": replace(templateManifest, `["python", "-m", "acme_triage"]`, `[python3.12, -u, -m, acme_triage.cli]`,
				"agents: [agents/]", "  - name: two\n    command: [python, -m, single]\n    formats: [openai-chat]\n  - name: three\n    command: [python, -mflat]\n    formats: [openai-chat]\n  - name: four\n    command: [python, run.py]\n    formats: [openai-chat]\n  - name: five\n    command: [./bin/h, -m, nothing]\n    formats: [openai-chat]\nagents: [agents/]"),
			"src/acme_triage/cli.py": "print()\n",
			"src/single.py":          "print()\n",
			"flat/__main__.py":       "print()\n",
			"run.py":                 "print()\n",
			"bin/h":                  "#!/bin/sh\n",
		}, nil},
		{"banned-dependency through a framework's extra", map[string]string{
			"pyproject.toml": replace(templatePyproject, "dependencies = []", `dependencies = ["google-adk[extensions]==2.13.0", "strands-agents[anthropic,openai]==1.62.0"]`),
		}, []expect{
			{"pyproject.toml:6:17 banned-dependency", "`google-adk[extensions]==2.13.0` in [project] dependencies pulls in litellm through its extensions extra"},
		}},
		{"format-mismatch", map[string]string{
			"oz0-plugin.yaml": replace(templateManifest, "formats: [anthropic-messages]", "formats: [anthropic-messages, openai-chat]"),
			"src/acme_triage/agent.py": "\"\"\"Builds OpenAIChatCompletionClient? No: see below.\"\"\"\n" +
				"from strands.models.anthropic import AnthropicModel  # not OpenAIModel\n\n" +
				"def run(session):\n    return AnthropicModel(model_id=session.model_name)\n",
		}, []expect{
			{"oz0-plugin.yaml:12:35 format-mismatch", "harness `acme-triage` lists openai-chat, but its code builds no model client that speaks it (it builds `AnthropicModel` in src/acme_triage/agent.py, which speaks anthropic-messages)"},
		}},
		{"format-mismatch, complete() speaks any", map[string]string{
			"oz0-plugin.yaml":          replace(templateManifest, "formats: [anthropic-messages]", "formats: [anthropic-messages, openai-chat]"),
			"src/acme_triage/agent.py": "from anthropic import Anthropic\n\ndef run(session):\n    return session.complete(session.text)\n",
		}, nil},
		{"responses-api", map[string]string{
			"oz0-plugin.yaml": replace(templateManifest, "formats: [anthropic-messages]", "formats: [openai-chat]"),
			"src/acme_triage/wiring.py": "# OpenAIChatClient in a comment is prose\nfrom agent_framework.openai import OpenAIChatClient\n" +
				"x = 'OpenAIChatClient in a string'\n",
		}, []expect{
			{"src/acme_triage/wiring.py:2:36 responses-api", "harness `acme-triage` uses `OpenAIChatClient`, which speaks OpenAI's Responses API"},
		}},
		{"format-mismatch in JavaScript", map[string]string{
			"oz0-plugin.yaml": replace(templateManifest, "agents: [agents/]", "  - name: web\n    command: [node, src/main.mjs]\n    formats: [anthropic-messages, openai-chat]\nagents: [agents/]"),
			"src/main.mjs": "// new OpenAIModel in a comment is prose\n" +
				"import { AnthropicModel } from \"@strands-agents/sdk/models/anthropic\";\n" +
				"const s = `OpenAI ${1 / 2} \"`, re = /OpenAI\"/, half = 1 / 2 / 3;\n" +
				"export const m = new AnthropicModel({ modelId: \"x\" });\n",
			"src/node_modules/openai/index.js": "export class OpenAI {}\n",
		}, []expect{
			{"oz0-plugin.yaml:15:35 format-mismatch", "harness `web` lists openai-chat, but its code builds no model client that speaks it (it builds `AnthropicModel` in src/main.mjs, which speaks anthropic-messages)"},
		}},
		{"tool-not-in-code", map[string]string{
			"src/acme_triage/tools.py": "def alert_team(team, summary):\n    return team  # was notify_teams\n",
		}, []expect{
			{"oz0-plugin.yaml:11:12 tool-not-in-code", "harness `acme-triage` lists the tools notify_team, but its code (src/acme_triage) names none of them"},
		}},
		// The guide's LangGraph example: its agent lists a tool of its own code, which the
		// sessions of its harness may call; the manifest's tool is not named there.
		{"tool-not-in-code: an agent's own tool named", map[string]string{
			"agents/acme-triage.yaml":  replace(templateAgent, "tools: [notify_team]", "tools: [lookup_order]"),
			"src/acme_triage/tools.py": "def lookup_order(order_id: str) -> str:\n    return order_id\n",
		}, nil},
		{"tool-not-in-code: one of the tools named, in a string", map[string]string{
			"oz0-plugin.yaml":          replace(templateManifest, "tools: [notify_team]", "tools: [notify_team, refund]"),
			"src/acme_triage/tools.py": "TOOLS = {'refund': None}\n",
		}, nil},
		{"tool-not-in-code in JavaScript", map[string]string{
			"oz0-plugin.yaml":             replace(templateManifest, "agents: [agents/]", "  - name: web\n    command: [node, src/main.mjs]\n    tools: [lookup_order]\n    formats: [anthropic-messages]\n  - name: named\n    command: [node, lib/main.mjs]\n    tools: [lookup_order]\n    formats: [anthropic-messages]\nagents: [agents/]"),
			"src/main.mjs":                "export const t = tool({ name: 'find_order' });\n",
			"src/node_modules/x/index.js": "export const lookup_order = 1;\n",
			"lib/main.mjs":                "export const t = tool({ name: 'lookup_order' });\n",
		}, []expect{
			{"oz0-plugin.yaml:15:12 tool-not-in-code", "harness `web` lists the tools lookup_order, but its code (src) names none of them"},
		}},
		{"responses-api in JavaScript", map[string]string{
			"oz0-plugin.yaml": replace(templateManifest, "agents: [agents/]", "  - name: web\n    command: [node, src/main.mjs]\n    formats: [openai-chat]\nagents: [agents/]"),
			"src/main.mjs": "import { OpenAIModel } from \"@strands-agents/sdk/models/openai\";\n" +
				"export const chat = new OpenAIModel({ api: \"chat\", modelId: \"m\" });\n" +
				"export const given = new OpenAIModel(options);\n" +
				"export const unsaid = new OpenAIModel({ modelId: \"m\", clientConfig: { baseURL: \"}\" } });\n" +
				"export const said = new OpenAIModel({\n  api: 'responses',\n});\n",
			"src/lib/sdk.ts": "export const r = await client.responses.create({ model: 'm' });\n",
		}, []expect{
			{"src/main.mjs:4:27 responses-api", "harness `web` uses `OpenAIModel` without `api: \"chat\"`, which speaks OpenAI's Responses API; the gateway serves Chat Completions: give it api: \"chat\""},
			{"src/main.mjs:5:25 responses-api", "harness `web` uses `OpenAIModel`, which speaks OpenAI's Responses API"},
			{"src/lib/sdk.ts:1:30 responses-api", "uses `responses.create(`, which speaks OpenAI's Responses API; the gateway serves Chat Completions: use Chat Completions"},
		}},
		{"package.json dependencies", map[string]string{
			"package.json": "{\n  \"name\": \"acme-triage\",\n  \"dependencies\": {\n    \"@strands-agents/sdk\": \"^1.19.0\",\n    \"zod\": \"4.6.7\",\n" +
				"    \"local\": \"file:../x\",\n    \"alias\": \"npm:zod@4.6.7\",\n    \"gitdep\": \"github:a/b\",\n    \"gitsha\": \"github:a/b#0123abc\"\n  },\n" +
				"  \"devDependencies\": {\"typescript\": \"^7\"},\n  \"optionalDependencies\": {\"x\": [\"zod\"], \"y\": \"latest\"}\n}\n",
		}, []expect{
			{"package.json:4:5 unpinned-dependency", "`@strands-agents/sdk` is `^1.19.0` in package.json dependencies, not one version; pin it exactly (npm install --save-exact @strands-agents/sdk@X.Y.Z)"},
			{"package.json:8:5 unpinned-dependency", "`gitdep` is `github:a/b`"},
			{"package.json:12:42 unpinned-dependency", "`y` is `latest` in package.json optionalDependencies"},
			{"package.json:1:1 lock-missing", "package.json has dependencies but the plugin has no lock file"},
		}},
		{"package.json pinned, with a lock", map[string]string{
			"package.json":      `{"dependencies": {"zod": "4.6.7", "openai": "=v6.49.0"}, "devDependencies": {"typescript": "^7.0.2"}}`,
			"package-lock.json": "{}",
		}, nil},
		{"json-syntax", map[string]string{"package.json": "{\n  \"dependencies\": {\"zod\": \"4.6.7\",}\n}\n"}, []expect{
			{"package.json:2:36 json-syntax", "package.json does not parse as a JSON object: invalid character '}'"},
		}},
		{"package.json not an object", map[string]string{"package.json": "[1]\n"}, []expect{
			{"package.json:1:2 json-syntax", "cannot unmarshal array"},
		}},
		{"command-missing", map[string]string{
			"oz0-plugin.yaml": replace(templateManifest, "agents: [agents/]", "  - name: two\n    command: [sh, harness.sh]\n    formats: [openai-chat]\n  - name: three\n    command: [./bin/agent]\n    formats: [openai-chat]\n  - name: four\n    command: [sh, ../outside.sh]\n    formats: [openai-chat]\n  - name: five\n    command: [oz0-no-such-program-here]\n    formats: [openai-chat]\nagents: [agents/]"),
		}, []expect{
			{"oz0-plugin.yaml:14:19 command-missing", "harness `two` runs sh `harness.sh`, which is not a file of the plugin"},
			{"oz0-plugin.yaml:17:15 command-missing", "harness `three` runs `./bin/agent`, which is not a file of the plugin"},
			{"oz0-plugin.yaml:20:19 path-escape", "harness `four` runs `../outside.sh`, which is outside the plugin"},
			{"oz0-plugin.yaml:23:15 program-not-found", "harness `five` runs `oz0-no-such-program-here`, which is not on this machine's PATH"},
		}},
		{"dotted module missing", map[string]string{"oz0-plugin.yaml": replace(templateManifest, `"acme_triage"]`, `"acme_triage.nope"]`)}, []expect{
			{"oz0-plugin.yaml:9:31 module-missing", "no src/acme_triage/nope/__main__.py or src/acme_triage/nope.py"},
		}},
		{"unknown-harness", map[string]string{"agents/acme-triage.yaml": replace(templateAgent, "runtime: harness:acme-triage", "runtime: harness:acme-triag")}, []expect{
			{"agents/acme-triage.yaml:4:10 unknown-harness", "runtime names harness `acme-triag`, which oz0-plugin.yaml does not declare; did you mean `acme-triage`?"},
		}},
		{"unknown-harness, nothing close", map[string]string{"agents/acme-triage.yaml": replace(templateAgent, "runtime: harness:acme-triage", "runtime: harness:zzz")}, []expect{
			{"agents/acme-triage.yaml:4:10 unknown-harness", "its harnesses are acme-triage"},
		}},
		{"unknown-model", map[string]string{"agents/acme-triage.yaml": replace(templateAgent, "use: default", "use: defualt")}, []expect{
			{"agents/acme-triage.yaml:6:8 unknown-model", "model.use is `defualt`, which is neither the alias default nor a model record (anthropic, openai, fake); did you mean `default`?"},
		}},
		{"unknown-model, a record's near miss", map[string]string{"agents/acme-triage.yaml": replace(templateAgent, "use: default", "use: antropic")}, []expect{
			{"agents/acme-triage.yaml:6:8 unknown-model", "did you mean `anthropic`?"},
		}},
		// A record's own name, and a name near none (a tenant's record may have it), are not.
		{"model.use a record", map[string]string{"agents/acme-triage.yaml": replace(templateAgent, "use: default", "use: fake")}, nil},
		{"model.use near none", map[string]string{"agents/acme-triage.yaml": replace(templateAgent, "use: default", "use: bedrock-eu")}, nil},
		{"instructions-missing", map[string]string{"prompts/acme-triage.md": del}, []expect{
			{"agents/acme-triage.yaml:7:15 instructions-missing", "instructions file prompts/acme-triage.md does not exist"},
		}},
		{"instructions empty", map[string]string{"prompts/acme-triage.md": " \n\t\n"}, []expect{
			{"agents/acme-triage.yaml:7:15 instructions-missing", "instructions file prompts/acme-triage.md is empty"},
		}},
		{"instructions a directory", map[string]string{"prompts/acme-triage.md": del, "prompts/acme-triage.md/x": "y"}, []expect{
			{"agents/acme-triage.yaml:7:15 instructions-missing", "is not a file"},
		}},
		{"path-escape", map[string]string{
			"agents/acme-triage.yaml": replace(templateAgent, "instructions: prompts/acme-triage.md", "instructions: ../prompt.md"),
			"oz0-plugin.yaml":         replace(templateManifest, "skills: [skills/]", "skills: [/etc/]"),
		}, []expect{
			{"agents/acme-triage.yaml:7:15 path-escape", "`instructions` must be a path inside the plugin, not `../prompt.md`"},
			{"oz0-plugin.yaml:14:10 path-escape", "`skills` entry must be a directory inside the plugin, not `/etc/`"},
		}},
		{"agents-dir-missing", map[string]string{"oz0-plugin.yaml": replace(templateManifest, "agents: [agents/]", "agents: [agents/, more/, prompts/acme-triage.md]")}, []expect{
			{"oz0-plugin.yaml:13:19 agents-dir-missing", "agents directory `more/` does not exist"},
			{"oz0-plugin.yaml:13:26 agents-dir-missing", "agents entry `prompts/acme-triage.md` is not a directory"},
		}},
		{"ignored-file", map[string]string{"agents/other.yml": "name: other\n", "agents/README.md": "x", "agents/.hidden.yaml": "x: ["}, []expect{
			{"agents/other.yml:0:0 ignored-file", "agents/other.yml is ignored: agent definitions end in .yaml"},
		}},
		{"duplicate-agent and agent-filename", map[string]string{"agents/other.yaml": templateAgent}, []expect{
			{"agents/other.yaml:2:7 duplicate-agent", "agent `acme-triage` is also defined in agents/acme-triage.yaml"},
			{"agents/other.yaml:2:7 agent-filename", "agent `acme-triage` is defined in other.yaml; name the file acme-triage.yaml"},
		}},
		{"input-schema", map[string]string{
			"agents/acme-triage.yaml": replace(templateAgent, "input: text", "input: {schema: schemas/in.json}", "output: text", "output: {schema: {type: bogus}}"),
			"schemas/in.json":         `{"type": "object", "properties": {"a": {"minimum": "x"}}}`,
		}, []expect{
			{"agents/acme-triage.yaml:8:17 input-schema", "input schema schemas/in.json is not a valid JSON Schema: at /properties/a/minimum: `minimum` must be a number, not a string"},
			{"agents/acme-triage.yaml:9:25 input-schema", "the inline output schema is not a valid JSON Schema: `type` is not valid"},
		}},
		{"input-schema missing, not JSON, remote ref", map[string]string{
			"agents/acme-triage.yaml": replace(templateAgent, "input: text", "input: {schema: schemas/none.json}", "output: text", "output: {schema: schemas/out.json}"),
			"agents/b.yaml":           replace(templateAgent, "name: acme-triage", "name: b", "input: text", "input: {schema: schemas/ref.json}", "output: text", "output: {schema: schemas/ok.json}"),
			"schemas/out.json":        `{"type": "object",}`,
			"schemas/ref.json":        `{"$ref": "https://example.com/s.json"}`,
			"schemas/ok.json":         `{"$defs": {"a": {"type": "string"}}, "properties": {"x": {"$ref": "common.json"}, "y": {"$ref": "#/$defs/a"}}}`,
			"schemas/common.json":     `{"type": "integer"}`,
		}, []expect{
			{"agents/acme-triage.yaml:8:17 input-schema", "input schema schemas/none.json does not exist"},
			{"agents/acme-triage.yaml:9:18 input-schema", "output schema schemas/out.json is not JSON"},
			{"agents/b.yaml:8:17 input-schema", "https://example.com/s.json"},
		}},
		{"schema-too-deep", map[string]string{
			"agents/acme-triage.yaml": replace(templateAgent, "input: text", "input: {schema: schemas/deep.json}", "output: text", "output: {schema: schemas/refers.json}"),
			"agents/b.yaml":           replace(templateAgent, "name: acme-triage", "name: b", "input: text", "input: {schema: {$ref: schemas/deep.json}}", "output: text", "output: {schema: schemas/limit.json}"),
			"schemas/deep.json":       nestedItems(65),
			"schemas/refers.json":     `{"properties": {"x": {"$ref": "deep.json"}}}`,
			"schemas/limit.json":      nestedItems(64), // at the limit: compiled
		}, []expect{
			{"agents/acme-triage.yaml:8:17 schema-too-deep", "input schema schemas/deep.json nests deeper than 64 levels"},
			{"agents/acme-triage.yaml:9:18 schema-too-deep", "output schema schemas/refers.json refers to schemas/deep.json, which nests deeper than 64 levels"},
			{"agents/b.yaml:8:17 schema-too-deep", "the inline input schema refers to schemas/deep.json, which nests deeper than 64 levels"},
		}},
		{"timeout-duration and max-steps", map[string]string{"agents/acme-triage.yaml": replace(templateAgent, "max_steps: 10", "max_steps: 0", "timeout: 10m", "timeout: 10 minutes")}, []expect{
			{"agents/acme-triage.yaml:11:14 max-steps", "`max_steps` must be at least 1, not 0"},
			{"agents/acme-triage.yaml:12:12 timeout-duration", "`timeout` must be a duration such as 10m or 90s, not `10 minutes`"},
		}},
		{"negative timeout and steps", map[string]string{"agents/acme-triage.yaml": replace(templateAgent, "max_steps: 10", "max_steps: -3", "timeout: 10m", "timeout: -1s")}, []expect{
			{"agents/acme-triage.yaml:11:14 max-steps", "not -3"},
			{"agents/acme-triage.yaml:12:12 timeout-duration", "`timeout` must be greater than zero, not `-1s`"},
		}},
		{"approval-unlisted-tool", map[string]string{"agents/acme-triage.yaml": replace(templateAgent, "  # requires_approval: [notify_team]", "  requires_approval: [notify_team, refund]")}, []expect{
			{"agents/acme-triage.yaml:15:36 approval-unlisted-tool", "`refund` requires approval but the agent may not call it; add it to harness.tools"},
		}},
		{"approval-unlisted-tool, manifest tools", map[string]string{"agents/acme-triage.yaml": replace(templateAgent, "  tools: [notify_team]\n  # requires_approval: [notify_team]", "  requires_approval: [notify_team, refund]")}, []expect{
			{"agents/acme-triage.yaml:14:36 approval-unlisted-tool", "or to the tools of harness `acme-triage` in oz0-plugin.yaml"},
		}},
		{"approved tools listed", map[string]string{"agents/acme-triage.yaml": replace(templateAgent, "  # requires_approval: [notify_team]", "  requires_approval: [notify_team]")}, nil},
		{"skills", map[string]string{
			"skills/good/SKILL.md":   "---\nname: good\ndescription: Does good things.\n---\n# Good\n",
			"skills/crlf/SKILL.md":   "---\r\nname: crlf\r\ndescription: d\r\n---\r\n",
			"skills/none/notes.md":   "x",
			"skills/nofm/SKILL.md":   "# No front matter\n",
			"skills/open/SKILL.md":   "---\nname: open\ndescription: d\n",
			"skills/empty/SKILL.md":  "---\n---\n",
			"skills/bad/SKILL.md":    "---\nname: bad\ndescriptio: x\n---\n",
			"skills/named/SKILL.md":  "---\nname: other\ndescription: d\n---\n",
			"skills/syntax/SKILL.md": "---\nname: syntax\ndescription: [\n---\n",
			"skills/README.md":       "Skills live here.\n",
			"skills/.cache/x":        "y",
		}, []expect{
			{"skills/none/SKILL.md:0:0 skill-missing", "skills/none has no SKILL.md"},
			{"skills/nofm/SKILL.md:1:1 skill-frontmatter", "SKILL.md must start with front matter"},
			{"skills/open/SKILL.md:1:1 skill-frontmatter", "not closed"},
			{"skills/empty/SKILL.md:2:1 skill-frontmatter", "the front matter is empty"},
			{"skills/bad/SKILL.md:2:1 missing-key", "missing required key `description`"},
			{"skills/bad/SKILL.md:3:1 unknown-key", "unknown key `descriptio`; did you mean `description`?"},
			{"skills/named/SKILL.md:2:7 skill-name", "skill `other` is in directory `named`; they should match"},
			{"skills/syntax/SKILL.md:3:14 yaml-syntax", "did not find expected node content"},
		}},
		{"skills dir is a file", map[string]string{"skills": "x"}, []expect{
			{"oz0-plugin.yaml:14:10 skill-missing", "skills entry `skills/` is not a directory"},
		}},
		{"pyproject", map[string]string{"pyproject.toml": `[project]
name = "x"
# pin it: "langgraph>=0.2" is not enough
dependencies = [
  "litellm>=1.0",
  "crewai[tools,LiteLLM]==0.80.0",
  "langgraph>=0.2",
  'langchain-anthropic',
  "langgraph==0.2.1",
  "LangChain_Core == 0.3.1 ; python_version >= '3.11'",
  "crewai[anthropic]==0.80.0",
  "strands-agents==1.*",
  "google-adk @ https://example.com/adk.whl",
  "requests",
]
[project.optional-dependencies]
ai = ["openai-agents", "agent-framework-core===1.0"]
[dependency-groups]
dev = ["pytest", {include-group = "x"}, "autogen-agentchat~=0.4", "litellm"]
[tool.uv]
dev-dependencies = ["crewai"]
`}, []expect{
			{"pyproject.toml:5:3 banned-dependency", "`litellm>=1.0` in [project] dependencies is litellm: Orchestrator Zero keeps litellm out of everything it runs after the LiteLLM supply-chain incident of March 2026"},
			{"pyproject.toml:6:3 banned-dependency", "`crewai[tools,LiteLLM]==0.80.0` in [project] dependencies pulls in litellm"},
			{"pyproject.toml:7:3 unpinned-dependency", "`langgraph>=0.2` in [project] dependencies is not pinned; pin agent frameworks to one version with ==, e.g. langgraph==X.Y.Z"},
			{"pyproject.toml:8:3 unpinned-dependency", "`langchain-anthropic`"},
			{"pyproject.toml:12:3 unpinned-dependency", "`strands-agents==1.*`"},
			{"pyproject.toml:17:7 unpinned-dependency", "`openai-agents` in [project.optional-dependencies] ai"},
			{"pyproject.toml:19:41 unpinned-dependency", "`autogen-agentchat~=0.4` in [dependency-groups] dev"},
			{"pyproject.toml:19:67 banned-dependency", "`litellm` in [dependency-groups] dev"},
			{"pyproject.toml:21:21 unpinned-dependency", "`crewai` in [tool.uv] dev-dependencies"},
		}},
		{"toml-syntax", map[string]string{"pyproject.toml": "[project\nname = 1\n"}, []expect{
			{"pyproject.toml:1:9 toml-syntax", "expected ']'"},
		}},
		{"no pyproject", map[string]string{"pyproject.toml": del}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkFindings(t, runPlugin(t, tc.edits), tc.want...)
		})
	}
}

// Findings in one file do not stop the others: everything in one pass.
func TestOnePass(t *testing.T) {
	rep := runPlugin(t, map[string]string{
		"oz0-plugin.yaml":         replace(templateManifest, "formats: [anthropic-messages]", "formats: [x]"),
		"agents/acme-triage.yaml": "name: [\n",
		"agents/b.yaml":           replace(templateAgent, "name: acme-triage", "name: b", "timeout: 10m", "timeout: x"),
		"pyproject.toml":          `[project]` + "\ndependencies = [\"litellm\"]\n",
	})
	rules := map[string]bool{}
	for _, f := range rep.Diagnostics {
		rules[f.Rule.String()] = true
	}
	for _, r := range []string{"unknown-format", "yaml-syntax", "timeout-duration", "banned-dependency"} {
		if !rules[r] {
			t.Errorf("no %s finding in %v", r, rep.Diagnostics)
		}
	}
	if !rep.HasErrors() {
		t.Error("HasErrors is false")
	}
}

// A manifest that cannot be read as a mapping stops the cross-file rules
// but not the report.
func TestBrokenManifestStillReports(t *testing.T) {
	rep := runPlugin(t, map[string]string{"oz0-plugin.yaml": "- just\n- a list\n"})
	checkFindings(t, rep, expect{"oz0-plugin.yaml:1:1 invalid-value", "the document must be a mapping, not a list"})
}

func TestRunErrors(t *testing.T) {
	if _, err := Run(filepath.Join(t.TempDir(), "nope")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing dir: %v", err)
	}
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	if _, err := Run(f); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a file: %v", err)
	}
	if os.Geteuid() != 0 {
		dir := writePlugin(t, nil)
		p := filepath.Join(dir, "agents", "acme-triage.yaml")
		os.Chmod(p, 0)
		defer os.Chmod(p, 0o644)
		if _, err := Run(dir); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("unreadable agent: %v", err)
		}
	}
}

func TestRunFS(t *testing.T) {
	fsys := mapFS(templateFiles())
	rep, err := RunFS(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Diagnostics) > 0 {
		t.Errorf("findings: %v", rep.Diagnostics)
	}
}

func TestRunMany(t *testing.T) {
	var dirs []string
	for i := range 20 {
		var edits map[string]string
		if i%2 == 1 {
			edits = map[string]string{"prompts/acme-triage.md": del}
		}
		dirs = append(dirs, writePlugin(t, edits))
	}
	dirs = append(dirs, filepath.Join(t.TempDir(), "missing"))
	reps, err := RunMany(dirs, 4)
	if err == nil || reps[len(reps)-1] != nil {
		t.Errorf("the missing dir: %v", err)
	}
	for i, rep := range reps[:20] {
		if rep == nil || rep.HasErrors() != (i%2 == 1) {
			t.Errorf("dir %d: %+v", i, rep)
		}
	}
}
