package lint

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/orchestrator-zero/oz0/diag"
)

func manifestSeeds() []string {
	return []string{
		templateManifest,
		"",
		"apiVersion: oz0/v1\n",
		strings.Replace(templateManifest, "    command:", "  command:", 1),
		strings.Replace(templateManifest, "agents: [agents/]", "agents: [../x, /abs, agents/, '']", 1),
		strings.Replace(templateManifest, "formats: [anthropic-messages]", "formats: [x, 1, {a: b}]", 1),
		strings.Replace(templateManifest, `["python", "-m", "acme_triage"]`, `[python, -m]`, 1),
		strings.Replace(templateManifest, `["python", "-m", "acme_triage"]`, `[python, -m, "a/../b"]`, 1),
		"harnesses: &h [{name: a, command: [python, -m, x], <<: *h}]\n",
		"a: &a {b: *a}\n",
		"x: &x [*x, *x]\n",
		billionLaughs(),
		strings.Repeat("[", 200),
		strings.Repeat("{a: ", 100),
		"name: \xff\xfe\n",
		"\x00\x01\x02",
		"---\na: 1\n---\nb: 2\n",
		"? [a, b]\n: c\n1: 2\n~: 3\n",
		"apiVersion: !!binary b3owL3Yx\nversion: !!float 1\nname: !custom x\n",
		"runtime: .inf\nversion: 0x10\nharnesses: [{name: a, command: [python, -mfoo.bar]}]\n",
	}
}

// FuzzLoadManifest lints a plugin whose manifest is the fuzz input: it
// must never panic, never fail to report, and only report known rules.
func FuzzLoadManifest(f *testing.F) {
	for _, s := range manifestSeeds() {
		f.Add([]byte(s))
	}
	files := templateFiles()
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := mapFS(files)
		fsys[ManifestFile].Data = data
		// Bounded time: a slow input crashes the worker, which records it.
		tm := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("slow: %q", data)) })
		defer tm.Stop()
		rep, err := RunFS(fsys)
		if err != nil {
			t.Fatalf("RunFS: %v", err)
		}
		checkReport(t, rep)
	})
}

// FuzzLoadAgent does the same for an agent definition.
func FuzzLoadAgent(f *testing.F) {
	for _, s := range []string{
		templateAgent,
		strings.Replace(templateAgent, "input: text", "input: {schema: {type: [1, {}]}}", 1),
		strings.Replace(templateAgent, "input: text", "input: {schema: {$ref: 'file:///etc/passwd'}}", 1),
		strings.Replace(templateAgent, "input: text", "input: {schema: {$ref: '#/$defs/x', $defs: {x: {$ref: '#/$defs/x'}}}}", 1),
		strings.Replace(templateAgent, "timeout: 10m", "timeout: 9999999999999999h", 1),
		strings.Replace(templateAgent, "max_steps: 10", "max_steps: -0.0", 1),
		"name: [\n",
	} {
		f.Add([]byte(s))
	}
	files := templateFiles()
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := mapFS(files)
		fsys["agents/acme-triage.yaml"].Data = data
		rep, err := RunFS(fsys)
		if err != nil {
			t.Fatalf("RunFS: %v", err)
		}
		checkReport(t, rep)
	})
}

func checkReport(t *testing.T, rep *diag.Report) {
	t.Helper()
	for _, f := range rep.Diagnostics {
		r := f.Rule.Rule()
		if r.Short == "" {
			t.Fatalf("unknown rule %q in %+v", f.Rule, f)
		}
		if f.Severity != r.Severity || f.Line < 0 || f.Col < 0 || f.Message == "" || f.File == "" {
			t.Fatalf("bad finding %+v", f)
		}
		if strings.ContainsAny(f.Message, "\n\r\x00") {
			t.Fatalf("message with a control character: %q", f.Message)
		}
	}
	for _, format := range diag.Formats {
		var b strings.Builder
		if err := diag.Write(&b, rep, format, diag.Tool{Version: "test"}); err != nil {
			t.Fatalf("Write %s: %v", format, err)
		}
	}
}

// FuzzNodeHarness lints a plugin with a Node harness whose package.json and code are the fuzz
// input; and jsCode keeps every newline and the length of the code it blanks.
func FuzzNodeHarness(f *testing.F) {
	for _, s := range []string{
		`{"dependencies": {"@strands-agents/sdk": "^1.19.0", "zod": "4.6.7"}}`,
		`{"dependencies": {"a": ["b"], "c": {"d": "e"}}, "x": [[{}]]}`,
		"new OpenAIModel({ api: \"chat\" }); new OpenAIModel({ modelId: `${a}` })",
		"const re = /[/\"]/g, x = a / b / c; // OpenAI\n/* AnthropicModel */ `unclosed ${",
		"new OpenAIModel({ { { ",
		"'\\",
		"",
	} {
		f.Add([]byte(s))
	}
	files := templateFiles()
	files[ManifestFile] = strings.Replace(templateManifest, "agents: [agents/]", "  - name: web\n    command: [node, src/main.mjs]\n    formats: [anthropic-messages, openai-chat]\nagents: [agents/]", 1)
	f.Fuzz(func(t *testing.T, data []byte) {
		code := jsCode(string(data))
		if len(code) != len(data) || strings.Count(code, "\n") != strings.Count(string(data), "\n") {
			t.Fatalf("jsCode changed the shape of %q: %q", data, code)
		}
		fsys := mapFS(files)
		fsys[PackageJSONFile] = &fstest.MapFile{Data: data, Mode: 0o644}
		fsys["src/main.mjs"] = &fstest.MapFile{Data: data, Mode: 0o644}
		rep, err := RunFS(fsys)
		if err != nil {
			t.Fatalf("RunFS: %v", err)
		}
		checkReport(t, rep)
	})
}
