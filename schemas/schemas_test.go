package schemas

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/orchestrator-zero/oz0/diag"
)

func TestSchemasCompileAndAreDocumented(t *testing.T) {
	names := Names()
	want := []string{Agent, Manifest, Skill}
	mine := map[string]bool{Agent: true, Manifest: true, Skill: true}
	for _, w := range want {
		found := false
		for _, n := range names {
			found = found || n == w
		}
		if !found {
			t.Errorf("schema %s is not embedded (have %v)", w, names)
		}
	}
	for _, name := range names {
		if _, err := Compile(name); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		data, _ := Read(name)
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if doc["$id"] != URL(name) {
			t.Errorf("%s: $id is %v, want %s", name, doc["$id"], URL(name))
		}
		if doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
			t.Errorf("%s: $schema is %v", name, doc["$schema"])
		}
		if s, _ := doc["title"].(string); s == "" {
			t.Errorf("%s: no title", name)
		}
		if mine[name] {
			checkSchemaDoc(t, name, "#", doc)
		}
	}
}

// TestEmbeddedSchemasAreValid validates each embedded schema against its metaschema, and compiles
// its patterns, as a compiler does by default: Compile trusts them (TrustSchemas, lazy patterns),
// on the strength of this test.
func TestEmbeddedSchemasAreValid(t *testing.T) {
	c := newCompiler() // neither trusting nor lazy
	for _, name := range Names() {
		mu.Lock() // the loader reads the documents with mu held
		_, err := c.Compile(URL(name))
		mu.Unlock()
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The check has teeth: a schema that breaks its metaschema, or has a pattern that does not
	// compile, fails it.
	for _, bad := range []string{`{"type": 5}`, `{"pattern": "("}`} {
		var doc any
		if err := json.Unmarshal([]byte(bad), &doc); err != nil {
			t.Fatal(err)
		}
		c := newCompiler()
		if err := c.AddResource(BaseURL+"bad.schema.json", doc); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		_, err := c.Compile(BaseURL + "bad.schema.json")
		mu.Unlock()
		if err == nil {
			t.Errorf("%s compiled: the check would pass an invalid schema", bad)
		}
	}
}

// TestTrustedCompileStillValidates checks that a trusted compile with lazy patterns still
// rejects what its schema's pattern rejects.
func TestTrustedCompileStillValidates(t *testing.T) {
	sch, err := Compile(Manifest)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		doc  string
		ok   bool
	}{
		{"a valid name", `{"name": "acme-triage"}`, true},
		{"a name its pattern refuses", `{"name": "Acme Triage!"}`, false},
		{"a name of 63 characters", `{"name": "a` + strings.Repeat("b", 62) + `"}`, true},
		{"a name of 64 characters", `{"name": "a` + strings.Repeat("b", 63) + `"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc any
			if err := json.Unmarshal([]byte(tc.doc), &doc); err != nil {
				t.Fatal(err)
			}
			err := sch.Validate(doc)
			if refused := err != nil && strings.Contains(err.Error(), "/name"); refused == tc.ok {
				t.Errorf("validate %s: %v", tc.doc, err)
			}
		})
	}
}

// checkSchemaDoc checks that every property has a description and every
// object schema with properties is closed, except the free-form ones.
func checkSchemaDoc(t *testing.T, name, ptr string, v any) {
	switch v := v.(type) {
	case map[string]any:
		if props, ok := v["properties"].(map[string]any); ok {
			ap, hasAP := v["additionalProperties"]
			if !hasAP || ap != false {
				if _, ok := v["unevaluatedProperties"]; !ok {
					t.Errorf("%s %s: an object schema with properties that is not closed", name, ptr)
				}
			}
			for k, p := range props {
				pm, _ := p.(map[string]any)
				if d, _ := pm["description"].(string); d == "" {
					t.Errorf("%s %s/properties/%s: no description", name, ptr, k)
				}
			}
		}
		for k, x := range v {
			checkSchemaDoc(t, name, ptr+"/"+k, x)
		}
	case []any:
		for i, x := range v {
			checkSchemaDoc(t, name, fmt.Sprintf("%s/%d", ptr, i), x)
		}
	}
}

func parse(t *testing.T, doc string) *yaml.Node {
	t.Helper()
	root, ps := ParseYAML([]byte(doc))
	if len(ps) > 0 || root == nil {
		t.Fatalf("parse: %v", ps)
	}
	return root
}

const goodAgent = `name: acme-triage
description: "Sorts support tickets"
runtime: harness:acme-triage
model:
  use: default
instructions: prompts/acme-triage.md
input: text
output: text
limits:
  max_steps: 10
  timeout: 10m
harness:
  tools: [notify_team]
`

const goodManifest = `apiVersion: oz0/v1
name: acme-triage
version: 0.1.0
description: "Sorts support tickets"
runtime: python
harnesses:
  - name: acme-triage
    command: ["python", "-m", "acme_triage"]
    permissions: true
    tools: [notify_team]
    formats: [anthropic-messages]
agents: [agents/]
skills: [skills/]
`

func TestValidDocuments(t *testing.T) {
	for _, tc := range []struct {
		name        string
		schema, doc string
	}{
		{"agent", Agent, goodAgent},
		{"manifest", Manifest, goodManifest},
		{"skill", Skill, "name: oz0-plugin\ndescription: How to work on a plugin.\nlicense: MIT\nallowed-tools: Read Grep\nmetadata: {owner: acme}\n"},
		{"skill with a list of allowed tools", Skill, "name: x\ndescription: d\nallowed-tools: [Read, Grep]\n"},
		{"agent with schemas and limits", Agent, "name: a\nruntime: harness:a\ninstructions: p.md\ninput: {schema: {type: object}}\noutput: {schema: schemas/out.json}\nlimits: {max_tokens: 1000, max_cost_usd: 0.5, max_event_bytes: 134217728, max_event_bytes_per_second: 33554432, max_concurrent: 4}\nmodel: {use: fast, name: claude-x}\nharness: {options: {anything: [1, {b: c}]}, requires_approval: [t]}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if ps := ValidateYAML(tc.schema, parse(t, tc.doc)); len(ps) > 0 {
				t.Errorf("%s: unexpected problems %v in\n%s", tc.schema, ps, tc.doc)
			}
		})
	}
}

// want is one expected problem: position, kind and a part of the message.
type expect struct {
	line, col int
	kind      diag.RuleID
	msg       string
}

func check(t *testing.T, schema, doc string, wants ...expect) {
	t.Helper()
	ps := ValidateYAML(schema, parse(t, doc))
	if len(ps) != len(wants) {
		t.Errorf("got %d problems, want %d:\n%s", len(ps), len(wants), dump(ps))
		return
	}
	for i, w := range wants {
		p := ps[i]
		if p.Line != w.line || p.Col != w.col || p.Rule != w.kind || !strings.Contains(p.Message, w.msg) {
			t.Errorf("problem %d = %v; want %d:%d %s %q", i, p, w.line, w.col, w.kind, w.msg)
		}
	}
}

func dump(ps []diag.Diagnostic) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "%d:%d: %s: %s\n", p.Line, p.Col, p.Rule, p.Message)
	}
	return b.String()
}

func TestUnknownKeyAtKeyWithSuggestion(t *testing.T) {
	doc := strings.Replace(goodAgent, "  tools: [notify_team]", "  tool: [notify_team]", 1)
	check(t, Agent, doc, expect{13, 3, diag.UnknownKey, "unknown key `tool` in `harness`; did you mean `tools`?"})

	check(t, Manifest, "api_version: oz0/v1\n"+strings.TrimPrefix(goodManifest, "apiVersion: oz0/v1\n"),
		expect{1, 1, diag.MissingKey, "missing required key `apiVersion`"},
		expect{1, 1, diag.UnknownKey, "unknown key `api_version`; did you mean `apiVersion`?"})

	// Nothing close: the allowed keys are listed.
	check(t, Agent, goodAgent+"zzz: 1\n", expect{14, 1, diag.UnknownKey, "expected one of description, harness, input"})
}

func TestMissingKeyAtParentMapping(t *testing.T) {
	doc := strings.Replace(goodAgent, "runtime: harness:acme-triage\n", "", 1)
	check(t, Agent, doc, expect{1, 1, diag.MissingKey, "missing required key `runtime`"})

	// In a nested mapping: at that mapping (its first key).
	doc = strings.Replace(goodManifest, "  - name: acme-triage\n    command", "  - command", 1)
	check(t, Manifest, doc, expect{7, 5, diag.MissingKey, "missing required key `name` in `harnesses[0]`"})

	// An empty flow mapping: at the braces.
	check(t, Agent, "name: a\nruntime: harness:a\ninstructions: p\ninput: {}\n",
		expect{4, 8, diag.MissingKey, "missing required key `schema` in `input`"})
}

func TestWrongTypeAtValue(t *testing.T) {
	doc := strings.Replace(goodAgent, "max_steps: 10", `max_steps: "10"`, 1)
	check(t, Agent, doc, expect{10, 14, diag.InvalidValue, "`max_steps` must be an integer, not a string"})

	doc = strings.Replace(goodManifest, "version: 0.1.0", "version: 1.0", 1)
	check(t, Manifest, doc, expect{3, 10, diag.InvalidValue, "`version` must be a string, not a number; quote it: \"1.0\""})

	check(t, Agent, "name: a\nruntime: harness:a\ninstructions: p\nlimits:\n", expect{4, 8, diag.InvalidValue, "`limits` must be a mapping, not empty"})
	check(t, Agent, "name: a\nruntime: harness:a\ninstructions: p\nlimits: {timeout: 10}\n", expect{4, 19, diag.InvalidValue, "`timeout` must be a duration such as 10m or 90s, not a number"})
	check(t, Manifest, strings.Replace(goodManifest, `["python", "-m", "acme_triage"]`, `["python", 3]`, 1),
		expect{8, 25, diag.InvalidValue, "`command[1]` must be a string, not a number; quote it: \"3\""})
}

func TestValueMessages(t *testing.T) {
	check(t, Manifest, strings.Replace(goodManifest, "apiVersion: oz0/v1", "apiVersion: v1", 1),
		expect{1, 13, diag.InvalidValue, "`apiVersion` must be `oz0/v1`, not `v1`"})
	check(t, Manifest, strings.Replace(goodManifest, "runtime: python", "runtime: pyhton", 1),
		expect{5, 10, diag.InvalidValue, "`runtime` must be one of python, node, go, binary, not `pyhton`; did you mean `python`?"})
	check(t, Manifest, strings.Replace(goodManifest, "name: acme-triage\nversion", "name: Acme_Triage\nversion", 1),
		expect{2, 7, diag.InvalidValue, "`name` must be lowercase letters, digits and hyphens"})
	check(t, Manifest, strings.Replace(goodManifest, "version: 0.1.0", "version: v1", 1),
		expect{3, 10, diag.InvalidValue, "`version` must be a semantic version"})
	check(t, Manifest, strings.Replace(goodManifest, "tools: [notify_team]", "tools: [a, b, a]", 1),
		expect{10, 19, diag.InvalidValue, "`tools` lists `a` more than once"})
	check(t, Manifest, strings.Replace(goodManifest, "agents: [agents/]", "agents: []", 1),
		expect{12, 9, diag.InvalidValue, "`agents` must list at least 1 item"})
	check(t, Agent, "name: a\nruntime: harness:a\ninstructions: p\ninput: xml\n",
		expect{4, 8, diag.InvalidValue, "`input` must be text, json or a mapping with a schema key, not `xml`"})
	check(t, Agent, "name: a\nruntime: harness:a\ninstructions: p\noutput: {schema: x.json, extra: 1}\n",
		expect{4, 26, diag.UnknownKey, "unknown key `extra` in `output`; the only key allowed is `schema`"})
	check(t, Agent, "name: a\nruntime: python\ninstructions: p\n",
		expect{2, 10, diag.InvalidValue, "`runtime` must be harness:<name>"})
	check(t, Agent, "name: a\nruntime: harness:a\ninstructions: p\nlimits: {max_event_bytes: 1024}\n",
		expect{4, 27, diag.InvalidValue, "`max_event_bytes` must be at least 65536"})
	check(t, Agent, "name: a\nruntime: harness:a\ninstructions: p\nlimits: {max_cost_usd: 0, max_tokens: 0}\n",
		expect{4, 24, diag.InvalidValue, "`max_cost_usd` must be greater than 0"},
		expect{4, 39, diag.InvalidValue, "`max_tokens` must be at least 1, not 0"})
	check(t, Agent, "name: a\nruntime: harness:a\ninstructions: p\nlimits: {max_concurrent: 0}\n",
		expect{4, 26, diag.InvalidValue, "`max_concurrent` must be at least 1, not 0"})
	check(t, Skill, "name: x\ndescription: \"\"\n", expect{2, 14, diag.InvalidValue, "`description` must not be empty"})
	check(t, Skill, "name: x\ndescription: "+strings.Repeat("a", 1025)+"\n", expect{2, 14, diag.InvalidValue, "at most 1024 characters"})
	check(t, Manifest, "", expect{1, 1, diag.InvalidValue, "the document must be a mapping, not empty"})
	check(t, Manifest, "- a\n", expect{1, 1, diag.InvalidValue, "the document must be a mapping, not a list"})
}

func TestAliasesAndMergeKeys(t *testing.T) {
	// A merged mapping validates like a written one; a problem in it is
	// placed where it is written (the anchor).
	check(t, Agent, "name: a\nruntime: harness:a\ninstructions: p\nharness:\n  tools: &t [x]\n  requires_approval: *t\nlimits:\n  <<: {max_steps: 1}\n  timeout: 1m\n")
	check(t, Agent, "name: a\nruntime: harness:a\ninstructions: p\nlimits:\n  <<: {max_steps: x}\n  timeout: 1m\n",
		expect{5, 19, diag.InvalidValue, "`max_steps` must be an integer"})
	// An explicit key wins over a merged one.
	root := parse(t, "a: &a {x: 1, y: 2}\nb:\n  <<: [*a, {z: 3}]\n  x: 9\n")
	v, ps := ToValue(root)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	b := v.(map[string]any)["b"].(map[string]any)
	if b["x"] != json.Number("9") || b["y"] != json.Number("2") || b["z"] != json.Number("3") {
		t.Errorf("merged b = %v", b)
	}
	if _, v := Locate(root, "b", "y"); v == nil || v.Line != 1 {
		t.Errorf("Locate(b, y) = %v", v)
	}
	// A merge of a scalar is an error.
	_, ps = ToValue(parse(t, "a:\n  <<: 1\n"))
	if len(ps) != 1 || !strings.Contains(ps[0].Message, "merge key") {
		t.Errorf("merge of a scalar: %v", ps)
	}
}

func TestToValueTypes(t *testing.T) {
	root := parse(t, "i: 10\nh: 0x1F\nf: 1.5\nb: true\nn: ~\nd: 2001-12-14\ns: '10'\nbig: 18446744073709551615\nbin: !!binary aGk=\ncustom: !foo bar\n")
	v, ps := ToValue(root)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	got := v.(map[string]any)
	want := map[string]any{
		"i": json.Number("10"), "h": json.Number("31"), "f": 1.5, "b": true, "n": nil,
		"d": "2001-12-14", "s": "10", "big": json.Number("18446744073709551615"), "bin": "aGk=", "custom": "bar",
	}
	for k, w := range want {
		if fmt.Sprintf("%T %v", got[k], got[k]) != fmt.Sprintf("%T %v", w, w) {
			t.Errorf("%s = %T %v, want %T %v", k, got[k], got[k], w, w)
		}
	}
	_, ps = ToValue(parse(t, "a: .inf\n"))
	if len(ps) != 1 || ps[0].Rule != diag.InvalidValue || !strings.Contains(ps[0].Message, "finite") {
		t.Errorf(".inf: %v", ps)
	}
	// .inf is reported once, not again as a type error.
	check(t, Agent, "name: a\nruntime: harness:a\ninstructions: p\nlimits: {max_cost_usd: .nan}\n",
		expect{4, 24, diag.InvalidValue, "`max_cost_usd` must be a finite number, not .nan"})
}

func TestKeysAndDuplicates(t *testing.T) {
	check(t, Agent, "name: a\nname: b\nruntime: harness:a\ninstructions: p\n",
		expect{2, 1, diag.YAMLSyntax, "duplicate key `name` (first on line 1)"})
	check(t, Agent, "name: a\nruntime: harness:a\ninstructions: p\n1: x\n",
		expect{4, 1, diag.InvalidValue, "a mapping key must be a string, not an integer; quote it: \"1\""})
	check(t, Agent, "name: a\nruntime: harness:a\ninstructions: p\n? [a]\n: x\n",
		expect{4, 3, diag.InvalidValue, "a mapping key must be a string, not a mapping or a list"})
}

func TestLimits(t *testing.T) {
	var bomb strings.Builder
	bomb.WriteString("a: &a [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&bomb, "%c: &%c [", 'a'+i, 'a'+i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				bomb.WriteString(", ")
			}
			fmt.Fprintf(&bomb, "*%c", 'a'+i-1)
		}
		bomb.WriteString("]\n")
	}
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	for _, tc := range []struct{ name, doc, msg string }{
		{"billion laughs", bomb.String(), "too many aliases: the document expands to more than 100000 nodes, "},
		// Many nodes written out are no alias bomb, and are not called one.
		{"many nodes, no alias", "a: [" + strings.Repeat("1,", 100_001) + "1]\n", "the document has more than 100000 nodes (keys, values and list items); split it"},
		{"deep flow", deep, "nesting deeper than 64 levels"},
		{"deep block", strings.Repeat("- ", 100) + "x\n", "nesting deeper than 64 levels"},
		{"cycle", "a: &a [*a]\n", "refers to a node that contains it"},
		{"merge cycle", "a: &a {<<: *a}\n", "refers to a mapping that contains it"},
		{"merge of a list holding itself", "h: &h [{name: a, <<: *h}]\n", "refers to a mapping that contains it"},
	} {
		// The bound is the answer itself: an expansion without limits would not end (go test's
		// -timeout stops it), where a clock's bound fails on a loaded machine.
		t.Run(tc.name, func(t *testing.T) {
			root, ps := ParseYAML([]byte(tc.doc))
			if root == nil {
				t.Fatalf("parse: %v", ps)
			}
			ps = ValidateYAML(Manifest, root)
			if len(ps) != 1 || ps[0].Rule != diag.YAMLLimits || !strings.Contains(ps[0].Message, tc.msg) {
				t.Errorf("got %v, want one yaml-limits problem %q", ps, tc.msg)
			}
		})
	}
}

func TestParseYAML(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		line, col int
		kind      diag.RuleID
		msg       string
	}{
		{"syntax", "a: b\n\tc: d\n", 2, 1, diag.YAMLSyntax, "tab character"},
		{"unclosed", "a: [b\n", 1, 5, diag.YAMLSyntax, "did not find expected ',' or ']'"},
		{"invalid utf-8", "a: b\nc: \xff\n", 2, 4, diag.NotText, "not UTF-8 text: invalid byte 0xff"},
		{"nul", "a: b\x00\n", 1, 5, diag.NotText, "binary data: a NUL byte"},
		{"control", "a: \x1b[31m\n", 1, 4, diag.NotText, "control character U+001B"},
		{"second document", "a: 1\n---\nb: 2\n", 3, 1, diag.YAMLSyntax, "a second YAML document"},
		{"too deep for the parser", strings.Repeat("[", 20000), 1, 1, diag.YAMLSyntax, "exceeded max depth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ps := ParseYAML([]byte(tc.doc))
			if len(ps) != 1 {
				t.Fatalf("got %v", ps)
			}
			p := ps[0]
			if p.Rule != tc.kind || !strings.Contains(p.Message, tc.msg) || (tc.line > 0 && (p.Line != tc.line || p.Col != tc.col)) {
				t.Errorf("got %v; want %d:%d %s %q", p, tc.line, tc.col, tc.kind, tc.msg)
			}
		})
	}
	// Accepted: an empty file, a BOM, a trailing ---, CRLF line ends.
	for _, doc := range []string{"", "\xef\xbb\xbfa: 1\n", "a: 1\n---\n", "a: 1\r\nb: 2\r\n"} {
		root, ps := ParseYAML([]byte(doc))
		if root == nil || len(ps) > 0 {
			t.Errorf("%q: %v", doc, ps)
		}
	}
}

// A syntax error is reported where the parser failed, not where yaml.v3's message says (the start
// of the mapping or list it was parsing, often line 1).
func TestParseYAMLSyntaxErrorPosition(t *testing.T) {
	manifest := `# the scaffold writes its schema modeline here
apiVersion: oz0/v1
name: acme
version: 0.1.0
description: "x"
runtime: python
harnesses:
  - name: acme
    command: ["python", "-m", "acme"]
    permissions: true # it asks before each tool call
    tools: [notify_team]
    formats: [anthropic-messages]
agents: [agents/]
skills: [skills/]
  oops: 1
`
	for _, tc := range []struct {
		name, doc string
		line, col int
		msg       string
	}{
		{"key indented under a top-level list", manifest, 15, 3, "did not find expected key"},
		{"list item in a mapping", "key: value\n- item\n", 2, 1, "did not find expected key"},
		{"item of a list indented too far", "- item: 1\n  attr: 1\n- item: 2\n  attr: 2\n  - item: 3\n  attr: 3\n", 5, 3, "did not find expected key"},
		{"key indented deeper than its siblings", "key_one:\n  inner: 1\n\nkey_two:\n    inner: 2\n  other: 3\n", 6, 3, "did not find expected key"},
		{"two colons", "a: 1\nb: c: d\n", 2, 5, "mapping values are not allowed in this context"},
		{"a key after a scalar", "a: 1\n  b: 2\n", 2, 4, "mapping values are not allowed in this context"},
		{"tab indent", "a: 1\nb: 2\n\tc: d\n", 3, 1, "found a tab character that violates indentation"},
		{"reserved character", "a: 1\nb: @x\n", 2, 4, "found character that cannot start any token"},
		{"in a second document", "a: 1\n---\nb: c: d\n", 3, 5, "mapping values are not allowed in this context"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ps := ParseYAML([]byte(tc.doc))
			if len(ps) != 1 {
				t.Fatalf("got %v", ps)
			}
			if p := ps[0]; p.Rule != diag.YAMLSyntax || p.Message != tc.msg || p.Line != tc.line || p.Col != tc.col {
				t.Errorf("got %d:%d %s %q; want %d:%d %q", p.Line, p.Col, p.Rule, p.Message, tc.line, tc.col, tc.msg)
			}
		})
	}
}

func TestClosest(t *testing.T) {
	for _, tc := range []struct {
		word string
		cand []string
		want string
	}{
		{"tool", []string{"tools", "options"}, "tools"},
		{"api_version", []string{"apiVersion", "name"}, "apiVersion"},
		{"timout", []string{"timeout", "max_steps"}, "timeout"},
		{"anthropic", []string{"anthropic-messages", "openai-chat"}, "anthropic-messages"},
		{"openai", []string{"anthropic-messages", "openai-chat"}, "openai-chat"},
		{"zzz", []string{"tools", "options"}, ""},
		{"x", []string{"y"}, "y"},
	} {
		t.Run(tc.word, func(t *testing.T) {
			got, ok := Closest(tc.word, tc.cand)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("Closest(%q) = %q, %v; want %q", tc.word, got, ok, tc.want)
			}
		})
	}
}

func TestLocate(t *testing.T) {
	root := parse(t, "a:\n  - x\n  - {b: &v 1}\nc: *v\n")
	k, v := Locate(root, "a", "1", "b")
	if k == nil || k.Line != 3 || k.Column != 6 || v == nil || v.Column != 9 {
		t.Errorf("a/1/b: key %v value %v", k, v)
	}
	if _, v := Locate(root, "c"); v == nil || v.Kind != yaml.AliasNode || v.Line != 4 {
		t.Errorf("c: %v", v)
	}
	for _, p := range [][]string{{"zz"}, {"a", "9"}, {"a", "x"}, {"c", "d"}} {
		if _, v := Locate(root, p...); v != nil {
			t.Errorf("%v: found %v", p, v)
		}
	}
}

func TestEndOfPlainScalars(t *testing.T) {
	root := parse(t, "name: acmé\nquoted: \"x\"\nblock: |\n  a\n")
	k, v := Locate(root, "name")
	if l, c := End(k); l != 1 || c != 5 {
		t.Errorf("key ends at %d:%d", l, c)
	}
	if l, c := End(v); l != 1 || c != 11 {
		t.Errorf("value ends at %d:%d (columns count characters)", l, c)
	}
	for _, key := range []string{"quoted", "block"} {
		if _, v := Locate(root, key); v == nil {
			t.Fatal(key)
		} else if l, c := End(v); l != 0 || c != 0 {
			t.Errorf("%s: %d:%d, want unknown", key, l, c)
		}
	}
	ps := ValidateYAML(Agent, parse(t, "name: a\nruntime: harness:a\ninstructions: p.md\ncolour: red\n"))
	if len(ps) != 1 || ps[0].Line != 4 || ps[0].Col != 1 || ps[0].EndLine != 4 || ps[0].EndCol != 7 {
		t.Errorf("unknown key: %+v", ps)
	}
}

// SARIF output declares columnKind unicodeCodePoints: yaml.v3's columns and End both count
// code points, not bytes or UTF-16 units (an emoji is one column, é is one).
func TestColumnsAreCodePoints(t *testing.T) {
	root := parse(t, "é😀: x 😀y\n")
	k, v := Locate(root, "é😀")
	if k == nil || v == nil {
		t.Fatal("not found")
	}
	if v.Column != 5 {
		t.Errorf("the value starts at column %d, want 5 (é and 😀 are a column each)", v.Column)
	}
	if l, c := End(v); l != 1 || c != 9 {
		t.Errorf("the value ends at %d:%d, want 1:9 (exclusive)", l, c)
	}
}

// Merge keys that pull in merge keys expand as aliases do: JSON counts them against the same
// budget as ToValue, and refuses a document that would expand without end (found by fuzzing).
func TestJSONMergeKeyBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("l0: &l0 {x: 1}\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&b, "l%d: &l%d {<<: [", i, i)
		for j := range 8 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]}\n")
	}
	root := parse(t, b.String())
	if _, err := JSON(root); err == nil || !strings.Contains(err.Error(), "too many aliases: the document expands to more than 100000 nodes") {
		t.Errorf("err %v", err)
	}
	if _, ps := ToValue(root); len(ps) != 1 || ps[0].Rule != diag.YAMLLimits {
		t.Errorf("ToValue: %v", ps)
	}
}
