package scaffold

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/schemas"
)

// modeline finds the URL of a yaml-language-server line, wherever one is written: in a YAML
// file, a doc's example, a test's fixture (not a mention of the line in prose).
var modeline = regexp.MustCompile("yaml-language-server: \\$schema=([^\\s\"'`]+)")

// externalSchemas are the modelines that name another project's schema.
var externalSchemas = map[string]bool{
	"https://goreleaser.com/static/schema.json": true, // .goreleaser.yaml
}

// TestModelinesServeSchemas checks that every yaml-language-server line of the repository, and
// of every template rendered at a release's ref and at main, points at a URL that serves a
// schema of this repository: the raw file at a ref, whose path is a schema file here, whose $id
// names that file.
func TestModelinesServeSchemas(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	checkURL := func(where, url string) {
		t.Helper()
		found++
		if externalSchemas[url] {
			return
		}
		rest, ok := strings.CutPrefix(url, schemas.RawURL)
		ref, path, ok2 := strings.Cut(rest, "/")
		if !ok || !ok2 || ref == "" || !(ref == "main" || regexp.MustCompile(`^v\d+\.\d+\.\d+`).MatchString(ref)) {
			t.Errorf("%s: the modeline %s is not this repository's file at main or a release's tag (%s<ref>/schemas/<file>)", where, url, schemas.RawURL)
			return
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
		if err != nil {
			t.Errorf("%s: the modeline %s names %s, which the repository does not have", where, url, path)
			return
		}
		var doc struct {
			ID string `json:"$id"`
		}
		if err := json.Unmarshal(data, &doc); err != nil || !strings.HasPrefix(path, schemas.Dir+"/") || doc.ID != schemas.URL(strings.TrimPrefix(path, schemas.Dir+"/")) {
			t.Errorf("%s: the modeline %s names %s, which is not one of the schemas (its $id is %q)", where, url, path, doc.ID)
		}
	}

	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "bin", "dist", ".cache":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(p, filepath.Join(root, "scaffold", "templates")+string(filepath.Separator)) {
			return nil // rendered below
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		for _, m := range modeline.FindAllSubmatch(data, -1) {
			checkURL(rel, string(m[1]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	for _, ref := range []string{"", "v1.2.3"} {
		for _, tmpl := range TemplateNames() {
			files, err := Render(Options{Name: "acme-triage", Template: tmpl, Description: "Sorts support tickets", Ref: ref})
			if err != nil {
				t.Fatal(err)
			}
			lines := 0
			for _, f := range files {
				for _, m := range modeline.FindAllSubmatch(f.Data, -1) {
					lines++
					url := string(m[1])
					want := "/main/"
					if ref != "" {
						want = "/" + ref + "/"
					}
					if !strings.Contains(url, want) {
						t.Errorf("%s at ref %q: %s: %s is not at the ref", tmpl, ref, f.Path, url)
					}
					checkURL(tmpl+": "+f.Path, url)
				}
			}
			if lines != 3 {
				t.Errorf("%s: %d yaml-language-server lines, want 3 (the manifest, the agent and the eval file)", tmpl, lines)
			}
		}
	}
	if found < 10 {
		t.Errorf("only %d modelines found: is the walk looking in the right place?", found)
	}
}

func TestSchemaFuncRefusesAnUnknownSchema(t *testing.T) {
	if _, err := templateFuncs("main")["schema"].(func(string) (string, error))("nope.schema.json"); err == nil {
		t.Error("an unknown schema file renders")
	}
}
