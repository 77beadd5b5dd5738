package lint

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/internal/textclip"
)

func billionLaughs() string {
	var b strings.Builder
	b.WriteString("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "%c: &%c [", 'a'+i, 'a'+i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*%c", 'a'+i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

func randomBytes(n int) string {
	r := rand.New(rand.NewSource(1))
	b := make([]byte, n)
	r.Read(b)
	return string(b)
}

// Hostile files: each is a finding, in bounded time, never a panic.
func TestHostileInput(t *testing.T) {
	twoMiB := "a: " + strings.Repeat("x", 2<<20) + "\n"
	for _, tc := range []struct {
		name  string
		file  string
		data  string
		rules []string // one of them
	}{
		{"2 MiB manifest", "oz0-plugin.yaml", twoMiB, []string{"file-too-large"}},
		{"2 MiB agent", "agents/acme-triage.yaml", twoMiB, []string{"file-too-large"}},
		{"2 MiB SKILL.md", "skills/s/SKILL.md", "---\n" + twoMiB + "---\n", []string{"file-too-large"}},
		{"2 MiB pyproject", "pyproject.toml", "# " + twoMiB, []string{"file-too-large"}},
		{"billion laughs manifest", "oz0-plugin.yaml", billionLaughs(), []string{"yaml-limits"}},
		{"billion laughs agent", "agents/acme-triage.yaml", billionLaughs(), []string{"yaml-limits"}},
		{"billion laughs in front matter", "skills/s/SKILL.md", "---\n" + billionLaughs() + "---\n", []string{"yaml-limits"}},
		{"10,000-deep flow nesting", "oz0-plugin.yaml", strings.Repeat("[", 10000), []string{"yaml-limits", "yaml-syntax"}},
		{"10,000-deep closed nesting", "agents/acme-triage.yaml", strings.Repeat("[", 10000) + strings.Repeat("]", 10000), []string{"yaml-limits"}},
		{"deep block nesting", "oz0-plugin.yaml", strings.Repeat("- ", 3000) + "x\n", []string{"yaml-limits"}},
		{"random binary manifest", "oz0-plugin.yaml", randomBytes(4096), []string{"not-text"}},
		{"random binary agent", "agents/acme-triage.yaml", randomBytes(4096), []string{"not-text"}},
		{"random binary SKILL.md", "skills/s/SKILL.md", randomBytes(4096), []string{"not-text"}},
		{"random binary pyproject", "pyproject.toml", randomBytes(4096), []string{"not-text"}},
		{"invalid UTF-8", "oz0-plugin.yaml", "apiVersion: oz0/v1\nname: \xc3\x28\n", []string{"not-text"}},
		{"UTF-16", "agents/acme-triage.yaml", "\xff\xfen\x00a\x00m\x00e\x00", []string{"not-text"}},
		{"empty manifest", "oz0-plugin.yaml", "\n", []string{"invalid-value"}},
		{"empty agent", "agents/acme-triage.yaml", "", []string{"invalid-value"}},
		{"empty SKILL.md", "skills/s/SKILL.md", "", []string{"skill-frontmatter"}},
		{"cyclic alias", "oz0-plugin.yaml", "a: &a [*a]\n", []string{"yaml-limits"}},
		{"many documents", "agents/acme-triage.yaml", strings.Repeat("---\na: 1\n", 1000), []string{"yaml-syntax"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writePlugin(t, map[string]string{tc.file: tc.data})
			if tc.data == "" {
				os.WriteFile(filepath.Join(dir, tc.file), nil, 0o644)
			}
			rep, err := Run(dir)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, f := range rep.Diagnostics {
				if f.File == tc.file {
					for _, r := range tc.rules {
						found = found || f.Rule.String() == r
					}
				}
			}
			if !found {
				t.Errorf("no %v finding for %s in %v", tc.rules, tc.file, rep.Diagnostics)
			}
		})
	}
}

// A directory where a file belongs is a not-a-file finding.
func TestDirectoryNamedLikeAFile(t *testing.T) {
	for _, name := range []string{"oz0-plugin.yaml", "agents/x.yaml", "skills/s/SKILL.md", "pyproject.toml"} {
		t.Run(name, func(t *testing.T) {
			edits := map[string]string{name + "/inner": "x"}
			if name == "oz0-plugin.yaml" || name == "pyproject.toml" {
				edits[name] = del
			}
			rep := runPlugin(t, edits)
			checkFindings(t, rep, expect{name + ":0:0 not-a-file", name + " is a directory, not a file"})
		})
	}
}

// Documents with very many problems: the first schemas.MaxProblems shown, deterministically.
// How long they take is BenchmarkManyProblems' to say (a timed bound here failed on a loaded
// machine).
func TestManyProblems(t *testing.T) {
	var keys, dups, tools, approvals strings.Builder
	for i := range 40000 {
		fmt.Fprintf(&keys, "k%d: 1\n", i)
		dups.WriteString("name: x\n")
	}
	for i := range 20000 {
		fmt.Fprintf(&tools, "t%d, ", i)
		fmt.Fprintf(&approvals, "u%d, ", i)
	}
	for _, tc := range []struct {
		name, file, data string
		min, max         int
	}{
		{"unknown keys", "oz0-plugin.yaml", templateManifest + keys.String(), 101, 101},
		{"duplicate keys", "agents/acme-triage.yaml", templateAgent + dups.String(), 101, 101},
		{"unlisted approvals", "agents/acme-triage.yaml", strings.Replace(templateAgent, "  tools: [notify_team]",
			// Each approval names a tool the agent does not list (the tools are no near miss of
			// the harness's: agent-tool-unknown says nothing of them).
			"  tools: ["+tools.String()+"]\n  requires_approval: ["+approvals.String()+"]", 1), 20000, 20000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writePlugin(t, map[string]string{tc.file: tc.data})
			rep, err := Run(dir)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, f := range rep.Diagnostics {
				if f.File == tc.file {
					n++
				}
			}
			if n < tc.min || n > tc.max {
				t.Errorf("%d findings in %s, want %d..%d", n, tc.file, tc.min, tc.max)
			}
			again, _ := Run(dir)
			for i := range rep.Diagnostics {
				if rep.Diagnostics[i] != again.Diagnostics[i] {
					t.Fatalf("not deterministic: %v vs %v", rep.Diagnostics[i], again.Diagnostics[i])
				}
			}
		})
	}
}

// Values from files are clipped in messages.
func TestLongValuesAreClipped(t *testing.T) {
	long := strings.Repeat("x", 100000)
	rep := runPlugin(t, map[string]string{
		"agents/acme-triage.yaml": replace(templateAgent, "runtime: harness:acme-triage", "runtime: harness:"+long, "timeout: 10m", "timeout: "+long) + "? " + long + "\n: 1\n",
		"oz0-plugin.yaml":         replace(templateManifest, "formats: [anthropic-messages]", "formats: ["+long+"]"),
	})
	if len(rep.Diagnostics) < 4 {
		for _, f := range rep.Diagnostics {
			t.Log(f.File, f.Line, f.Rule, textclip.Clip(f.Message))
		}
		t.Errorf("findings: %d", len(rep.Diagnostics))
	}
	for _, f := range rep.Diagnostics {
		if len(f.Message) > 1000 {
			t.Errorf("%s: a message of %d bytes", f.Rule, len(f.Message))
		}
	}
}

// BenchmarkManyProblems lints a manifest with 40,000 unknown keys: the time a document full of
// problems takes (linear in its size; the test above checks what is shown).
func BenchmarkManyProblems(b *testing.B) {
	var keys strings.Builder
	for i := range 40000 {
		fmt.Fprintf(&keys, "k%d: 1\n", i)
	}
	dir := writePlugin(b, map[string]string{"oz0-plugin.yaml": templateManifest + keys.String()})
	for b.Loop() {
		if _, err := Run(dir); err != nil {
			b.Fatal(err)
		}
	}
}
