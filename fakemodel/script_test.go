package fakemodel

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/schemas"
)

func TestFakeModelSchemaEmbedded(t *testing.T) {
	if _, err := schemas.Compile(SchemaName); err != nil {
		t.Fatal(err)
	}
	data, err := schemas.Read(SchemaName)
	if err != nil || !strings.Contains(string(data), `"$id": "`+schemas.URL(SchemaName)+`"`) {
		t.Fatalf("the schema's $id is not %s: %v", schemas.URL(SchemaName), err)
	}
}

func TestFakeModelParseScript(t *testing.T) {
	s, err := ParseScript("s.yaml", []byte(`# yaml-language-server: $schema=https://raw.githubusercontent.com/orchestrator-zero/oz0/main/schemas/fake-model-script.schema.json
models: [a, b]
require_key: k
rules:
  - name: triage
    match: {user: "(?i)charged twice", system: "ticket", model: "^claude", tools: false, tool_result: "done"}
    reply:
      json: {team: billing, reply: "Sorry.", n: 1.5, list: [1, true, null, "<&>"]}
      usage: {input_tokens: 42, cache_read_input_tokens: 7}
      delay: 20ms
      stream_delay: 1m30s
      stop_reason: max_tokens
    times: 3
  - reply:
      tool_calls:
        - name: notify_team
          arguments: &args {team: billing, summary: x}
        - name: other
          arguments: {<<: *args, team: account, extra: 1}
      error: {status: 429, retry_after: 2s, after: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "s.yaml" || strings.Join(s.Models, ",") != "a,b" || s.RequireKey != "k" || len(s.Rules) != 2 {
		t.Fatalf("%+v", s)
	}
	r := s.Rules[0]
	if r.Name != "triage" || r.Times != 3 || r.Line != 5 || r.Match.User.String() != "(?i)charged twice" || r.Match.Tools == nil || r.Match.Tools.Want ||
		r.Match.ToolResult == nil || !r.Match.ToolResult.Want || r.Match.ToolResult.Pattern.String() != "done" || r.Match.Model == nil || r.Match.System == nil {
		t.Errorf("rule 1 %+v", r)
	}
	if r.Reply.Text != `{"team":"billing","reply":"Sorry.","n":1.5,"list":[1,true,null,"<&>"]}` {
		t.Errorf("json reply %s", r.Reply.Text)
	}
	if *r.Reply.Usage != (Usage{InputTokens: 42, OutputTokens: -1, CacheReadInputTokens: 7}) || r.Reply.Delay != 20*time.Millisecond || r.Reply.StreamDelay != 90*time.Second || r.Reply.StopReason != "max_tokens" {
		t.Errorf("reply %+v", r.Reply)
	}
	r = s.Rules[1]
	if len(r.Reply.ToolCalls) != 2 || string(r.Reply.ToolCalls[0].Arguments) != `{"team":"billing","summary":"x"}` || string(r.Reply.ToolCalls[1].Arguments) != `{"team":"account","extra":1,"summary":"x"}` {
		t.Errorf("tool calls %+v", r.Reply.ToolCalls)
	}
	if e := r.Reply.Error; e == nil || e.Kind != "rate_limit" || e.Status != 429 || e.RetryAfter != 2*time.Second || e.After == nil || *e.After != 2 {
		t.Errorf("error %+v", r.Reply.Error)
	}
}

func TestFakeModelScriptProblems(t *testing.T) {
	script := `models: [a, a]
rules:
  - name: one
    match:
      user: "(?i)charged (twice"
      tools: 3
      usr: x
    reply:
      text: hi
      json: {a: 1}
      delay: 3 seconds
      stream_delay: 2h
  - name: one
    reply: {}
  - reply:
      tool_call: {name: "bad name"}
      error: {kind: cut, status: 500}
  - reply: {error: {message: nothing}}
    times: 0
`
	_, err := ParseScript("bad.yaml", []byte(script))
	var se *diag.ReportError
	if !errors.As(err, &se) {
		t.Fatalf("err %v", err)
	}
	want := strings.TrimSpace("" +
		"bad.yaml:1:13: error invalid-value `models` lists `a` more than once\n" +
		"bad.yaml:5:13: error invalid-value `user` is not a valid regular expression (Go RE2 syntax): missing closing ): `(?i)charged (twice`\n" +
		"bad.yaml:6:14: error invalid-value `tools` must be true, false or a regular expression, not `3`\n" +
		"bad.yaml:7:7: error unknown-key unknown key `usr` in `match`; did you mean `user`?\n" +
		"bad.yaml:9:7: error invalid-value `reply` takes text or json, not both\n" +
		"bad.yaml:11:14: error invalid-value `delay` must be a duration such as 20ms, 2s or 1m30s, not `3 seconds`\n" +
		"bad.yaml:12:21: error invalid-value `stream_delay` must be at most 1h0m0s, not 2h\n" +
		"bad.yaml:13:11: error invalid-value rule name `one` is used twice (first on line 3); names must be unique\n" +
		"bad.yaml:14:12: error invalid-value `reply` needs text, json, tool_call, tool_calls, call_offered_tool or error\n" +
		"bad.yaml:16:25: error invalid-value `name` must be a tool name: letters, digits, _, . and -, at most 128 characters, not `bad name`\n" +
		"bad.yaml:17:34: error invalid-value `status` does not apply to kind cut: the connection drops, with no status to send\n" +
		"bad.yaml:18:20: error invalid-value `error` needs a kind or a status\n" +
		"bad.yaml:19:12: error invalid-value `times` must be at least 1, not 0")
	if got := reportText(t, se); got != want+"\n13 errors\n" {
		t.Errorf("problems:\n%s\nwant:\n%s", got, want)
	}
	if !strings.HasPrefix(se.Error(), "the fake model script bad.yaml has 13 errors; the first: bad.yaml:1:13: error invalid-value ") || strings.Contains(se.Error(), "\n") {
		t.Errorf("one line: %s", se.Error())
	}
}

func TestFakeModelHostileScripts(t *testing.T) {
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\nrules: [{reply: {json: *e}}]\n"
	for name, data := range map[string]string{
		"empty":                  "",
		"alias bomb":             bomb,
		"json bomb":              strings.Replace(bomb, "f: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n", "", 1),
		"deep":                   "rules: [{reply: {json: " + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + "}}]\n",
		"deep map":               "rules:\n- reply:\n    json:\n" + deepMap(200),
		"binary":                 "rules: \x00\x01\x02",
		"not utf8":               "rules: \xff\xfe",
		"huge":                   "rules:\n- reply: {text: \"" + strings.Repeat("x", MaxScriptBytes) + "\"}\n",
		"list":                   "- a\n- b\n",
		"scalar":                 "hello",
		"two docs":               "rules: [{reply: {text: a}}]\n---\nrules: []\n",
		"tabs":                   "rules:\n\t- reply: {text: a}\n",
		"cycle":                  "rules: &r [{reply: {json: *r}}]\n",
		"bad regex repeat":       "rules: [{match: {user: \"a{1001}\"}, reply: {text: a}}]\n",
		"huge int":               "rules: [{reply: {text: a}, times: 100000000000000000000000}]\n",
		"newline in a bad regex": "rules: [{match: {user: \"a\\n(\\u0007\"}, reply: {text: a}}]\n",
	} {
		t.Run(name, func(t *testing.T) {
			s, err := ParseScript("h.yaml", []byte(data))
			var se *diag.ReportError
			if s != nil || !errors.As(err, &se) || len(se.Report.Diagnostics) == 0 {
				t.Fatalf("script %v, err %v", s != nil, err)
			}
			text := reportText(t, se)
			if n := strings.Count(text, "\n"); n != len(se.Report.Diagnostics)+1 {
				t.Errorf("%d problems on %d lines:\n%s", len(se.Report.Diagnostics), n, text)
			}
			for _, p := range se.Report.Diagnostics {
				if p.Line < 1 || p.Col < 1 || p.Rule.Rule().Short == "" || p.Message == "" || p.File != "h.yaml" || p.Severity != diag.Error {
					t.Errorf("problem %+v", p)
				}
			}
			t.Log(se.Error())
		})
	}
}

func deepMap(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat("  ", i+3) + "k:\n")
	}
	b.WriteString(strings.Repeat("  ", n+3) + "v\n")
	return b.String()
}

func TestFakeModelLoadScript(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.yaml")
	os.WriteFile(p, []byte("rules:\n- reply: {text: hi}\n"), 0o644)
	s, err := LoadScript(p)
	if err != nil || s.Name != p || s.Rules[0].Reply.Text != "hi" {
		t.Fatalf("%+v %v", s, err)
	}
	_, err = LoadScript(filepath.Join(dir, "missing.yaml"))
	var se *diag.ReportError
	if err == nil || errors.As(err, &se) || !strings.Contains(err.Error(), "cannot read the fake model script") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := LoadScript(dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: %v", err)
	}
	os.WriteFile(p, []byte("rules: [{reply: {}}]\n"), 0o644)
	if _, err := LoadScript(p); !errors.As(err, &se) || !strings.HasPrefix(reportText(t, se), p+":1:17: error invalid-value ") {
		t.Errorf("bad script: %v", err)
	}
}

func FuzzParseScript(f *testing.F) {
	f.Add([]byte(defaultYAML))
	f.Add([]byte(textScript))
	f.Add([]byte(toolScript))
	f.Add([]byte("rules: [{match: {user: \"(\"}, reply: {text: a, delay: 1x}}]\n"))
	f.Add([]byte("a: &a [x, x]\nb: &b [*a, *a]\nrules: [{reply: {json: {<<: *b}}}]\n"))
	f.Add([]byte("rules:\n- reply: {tool_calls: [{name: a, arguments: {<<: [{x: 1}, {y: 2}]}}], error: {kind: cut, after: 2}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseScript("fuzz.yaml", data)
		if (s == nil) == (err == nil) {
			t.Fatalf("script %v and error %v", s, err)
		}
		if err != nil {
			var se *diag.ReportError
			if !errors.As(err, &se) || len(se.Report.Diagnostics) == 0 {
				t.Fatalf("error %v", err)
			}
			return
		}
		New(s) // a valid script makes a server
	})
}

// reportText is the report as oz0 prints it.
func reportText(t *testing.T, se *diag.ReportError) string {
	t.Helper()
	var b strings.Builder
	if err := diag.Write(&b, se.Report, diag.FormatText, diag.Tool{}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
