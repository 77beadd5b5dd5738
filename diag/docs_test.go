package diag

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/lint-rules.md from the rule table")

const docsFile = "../docs/lint-rules.md"

const docsIntro = `# Lint rules

<!-- Generated from the rule table in diag/rules.go by
     go test ./diag -run TestDocs -update
     Edit the table (or the intro in diag/docs_test.go), not this file. -->

` + "`oz0 plugin lint [DIR...]`" + ` checks the plugin in DIR (default: the current directory; several DIRs,
each of them, in one report):

1. ` + "`oz0-plugin.yaml`" + `, every ` + "`*.yaml`" + ` file of each directory listed under ` + "`agents`" + `, and the front
   matter of ` + "`SKILL.md`" + ` in every subdirectory of each directory listed under ` + "`skills`" + `, against
   the JSON Schemas (draft 2020-12) embedded in oz0 (` + "`oz0 schema`" + ` prints them, and each
   release serves its own from the repository at its tag): ` + "`oz0-plugin.schema.json`, `agent.schema.json`, `skill.schema.json`" + `;
2. the rules below that span files: harness names, prompt files, Python modules, the files a
   command runs, tools, schema files, skills;
3. ` + "`pyproject.toml`" + ` and ` + "`package.json`" + `, when there are, for banned and unpinned dependencies
   (and, beside ` + "`package.json`" + `, a lock file);
4. the code a harness runs (its Python package, or the directory of the script node, deno or bun
   runs) for the model clients it builds: their formats, and OpenAI's Responses API.

Only the skills directories the manifest lists are linted: ` + "`.claude/skills/`" + ` of the template is a skill
for the author's coding agent, not one of the plugin's.

Everything is reported in one pass: a broken file does not hide the findings of the others.

The same loader serves ` + "`oz0 plugin test`" + `, ` + "`oz0 dev`" + ` and its hot reload: a plugin that lints clean
is one they run, and they refuse one with errors, printing the same findings. Every path the plugin
names must stay inside its directory, symbolic links resolved: a link inside the plugin is
followed, one that leads out of it is a ` + "`path-escape`" + ` and one that loops a ` + "`symlink-loop`" + `,
reported where the path is named, and neither is read.

` + "`--fake-script FILE`" + ` and ` + "`--hooks FILE`" + ` (each repeatable) check a fake model script and a tenant's
hooks file as well, in the same report and format. ` + "`oz0 fake-model serve`" + `, ` + "`oz0 dev`" + ` and
` + "`oz0 plugin test`" + ` report a script or hooks file with problems the same way, in the text format on
stderr, and exit 1.

## Severities and exit status

Each rule has a severity, **error** or **warning**. ` + "`oz0 plugin lint`" + ` exits 0 when there is no error
(warnings alone do not fail it), 1 when there is at least one error, 3 when the plugin cannot be read
at all (the directory does not exist, permission denied), 2 on a usage error.

## Output formats

` + "`--format`" + ` picks one of:

- ` + "`text`" + ` (the default): one line per finding, ` + "`path:line:col: severity rule message`" + ` (` + "`path: severity rule message`" + ` for a finding about a whole file), then a summary line:
  ` + "`2 errors, 1 warning`" + `, ` + "`1 warning`" + `, or ` + "`no problems`" + `.
- ` + "`json`" + `: a JSON array of the findings (` + "`[]`" + ` when there are none), one object each:
  ` + "`{\"file\":…,\"line\":…,\"col\":…,\"severity\":…,\"rule\":…,\"message\":…}`" + `, with ` + "`end_line`" + ` and
  ` + "`end_col`" + ` (exclusive) when the end of the offending text is known (a key, a plain value) and ` + "`fix`" + `
  when there is a hint beyond the rule's; the same convention as every ` + "`--json`" + ` of oz0 ([cli.md](cli.md)).
- ` + "`sarif`" + `: a SARIF 2.1.0 log for code scanning (GitHub's ` + "`upload-sarif`" + `), with every rule in
  ` + "`tool.driver.rules`" + ` (its ` + "`helpUri`" + ` links to this page at the release's tag) and one result per
  finding; ` + "`columnKind`" + ` is ` + "`unicodeCodePoints`" + `, and a path is a URI relative to ` + "`%SRCROOT%`" + `.
- ` + "`github`" + `: GitHub Actions workflow commands, ` + "`::error file=…,line=…,col=…,title=RULE::message`" + `
  (` + "`::warning`" + ` for warnings), which GitHub shows as annotations on the pull request.

Paths are the plugin directory as given joined with the file's path inside the plugin
(` + "`oz0 plugin lint acme-triage`" + ` reports ` + "`acme-triage/agents/acme-triage.yaml:…`" + `). For ` + "`sarif`" + ` and
` + "`github`" + `, which GitHub reads against the repository, they are relative to the root of the git repository
the plugin is in, wherever oz0 runs (` + "`--base DIR`" + `: relative to DIR); a path outside it stays absolute
(a ` + "`file://`" + ` URI in SARIF). Lines and columns are 1-based and count characters (Unicode code points),
and point at the offending YAML node: an unknown key at the key, a missing key at the
mapping that lacks it, anything else at the value. A finding about a whole file (a missing
` + "`SKILL.md`" + `, a file that is too large) has no line; in SARIF it has no region. [ci.md](ci.md) runs
them in a plugin's CI.

## Limits

The linter reads untrusted files and stays fast on any input: a file over 1 MiB is not parsed
([file-too-large](#file-too-large); ` + "`oz0 eval`" + ` reads eval files within the same bound); a YAML
document holds at most 100,000 nodes, its aliases expanded, and nests at most 64 levels
([yaml-limits](#yaml-limits)); a JSON Schema file nests at most 64 levels too
([schema-too-deep](#schema-too-deep)); a pipe or a device where a file belongs is not opened
([not-a-file](#not-a-file)); JSON Schema files are compiled without reading the network or any
file outside the plugin ([input-schema](#input-schema)).

## Not findings

- An agent's ` + "`harness.tools`" + ` may list tools that its harness's ` + "`tools`" + ` in the manifest does not: the
  manifest's list is only the default for agents that list none (the guide's LangGraph example lists
  ` + "`lookup_order`" + ` under the agent alone).
- Files in an agents directory other than ` + "`*.yaml`" + ` and ` + "`*.yml`" + ` (a README), hidden files and
  directories, and files beside the skill directories of a skills directory are skipped.
- Only a harness command whose program is ` + "`python`" + `, ` + "`python3`" + ` or ` + "`pythonX.Y`" + ` (any directory) is
  checked for its module; ` + "`uv run …`" + `, scripts (` + "`python run.py`" + `) and other runtimes are not.

## Rules

`

func renderDocs() string {
	var b strings.Builder
	b.WriteString(docsIntro)
	b.WriteString("| rule | severity | checks |\n|---|---|---|\n")
	for _, r := range Rules {
		fmt.Fprintf(&b, "| [%s](#%s) | %s | %s |\n", r.ID, r.ID, r.Severity, r.Short)
	}
	for _, r := range Rules {
		fmt.Fprintf(&b, "\n## %s\n\n", r.ID)
		fmt.Fprintf(&b, "Severity: **%s**. %s\n\n", r.Severity, r.Short)
		fmt.Fprintf(&b, "%s\n\n", r.Help)
		fmt.Fprintf(&b, "Example:\n\n```\n%s\n```\n\n", r.Example)
		fmt.Fprintf(&b, "Fix: %s\n", r.Fix)
	}
	return b.String()
}

// TestDocs checks that docs/lint-rules.md is the rendering of the rule
// table: one section, with its anchor, per rule ID.
func TestDocs(t *testing.T) {
	want := renderDocs()
	if *update {
		if err := os.WriteFile(docsFile, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(docsFile)
	if err != nil {
		t.Fatalf("%v; run go test ./diag -run TestDocs -update", err)
	}
	if string(got) != want {
		t.Errorf("%s is out of date; run go test ./diag -run TestDocs -update", docsFile)
	}
	for _, r := range Rules {
		if !strings.Contains(string(got), "\n## "+r.ID.String()+"\n") {
			t.Errorf("no section for %s", r.ID)
		}
	}
}

// TestCatalogue checks that every rule constant has its entry, in the docs' order, under an ID
// that is kebab-case and that reads back to the constant.
func TestCatalogue(t *testing.T) {
	if len(Rules) != int(numRules)-1 {
		t.Fatalf("%d rules in Rules, want %d", len(Rules), numRules-1)
	}
	seen := map[string]bool{}
	for i, r := range Rules {
		id := r.ID.String()
		if r.ID != RuleID(i+1) || id == "" {
			t.Errorf("Rules[%d] is rule %d %q: a constant without an entry in the catalogue", i, r.ID, id)
			continue
		}
		if seen[id] {
			t.Errorf("duplicate rule %s", id)
		}
		seen[id] = true
		if id != strings.ToLower(id) || strings.ContainsAny(id, " _") {
			t.Errorf("rule ID %q is not kebab-case", id)
		}
		if back, ok := ParseRuleID(id); !ok || back != r.ID {
			t.Errorf("ParseRuleID(%q) = %d, %v; want %d", id, back, ok, r.ID)
		}
		if r.ID.Rule() != r {
			t.Errorf("%s: Rule() is not its entry of Rules", id)
		}
		if r.Severity != Error && r.Severity != Warning {
			t.Errorf("%s: severity %q", id, r.Severity)
		}
		if r.Short == "" || r.Help == "" || r.Example == "" || r.Fix == "" {
			t.Errorf("%s: incomplete metadata", id)
		}
	}
	if _, ok := ParseRuleID("no-such-rule"); ok {
		t.Error("ParseRuleID accepted an unknown ID")
	}
}

// TestRuleIDText checks that a diagnostic's rule is its ID in JSON, both ways, and that an
// unknown ID is refused when read.
func TestRuleIDText(t *testing.T) {
	b, err := json.Marshal(Diagnostic{Rule: UnknownKey})
	if err != nil || !strings.Contains(string(b), `"rule":"unknown-key"`) {
		t.Fatalf("json.Marshal = %s, %v", b, err)
	}
	var d Diagnostic
	if err := json.Unmarshal(b, &d); err != nil || d.Rule != UnknownKey {
		t.Fatalf("json.Unmarshal = %v, %v", d.Rule, err)
	}
	if err := json.Unmarshal([]byte(`{"rule":"unknown-kee"}`), &d); err == nil {
		t.Error("an unknown rule was read without an error")
	}
	if got := RuleID(numRules).String(); got != fmt.Sprintf("RuleID(%d)", numRules) {
		t.Errorf("String of a number past the rules = %q", got)
	}
}
