package scaffold

import (
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/orchestrator-zero/oz0/lint"
)

func opts(parent string) Options {
	return Options{Name: "acme-triage", Template: "byo-agent", Description: `Sorts "support" tickets`, Parent: parent}
}

func TestRenderFillsEveryPlaceholder(t *testing.T) {
	files, err := Render(opts(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{}
	for _, f := range files {
		paths[f.Path] = true
		if strings.Contains(f.Path, "__package__") || strings.Contains(f.Path, "__name__") {
			t.Errorf("placeholder left in path %s", f.Path)
		}
		// ${{ is a GitHub Actions expression (the workflow's), not a Go template's.
		if strings.Contains(strings.ReplaceAll(string(f.Data), "${{", ""), "{{") && !strings.HasSuffix(f.Path, ".md") {
			t.Errorf("%s still holds template braces", f.Path)
		}
	}
	for _, want := range []string{
		"oz0-plugin.yaml", "agents/acme-triage.yaml", "prompts/acme-triage.md",
		"src/acme_triage/harness.py", "src/acme_triage/agent.py", "src/acme_triage/legacy.py",
		"src/acme_triage/adapters.py", "src/acme_triage/__init__.py", "src/acme_triage/__main__.py",
		"tests/sessions.py", "tests/test_harness.py", "tests/test_agent.py", "AGENTS.md", ".claude/skills/oz0-plugin/SKILL.md",
		"pyproject.toml", ".gitignore", "README.md", ".github/workflows/ci.yml",
		"evals/triage.yaml", "evals/recordings/triage/billing.json", "evals/recordings/triage/login.json", "evals/recordings/triage/refusal.json",
	} {
		if !paths[want] {
			t.Errorf("missing %s", want)
		}
	}
}

func TestRenderQuotesTheDescription(t *testing.T) {
	files, err := Render(opts(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Path == "oz0-plugin.yaml" && !strings.Contains(string(f.Data), `description: "Sorts \"support\" tickets"`) {
			t.Errorf("manifest description not quoted:\n%s", f.Data)
		}
	}
}

func TestCreateIntoEmptyDirectory(t *testing.T) {
	parent := t.TempDir()
	if err := os.Mkdir(filepath.Join(parent, "acme-triage"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(opts(parent)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(parent, "acme-triage", "oz0-plugin.yaml")); err != nil {
		t.Fatal(err)
	}
	assertNoLeftovers(t, parent)
}

func TestCreateRefusesNonEmptyTarget(t *testing.T) {
	parent := t.TempDir()
	target := filepath.Join(parent, "acme-triage")
	if err := os.MkdirAll(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "notes.txt"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Create(opts(parent))
	if !errors.Is(err, ErrTargetNotEmpty) {
		t.Fatalf("got %v, want ErrTargetNotEmpty", err)
	}
	entries, _ := os.ReadDir(target)
	if len(entries) != 1 {
		t.Errorf("target changed: %v", entries)
	}
	assertNoLeftovers(t, parent)
}

func TestCreateFailureLeavesNothing(t *testing.T) {
	base := t.TempDir()
	parent := filepath.Join(base, "file")
	if err := os.WriteFile(parent, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(opts(parent)); err == nil {
		t.Fatal("want an error writing under a file")
	}
	entries, _ := os.ReadDir(base)
	if len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
}

func TestCreateRejectsBadOptionsBeforeWriting(t *testing.T) {
	parent := t.TempDir()
	for _, o := range []Options{
		{Name: "../x", Template: "byo-agent", Description: "d", Parent: parent},
		{Name: "ok", Template: "nope", Description: "d", Parent: parent},
		{Name: "ok", Template: "byo-agent", Description: "", Parent: parent},
	} {
		if _, err := Create(o); err == nil {
			t.Errorf("Create(%+v) = nil error", o)
		}
	}
	entries, _ := os.ReadDir(parent)
	if len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
}

func assertNoLeftovers(t *testing.T, parent string) {
	t.Helper()
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".oz0-new-") {
			t.Errorf("temporary directory %s left behind", e.Name())
		}
	}
}

// Every directory under templates/ is a template of the catalogue or a layer some template uses;
// the harness has one source in each language, the Python layer and the Node layer, which every
// template of the language renders.
func TestLayers(t *testing.T) {
	entries, err := fs.ReadDir(templatesFS, "templates")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, tp := range catalogue {
		if last := tp.layers[len(tp.layers)-1]; last != tp.Name {
			t.Errorf("template %s: its own directory must be its last layer, not %s", tp.Name, last)
		}
		for _, l := range tp.layers {
			used[l] = true
		}
		files, err := Render(Options{Name: "acme-triage", Template: tp.Name, Description: "d"})
		if err != nil {
			t.Fatal(err)
		}
		has := func(p string) bool { return slices.ContainsFunc(files, func(f File) bool { return f.Path == p }) }
		if slices.Contains(tp.layers, pythonLayer) && !has("src/acme_triage/harness.py") {
			t.Errorf("%s: no harness.py", tp.Name)
		}
		if slices.Contains(tp.layers, nodeLayer) && !has("src/harness.mjs") {
			t.Errorf("%s: no harness.mjs", tp.Name)
		}
	}
	for _, e := range entries {
		if !used[e.Name()] {
			t.Errorf("templates/%s is neither a template nor a layer of one", e.Name())
		}
	}
	_ = fs.WalkDir(templatesFS, "templates", func(p string, d fs.DirEntry, err error) error {
		if err == nil && path.Base(p) == "harness.py" && !strings.HasPrefix(p, "templates/"+pythonLayer+"/") {
			t.Errorf("%s: a copy of the shared harness", p)
		}
		if err == nil && path.Base(p) == "harness.mjs" && !strings.HasPrefix(p, "templates/"+nodeLayer+"/") {
			t.Errorf("%s: a copy of the Node kit", p)
		}
		return err
	})
}

// Every template lints clean, with no warning: its formats match the clients its code builds, its
// framework is pinned, its command's module exists.
func TestEveryTemplateLintsClean(t *testing.T) {
	for _, tp := range catalogue {
		files, err := Render(Options{Name: "acme-triage", Template: tp.Name, Description: "Sorts support tickets"})
		if err != nil {
			t.Fatal(err)
		}
		fsys := fstest.MapFS{}
		for _, f := range files {
			fsys[f.Path] = &fstest.MapFile{Data: f.Data, Mode: 0o644}
		}
		rep, err := lint.RunFS(fsys)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range rep.Diagnostics {
			t.Errorf("%s: %s:%d:%d %s %s", tp.Name, d.File, d.Line, d.Col, d.Rule, d.Message)
		}
	}
}

// A Node template's lock file is its package.json's, under each plugin's name: npm ci refuses a
// lock that disagrees with package.json (scripts/template-lock.sh writes it). Every package is
// pinned to one version.
func TestNodeLockAgreesWithPackage(t *testing.T) {
	exact := regexp.MustCompile(`^\d+\.\d+\.\d+$`)
	for _, tp := range catalogue {
		if !slices.Contains(tp.layers, nodeLayer) {
			continue
		}
		files, err := Render(Options{Name: "shop-helper", Template: tp.Name, Description: `Helps "shoppers"`})
		if err != nil {
			t.Fatal(err)
		}
		type pkg struct {
			Name            string            `json:"name"`
			Version         string            `json:"version"`
			Dependencies    map[string]string `json:"dependencies"`
			DevDependencies map[string]string `json:"devDependencies"`
			Engines         map[string]string `json:"engines"`
		}
		var manifest pkg
		var lock struct {
			pkg
			Packages map[string]pkg `json:"packages"`
		}
		for _, f := range files {
			switch f.Path {
			case "package.json":
				if err := json.Unmarshal(f.Data, &manifest); err != nil {
					t.Fatalf("%s: package.json: %v", tp.Name, err)
				}
			case "package-lock.json":
				if err := json.Unmarshal(f.Data, &lock); err != nil {
					t.Fatalf("%s: package-lock.json: %v", tp.Name, err)
				}
			}
		}
		root := lock.Packages[""]
		if manifest.Name != "shop-helper" || lock.Name != manifest.Name || root.Name != manifest.Name || root.Version != manifest.Version {
			t.Errorf("%s: names and versions: package.json %s@%s, lock %s, its root %s@%s", tp.Name, manifest.Name, manifest.Version, lock.Name, root.Name, root.Version)
		}
		if !maps.Equal(root.Dependencies, manifest.Dependencies) || !maps.Equal(root.DevDependencies, manifest.DevDependencies) || !maps.Equal(root.Engines, manifest.Engines) {
			t.Errorf("%s: the lock was made from another package.json: run scripts/template-lock.sh %s", tp.Name, tp.Name)
		}
		for name, v := range manifest.Dependencies {
			if !exact.MatchString(v) || lock.Packages["node_modules/"+name].Version != v {
				t.Errorf("%s: %s is %q in package.json and %q in the lock; pin one exact version", tp.Name, name, v, lock.Packages["node_modules/"+name].Version)
			}
		}
		for name, v := range manifest.DevDependencies {
			if !exact.MatchString(v) {
				t.Errorf("%s: %s is %q; pin one exact version", tp.Name, name, v)
			}
		}
	}
}

// A README's layout tree keeps the comments of the rows that hold the plugin's name in the
// column of the others, for a short name too (those rows are padded to the column, not written
// at the template's width), up to a name of 15 characters.
func TestReadmeTreeAligned(t *testing.T) {
	for _, tp := range Templates() {
		for _, name := range []string{"ab", "acme-triage", "fifteen-letters"} {
			files, err := Render(Options{Name: name, Template: tp.Name, Description: "Sorts support tickets"})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				if f.Path != "README.md" {
					continue
				}
				_, tree, ok := strings.Cut(string(f.Data), "## Layout\n\n```\n")
				tree, _, _ = strings.Cut(tree, "```")
				// The column of the comments: the manifest's row, which every tree has.
				col := strings.Index(tree, "the manifest")
				if !ok || !strings.HasPrefix(tree, "oz0-plugin.yaml ") || col < 0 {
					t.Fatalf("%s: no layout tree in README.md starting with the manifest", tp.Name)
				}
				for _, line := range strings.Split(tree, "\n") {
					if !strings.Contains(line, name) || strings.HasPrefix(line, "oz0-plugin.yaml") || strings.HasPrefix(line, "src/") {
						continue
					}
					if i := strings.Index(line, "  "); i < 0 || len(line) <= col || line[col-1] != ' ' || line[col] == ' ' {
						t.Errorf("%s, name %q: the comment of %q is not at column %d", tp.Name, name, line, col)
					}
				}
			}
		}
	}
}
