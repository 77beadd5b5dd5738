package lint

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestFind(t *testing.T) {
	root := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("plugins/b/oz0-plugin.yaml", "name: b\n") // no version
	write("plugins/a/oz0-plugin.yaml", "name: acme\nversion: 0.2.0\n")
	write("plugins/a/evals/triage.yaml", "agent: acme\n")                            // has evals
	write("plugins/a/examples/inner/oz0-plugin.yaml", "name: inner\nversion: 1.0\n") // a plugin's own: not listed
	write("plugins/c/evals/.draft.yaml", "")                                         // hidden: no evals
	write("plugins/c/oz0-plugin.yaml", "name: [not, text]\nversion: 3\n")            // lint's to report
	write("node_modules/dep/oz0-plugin.yaml", "name: dep\n")                         // a dependency's
	write(".venv/lib/oz0-plugin.yaml", "name: env\n")                                // hidden
	if err := os.MkdirAll(filepath.Join(root, "odd", "oz0-plugin.yaml"), 0o755); err != nil {
		t.Fatal(err) // a directory of that name is not a manifest
	}
	got, err := Find(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []Found{
		{Path: filepath.ToSlash(filepath.Join(root, "plugins/a")), Name: "acme", Version: "0.2.0", Evals: true},
		{Path: filepath.ToSlash(filepath.Join(root, "plugins/b")), Name: "b"},
		{Path: filepath.ToSlash(filepath.Join(root, "plugins/c")), Version: "3"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Find = %+v\nwant %+v", got, want)
	}

	// The root itself may be the plugin.
	got, err = Find(filepath.Join(root, "plugins", "a"))
	if err != nil || len(got) != 1 || got[0].Name != "acme" {
		t.Errorf("Find(a plugin's dir) = %+v, %v", got, err)
	}
	if got, err := Find(filepath.Join(root, "odd", "oz0-plugin.yaml")); err != nil || len(got) != 0 {
		t.Errorf("Find(no plugin) = %+v, %v; want an empty list", got, err)
	}
	for _, bad := range []string{filepath.Join(root, "nope"), filepath.Join(root, "plugins/a/evals/triage.yaml")} {
		if _, err := Find(bad); err == nil {
			t.Errorf("Find(%s): no error", bad)
		}
	}
}
