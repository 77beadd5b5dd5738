// Package lint checks an oz0 plugin: it loads oz0-plugin.yaml, the agent
// definitions, the skills' SKILL.md and pyproject.toml with source
// positions, validates them against the schemas of package schemas, and
// runs cross-file rules. Every rule has a stable ID (see Rules) and every
// problem is a Finding; one run reports everything it finds.
package lint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
)

// Finding is one problem, at a 1-based line and column of File (0 when
// the finding is about the file as a whole).
type Finding struct {
	File     string   `json:"file"` // slash path relative to the plugin directory
	Line     int      `json:"line"`
	Col      int      `json:"col"`
	Severity Severity `json:"severity"`
	Rule     string   `json:"rule"`
	Message  string   `json:"message"`
}

// Report is the result of linting one plugin.
type Report struct {
	// Dir is the plugin directory as given to Run ("" for RunFS). The
	// output formats show each finding's file as Dir joined with File, so
	// that paths are relative to where the linter ran.
	Dir string
	// Findings, sorted by file, line, column, rule and message.
	Findings []Finding
}

// HasErrors reports whether any finding is an error.
func (r *Report) HasErrors() bool {
	e, _ := r.Counts()
	return e > 0
}

// Counts returns the number of errors and of warnings.
func (r *Report) Counts() (errs, warnings int) {
	for _, f := range r.Findings {
		if f.Severity == Error {
			errs++
		} else {
			warnings++
		}
	}
	return errs, warnings
}

// Path returns the path under which f's file is shown: Dir joined with
// f.File, in slash form.
func (r *Report) Path(f Finding) string {
	if r.Dir == "" || r.Dir == "." {
		return f.File
	}
	return path.Join(filepath.ToSlash(r.Dir), f.File)
}

// Run lints the plugin in dir. The error is only for a plugin that cannot
// be read at all or in part (dir missing or not a directory, permission
// denied, I/O errors); everything about the plugin's content, including a
// missing oz0-plugin.yaml, is a Finding.
func Run(dir string) (*Report, error) {
	st, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("plugin directory %s does not exist; pass a plugin's directory, or run inside one", dir)
		}
		return nil, fmt.Errorf("cannot read plugin directory %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory; pass the plugin's directory", dir)
	}
	rep, err := runFS(os.DirFS(dir), dir)
	if err != nil {
		return nil, fmt.Errorf("cannot read plugin %s: %w; check its permissions", dir, err)
	}
	return rep, nil
}

// RunFS lints the plugin at the root of fsys (for example a template
// rendered into an fstest.MapFS). Errors are as for Run.
func RunFS(fsys fs.FS) (*Report, error) {
	return runFS(fsys, "")
}

// RunMany lints each of dirs, in parallel over GOMAXPROCS workers (or
// workers, when positive). reports[i] is the report of dirs[i], nil when
// that plugin could not be read; err joins those errors.
func RunMany(dirs []string, workers int) (reports []*Report, err error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, max(1, len(dirs)))
	reports = make([]*Report, len(dirs))
	errs := make([]error, len(dirs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				reports[i], errs[i] = Run(dirs[i])
			}
		}()
	}
	for i := range dirs {
		next <- i
	}
	close(next)
	wg.Wait()
	return reports, errors.Join(errs...)
}

func runFS(fsys fs.FS, dir string) (*Report, error) {
	l := &linter{fsys: fsys, dir: dir}
	if err := l.run(); err != nil {
		return nil, err
	}
	sortFindings(l.findings)
	return &Report{Dir: dir, Findings: l.findings}, nil
}

func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		switch {
		case a.File != b.File:
			return a.File < b.File
		case a.Line != b.Line:
			return a.Line < b.Line
		case a.Col != b.Col:
			return a.Col < b.Col
		case a.Rule != b.Rule:
			return a.Rule < b.Rule
		}
		return a.Message < b.Message
	})
}
