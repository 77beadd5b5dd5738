package main

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/harnesskit/conformance"
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

// docs/cli.md lists every field of oz0 plugin test --json.
func TestCLIDocListsPluginTestFields(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, l := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(l, "| `oz0 plugin test` |") {
			row = l
		}
	}
	if row == "" {
		t.Fatal("docs/cli.md has no row for oz0 plugin test")
	}
	ct := reflect.TypeFor[conformance.Check]()
	for i := range ct.NumField() {
		name, _, _ := strings.Cut(ct.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" && !strings.Contains(row, "`"+name+"`") {
			t.Errorf("docs/cli.md does not list oz0 plugin test's field %s", name)
		}
	}
}
