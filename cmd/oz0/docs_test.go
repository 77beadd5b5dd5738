package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/conformance"
	"github.com/orchestrator-zero/oz0/eval"
	"github.com/orchestrator-zero/oz0/gateway"
	"github.com/orchestrator-zero/oz0/lint"
)

// The README lists every page of docs/.
func TestReadmeListsEveryDoc(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	pages, _ := filepath.Glob("../../docs/*.md")
	if len(pages) == 0 {
		t.Fatal("no docs found")
	}
	for _, p := range pages {
		link := "(docs/" + filepath.Base(p) + ")"
		if !strings.Contains(string(readme), link) {
			t.Errorf("README.md does not link docs/%s", filepath.Base(p))
		}
	}
}

// The docs show one version of oz0: in oz0 dev's banner and in oz0 version's line alike.
func TestDocsShowOneVersion(t *testing.T) {
	banner := regexp.MustCompile(`(?m)^  version (\S+)$|^oz0 version (\d+\.\d+\.\d+) `)
	pages, _ := filepath.Glob("../../docs/*.md")
	seen := map[string]string{}
	for _, p := range append(pages, "../../README.md") {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range banner.FindAllStringSubmatch(string(data), -1) {
			seen[m[1]+m[2]] = filepath.Base(p)
		}
	}
	if len(seen) > 1 {
		t.Errorf("the docs show several versions of oz0 (version: page): %v", seen)
	}
}

// docs/cli.md lists every field of what --json prints: each command's row names the JSON fields
// of its Go types, so that a field added to a type is added to the page too.
func TestCLIDocListsJSONFields(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		row   string // how the row in the page's table starts
		types []reflect.Type
	}{
		{"plugin test", "| `oz0 plugin test` |", []reflect.Type{reflect.TypeFor[conformance.Check]()}},
		{"plugin list", "| `oz0 plugin list` |", []reflect.Type{reflect.TypeFor[lint.Found]()}},
		{"eval", "| `oz0 eval`, `oz0 eval merge` |", []reflect.Type{
			reflect.TypeFor[eval.Result](), reflect.TypeFor[eval.Failure](), reflect.TypeFor[eval.Totals](),
			reflect.TypeFor[eval.Comparison](), reflect.TypeFor[eval.Delta](),
			reflect.TypeFor[eval.Report](), reflect.TypeFor[eval.PluginRef](), reflect.TypeFor[eval.Shard](),
		}},
		{"job list", "| `oz0 job list`, `oz0 job show` |", []reflect.Type{
			reflect.TypeFor[apiv1.Job](), reflect.TypeFor[apiv1.Limits](), reflect.TypeFor[apiv1.Usage](),
		}},
		{"approval list", "| `oz0 approval list` |", []reflect.Type{reflect.TypeFor[apiv1.Approval]()}},
		{"job calls", "| `oz0 job show ID --calls` |", []reflect.Type{
			reflect.TypeFor[apiv1.ModelCall](), reflect.TypeFor[gateway.Exchange](), reflect.TypeFor[gateway.Chunk](),
			reflect.TypeFor[apiv1.Conversation](), reflect.TypeFor[apiv1.ToolDef](), reflect.TypeFor[apiv1.Message](),
			reflect.TypeFor[apiv1.Block](), reflect.TypeFor[apiv1.Answer](),
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var row string
			for _, l := range strings.Split(string(doc), "\n") {
				if strings.HasPrefix(l, c.row) {
					row = l
				}
			}
			if row == "" {
				t.Errorf("docs/cli.md has no row that starts %s", c.row)
				return
			}
			for _, ty := range c.types {
				for i := range ty.NumField() {
					name, _, _ := strings.Cut(ty.Field(i).Tag.Get("json"), ",")
					if name != "" && name != "-" && !strings.Contains(row, "`"+name+"`") {
						t.Errorf("docs/cli.md's row %s does not list %s's field %s", c.row, ty, name)
					}
				}
			}
		})
	}
}

// docs/development.md's layout names every package: each folder of internal/ in a row of its own,
// each of devserver/ and harnesskit/ in their rows.
func TestDevelopmentDocListsEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("../../docs/development.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, l := range strings.Split(string(doc), "\n") {
		for _, parent := range []string{"devserver", "harnesskit"} {
			if strings.HasPrefix(l, "| `"+parent+"/` |") {
				rows[parent] = l
			}
		}
	}
	for _, parent := range []string{"internal", "devserver", "harnesskit"} {
		dirs, err := os.ReadDir(filepath.Join("../..", parent))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range dirs {
			if !d.IsDir() || d.Name() == "internal" {
				continue
			}
			if goFiles, _ := filepath.Glob(filepath.Join("../..", parent, d.Name(), "*.go")); len(goFiles) == 0 {
				continue
			}
			if parent == "internal" {
				if !strings.Contains(string(doc), "`internal/"+d.Name()+"`") {
					t.Errorf("docs/development.md's layout does not name internal/%s", d.Name())
				}
			} else if !strings.Contains(rows[parent], "`"+d.Name()+"/`") {
				t.Errorf("docs/development.md's %s/ row does not name %s/", parent, d.Name())
			}
		}
	}
}

// userDocs are the pages a user reads: README.md, docs/ and every Markdown file a template
// scaffolds into a plugin.
func userDocs(t *testing.T) []string {
	t.Helper()
	pages := []string{"../../README.md"}
	for _, root := range []string{"../../docs", "../../scaffold/templates"} {
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
				pages = append(pages, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return pages
}

// No user doc names an issue of the tracker: a reader has no tracker to look it up in, and what
// was measured or decided before lives in git history, not in the page.
func TestUserDocsNameNoIssue(t *testing.T) {
	issue := regexp.MustCompile(`(?i)\bissues?\s+#?\d+|\(issue:|\bissue:\s|\(#\d+\)`)
	for _, p := range userDocs(t) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if m := issue.FindString(line); m != "" {
				rel, _ := filepath.Rel("../..", p)
				t.Errorf("%s:%d names an issue (%q): say what the figure or the decision is, without the tracker", rel, i+1, m)
			}
		}
	}
}

// headingSlugs are the anchors GitHub gives a page's headings: lower case, punctuation dropped,
// spaces to hyphens, a repeated one numbered.
func headingSlugs(doc string) map[string]bool {
	slugs := map[string]bool{}
	seen := map[string]int{}
	inCode := false
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(l, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(l, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		s := b.String()
		if n := seen[s]; n > 0 {
			slugs[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			slugs[s] = true
		}
		seen[s]++
	}
	return slugs
}

// Every link from a user doc to a section of a page of docs/ (or of itself) names a heading that
// is there: a section renamed takes its links with it.
func TestDocsLinksToSectionsResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([A-Za-z0-9_./-]*\.md)?#([^)\s]+)\)`)
	for _, p := range userDocs(t) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			target := p
			if m[1] != "" {
				target = filepath.Join(filepath.Dir(p), m[1])
			}
			doc, err := os.ReadFile(target)
			if err != nil {
				if strings.Contains(filepath.ToSlash(p), "scaffold/templates/") {
					continue // a template's page links pages of the plugin it renders, not of this tree
				}
				rel, _ := filepath.Rel("../..", p)
				t.Errorf("%s links %s, which cannot be read: %v", rel, m[1], err)
				continue
			}
			if !headingSlugs(string(doc))[m[2]] {
				rel, _ := filepath.Rel("../..", p)
				t.Errorf("%s links %s#%s, which has no such section", rel, m[1], m[2])
			}
		}
	}
}
