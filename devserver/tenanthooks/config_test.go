package tenanthooks

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

// configErrors parses doc as dir/hooks.yaml and returns its error lines with the directory cut.
func configErrors(t *testing.T, dir, doc string) []string {
	t.Helper()
	name := filepath.Join(dir, "hooks.yaml")
	_, err := Parse(name, []byte(doc))
	if err == nil {
		return nil
	}
	var ce *diag.ReportError
	if !errors.As(err, &ce) {
		t.Fatalf("not a *diag.ReportError: %v", err)
	}
	var b strings.Builder
	if err := diag.Write(&b, ce.Report, diag.FormatText, diag.Tool{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	lines = lines[:len(lines)-1] // the count
	return strings.Split(strings.ReplaceAll(strings.Join(lines, "\n"), name, "hooks.yaml"), "\n")
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "policy"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notexec"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, doc string
		want      []string
	}{
		{"unknown key with did-you-mean", `
hooks:
  - name: a
    match: "*"
    decid: allow
`, []string{
			"hooks.yaml:3:5: error invalid-value `hooks[0]` needs `decide` (a rule) or `plugin` (a plugin hook)",
			"hooks.yaml:5:5: error unknown-key unknown key `decid` in `hooks[0]`; did you mean `decide`?",
		}},
		{"unknown top-level key", "hook:\n  - name: a\n", []string{
			"hooks.yaml:1:1: error unknown-key unknown key `hook`; did you mean `hooks`?",
		}},
		{"bad numeric bounds", `
hooks:
  - name: a
    match: "*.refund"
    when: {arguments: {amount: {min: 5, max: 1}, b: {above: 3}, c: {min: "x"}, d: 5, e: {}}}
    decide: ask
`, []string{
			"hooks.yaml:5:32: error invalid-value `min` (5) is above `max` (1): no number is between them",
			"hooks.yaml:5:54: error unknown-key unknown key `above` in `b`; expected one of max, min",
			"hooks.yaml:5:74: error invalid-value `min` must be a number, not a string",
			"hooks.yaml:5:83: error invalid-value `d` must be a regular expression (a string) or numeric bounds such as {min: 1000}, not `5`",
			"hooks.yaml:5:89: error invalid-value `e` must have at least 1 key",
		}},
		{"bad decide", `
hooks:
  - name: a
    match: "*"
    decide: alow
`, []string{
			"hooks.yaml:5:13: error invalid-value `decide` must be one of allow, deny, ask, change, continue, not `alow`; did you mean `allow`?",
		}},
		{"bad glob", `
hooks:
  - name: a
    match: "acme.[notify"
    decide: deny
  - name: b
    match: ["*.ok", "notify_team"]
    decide: deny
  - name: c
    match: "a.]"
    decide: deny
`, []string{
			"hooks.yaml:4:12: error bad-glob `acme.[notify` is not a valid glob: the [ at column 6 is not closed with ]",
			"hooks.yaml:7:21: error bad-glob `notify_team` never matches: hooks see calls as <harness>.<tool>; did you mean `*.notify_team`?",
			"hooks.yaml:10:12: error bad-glob `a.]` is not a valid glob: ] without [; write \\] for a literal ]",
		}},
		{"bad regex", `
hooks:
  - name: a
    match: "*"
    when: {arguments: {team: "^(legal|exec$"}}
    unless: {agent: "[z-a]", arguments: {a..b: x}}
    decide: deny
`, []string{
			"hooks.yaml:5:30: error bad-regex `^(legal|exec$` is not a valid regular expression (Go RE2 syntax): missing closing ): `^(legal|exec$`",
			"hooks.yaml:6:21: error bad-regex `[z-a]` is not a valid regular expression (Go RE2 syntax): invalid character class range: `z-a`",
			"hooks.yaml:6:42: error invalid-value `a..b` is not an argument key or a dotted path such as customer.tier",
		}},
		{"duplicate names", `
hooks:
  - {name: a, match: "*", decide: allow}
  - {name: b, match: "*", decide: allow}
  - {name: a, match: "*", decide: deny}
`, []string{
			"hooks.yaml:5:12: error duplicate-name hook name `a` is used twice (first on line 3); names must be unique",
		}},
		{"rule and plugin keys", `
hooks:
  - name: both
    match: "*"
    decide: deny
    plugin: ./policy
  - name: rule-with-timeout
    match: "*"
    decide: deny
    timeout: 2s
  - name: plugin-with-reason
    match: "*"
    plugin: ./policy
    reason: nope
  - name: change-without-arguments
    match: "*"
    decide: change
  - name: arguments-without-change
    match: "*"
    decide: allow
    arguments: {merge: {a: 1}}
  - name: merge-and-replace
    match: "*"
    decide: change
    arguments: {merge: {a: 1}, replace: {}}
`, []string{
			"hooks.yaml:6:5: error invalid-value `hooks[0]` takes `decide` (a rule) or `plugin` (a plugin hook), not both",
			"hooks.yaml:10:5: error invalid-value `hooks[1]` is a rule: `args`, `env`, `config` and `timeout` are for plugin hooks",
			"hooks.yaml:14:5: error invalid-value `hooks[2]` is a plugin hook: `reason` and `arguments` are for rules (a plugin's answer carries them)",
			"hooks.yaml:17:5: error missing-key `decide: change` needs `arguments`: {merge: {...}} or {replace: {...}}",
			"hooks.yaml:21:5: error invalid-value `hooks[4]` takes `arguments` only with decide: change",
			"hooks.yaml:25:16: error invalid-value `arguments` must have at most 1 key",
		}},
		{"plugins", `
hooks:
  - name: missing
    match: "*"
    plugin: ./nope
  - name: not-executable
    match: "*"
    plugin: notexec
  - name: a-directory
    match: "*"
    plugin: .
  - name: env-and-timeout
    match: "*"
    plugin: ./policy
    env: {OZ0_HOOK_PLUGIN: x, "1X": y, OK: z}
    timeout: 10m
  - name: tiny-timeout
    match: "*"
    plugin: ./policy
    timeout: 1ns
  - name: bad-timeout
    match: "*"
    plugin: ./policy
    timeout: soon
`, []string{
			"hooks.yaml:5:13: error bad-plugin plugin `./nope` does not exist (looked for DIR/nope; a relative path is relative to the hooks file)",
			"hooks.yaml:8:13: error bad-plugin plugin `notexec` is not executable; chmod +x it",
			"hooks.yaml:11:13: error bad-plugin plugin `.` is a directory, not an executable",
			"hooks.yaml:15:11: error bad-plugin `OZ0_HOOK_PLUGIN` is set by oz0 for the plugin's handshake; choose another name",
			"hooks.yaml:15:31: error bad-plugin `1X` is not an environment variable name (letters, digits and _, not starting with a digit)",
			"hooks.yaml:16:14: error bad-duration `timeout` must be at most 5m0s, not 10m",
			"hooks.yaml:20:14: error bad-duration `timeout` must be at least 1ms, not 1ns",
			"hooks.yaml:24:14: error invalid-value `timeout` must be a duration such as 500ms, 2s or 1m, not `soon`",
		}},
		{"types", `
hooks:
  - name: "bad name!"
    match: []
    decide: deny
    when: {}
  - match: 3
    decide: deny
`, []string{
			"hooks.yaml:3:11: error invalid-value `name` must be letters, digits, ., _ and -, start with a letter or digit and be at most 64 characters, not `bad name!`",
			"hooks.yaml:4:12: error invalid-value `match` must list at least 1 item",
			"hooks.yaml:6:11: error invalid-value `when` must have at least 1 key",
			"hooks.yaml:7:5: error missing-key missing required key `name` in `hooks[1]`",
			"hooks.yaml:7:12: error invalid-value `match` must be a glob or a list of globs, not `3`",
		}},
		{"yaml syntax", "hooks:\n  - name: [\n", []string{
			"hooks.yaml:2:11: error yaml-syntax did not find expected node content",
		}},
		{"not a mapping", "- a\n- b\n", []string{
			"hooks.yaml:1:1: error invalid-value the document must be a mapping, not a list",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := configErrors(t, dir, c.doc)
			for i := range got {
				got[i] = strings.ReplaceAll(got[i], dir, "DIR")
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

func TestParseGood(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hooks", "policy"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	doc := `# yaml-language-server: $schema=https://raw.githubusercontent.com/orchestrator-zero/oz0/main/schemas/hooks.schema.json
hooks:
  - name: no-exec-on-prod
    description: the exec team hears from people
    match: "acme-triage.notify_*"
    when: {arguments: {team: "^(legal|exec)$"}}
    decide: deny
    reason: "the exec team is told by a person, not an agent"
  - name: redact
    match: "*.notify_team"
    decide: change
    arguments: {merge: {summary: "[redacted]"}}
  - name: policy-binary
    match: "*"
    plugin: ./hooks/policy
    args: [--strict]
    env: {POLICY_LEVEL: "3"}
    config: {teams: [billing, legal], max: 3}
    timeout: 2s
`
	path := filepath.Join(dir, "hooks.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := strings.Join(s.Names(), ","); got != "no-exec-on-prod,redact,policy-binary" {
		t.Errorf("names %s", got)
	}
	ph := s.hooks[2].plugin
	if ph.path != filepath.Join(dir, "hooks", "policy") || ph.timeout != 2*time.Second ||
		strings.Join(ph.args, " ") != "--strict" || strings.Join(ph.env, " ") != "POLICY_LEVEL=3" ||
		string(ph.config) != `{"max":3,"teams":["billing","legal"]}` {
		t.Errorf("plugin %+v", ph)
	}
	if s.hooks[0].plugin != nil || s.hooks[0].decide != Deny {
		t.Errorf("rule %+v", s.hooks[0])
	}
	// The schema is strict: the same document validates on its own.
	root, ps := schemas.ParseYAML([]byte(doc))
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	if ps := schemas.ValidateYAML(SchemaName, root); len(ps) > 0 {
		t.Fatal(ps)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("dir: %v", err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte(strings.Repeat("#\n", MaxFileBytes)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "larger than 1 MiB") {
		t.Errorf("big: %v", err)
	}
	bin := filepath.Join(dir, "bin.yaml")
	if err := os.WriteFile(bin, []byte("hooks: \x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bin); err == nil || !strings.Contains(err.Error(), "bin.yaml:1:8: error not-text") {
		t.Errorf("binary: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte("hooks:\n  - {name: a, match: '*.x', decide: deny}\n"))
	f.Add([]byte("hooks:\n  - name: r\n    match: [\"a.[b-c]\", '*']\n    when: {arguments: {a.b: '^x$'}, agent: y}\n    unless: {job: z}\n    decide: change\n    arguments: {merge: {a: {b: null}}}\n"))
	f.Add([]byte("hooks:\n  - name: p\n    match: '*'\n    plugin: ./p\n    timeout: 2s\n    env: {A: b}\n    config: [1, 2]\n"))
	f.Add([]byte("hooks: &a [*a]\n"))
	f.Add([]byte("hooks:\n  - {name: a, match: 'x.\\\\', decide: allow}\n  - {name: a, match: 'y', decide: maybe}\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(filepath.Join(dir, "hooks.yaml"), data)
		if err != nil {
			var ce *diag.ReportError
			if !errors.As(err, &ce) || len(ce.Report.Diagnostics) == 0 {
				t.Fatalf("error %T %v", err, err)
			}
			for _, p := range ce.Report.Diagnostics {
				if p.Line < 1 || p.Col < 1 || p.Rule.Rule().Short == "" || p.Message == "" || p.Severity != diag.Error {
					t.Fatalf("bad problem %+v", p)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("the error is not one line: %q", err.Error())
			}
			return
		}
		// A valid file evaluates without panicking.
		r := s.Evaluate(t.Context(), Call{Job: "job_1", Agent: "a", Harness: "h", Tool: "x", Arguments: []byte(`{"a":{"b":1},"team":"exec"}`)})
		switch r.Decision {
		case Allow, Deny, Ask:
		default:
			t.Fatalf("decision %q", r.Decision)
		}
		s.Close()
	})
}
