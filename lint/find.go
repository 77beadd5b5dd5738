package lint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/orchestrator-zero/oz0/lint/evalfile"
)

// Found is a plugin Find found: its directory (under the root as given, slash-separated), the
// name and version its manifest says ("" when it does not say them: lint says why), and whether
// it has eval files.
type Found struct {
	Path    string `json:"path"`
	Name    string `json:"name"`
	Version string `json:"version"`
	Evals   bool   `json:"evals"`
}

// MaxFound bounds what Find lists: a directory with more plugins than this is not a repository's.
const MaxFound = 10000

// skipDirs are the directories Find does not look into: dependencies and environments, which
// hold no plugin of the repository's and may be large.
var skipDirs = map[string]bool{"node_modules": true, "__pycache__": true, "venv": true}

// RootError is Find's error for a root that is not a directory: the caller named the wrong one.
type RootError struct{ msg string }

func (e *RootError) Error() string { return e.msg }

// Find finds every plugin (a directory with an oz0-plugin.yaml) under root, root itself included,
// in path order, without looking into a plugin's directory (its plugins are not the repository's),
// a hidden directory (.git, .venv) or a dependency's (node_modules).
func Find(root string) ([]Found, error) {
	st, err := os.Stat(root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &RootError{fmt.Sprintf("%s does not exist; give the directory to look for plugins in", root)}
		}
		return nil, err
	}
	if !st.IsDir() {
		return nil, &RootError{fmt.Sprintf("%s is not a directory; give the directory to look for plugins in", root)}
	}
	out := []Found{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if p != root && (strings.HasPrefix(d.Name(), ".") || skipDirs[d.Name()]) {
			return filepath.SkipDir
		}
		manifest := filepath.Join(p, ManifestFile)
		if st, err := os.Stat(manifest); err != nil || st.IsDir() {
			return nil // not a plugin: look under it
		}
		data, err := os.ReadFile(manifest)
		if err != nil {
			return err
		}
		if len(out) == MaxFound {
			return fmt.Errorf("more than %d plugins under %s; give a directory nearer them", MaxFound, root)
		}
		var m struct {
			Name    any `yaml:"name"`
			Version any `yaml:"version"`
		}
		_ = yaml.Unmarshal(data, &m) // a manifest that does not parse is lint's to report
		f := Found{Path: filepath.ToSlash(p), Name: scalar(m.Name), Version: scalar(m.Version)}
		f.Evals = hasEvals(filepath.Join(p, evalfile.Dir))
		out = append(out, f)
		return filepath.SkipDir
	})
	return out, err
}

// scalar is a manifest's value as text, "" when it is not a string or a number.
func scalar(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int, float64:
		return fmt.Sprint(v)
	}
	return ""
}

// hasEvals reports whether dir has eval files.
func hasEvals(dir string) bool {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if evalfile.IsFile(e) {
			return true
		}
	}
	return false
}
