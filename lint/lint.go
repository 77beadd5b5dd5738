// Package lint is the one loader of oz0 plugins. Load reads a plugin directory once, with source
// positions: oz0-plugin.yaml, the agent definitions, the skills' SKILL.md, pyproject.toml and
// package.json (and, for the model clients it builds, the code a harness runs). It validates them
// against the schemas of package schemas, runs the cross-file rules over what it read, and, when
// nothing is an error, makes the typed plugin.Plugin that the dev server, hot reload and the
// conformance kit run. What lint passes, they accept, and the reverse.
//
// Every path a plugin names stays inside the plugin directory, symbolic links resolved: files are
// read through an os.Root, which refuses a link that leads out, and such a link is a path-escape
// finding at the place the path is named. Every problem is a diag.Diagnostic under a stable rule ID
// (see diag.Rules); one run reports everything it finds.
package lint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/plugin"
)

// Load reads and checks the plugin in dir. The report holds every finding. When one of them is an
// error, the plugin is nil and err is a *diag.ReportError with the same report, so that a caller
// that runs plugins cannot run one that lint refuses. Any other error is for a plugin that cannot
// be read at all or in part (dir missing or not a directory, permission denied, I/O errors);
// everything about the plugin's content, a missing oz0-plugin.yaml included, is a finding.
func Load(dir string) (*plugin.Plugin, *diag.Report, error) {
	return load(dir, false)
}

func load(dir string, evals bool) (*plugin.Plugin, *diag.Report, error) {
	if dir == "" {
		return nil, nil, errors.New("the plugin directory is an empty path; pass a plugin's directory, or . for the current one")
	}
	st, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("plugin directory %s does not exist; pass a plugin's directory, or run inside one", dir)
		}
		return nil, nil, fmt.Errorf("cannot read plugin directory %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, nil, fmt.Errorf("%s is not a directory; pass the plugin's directory", dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, err
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read plugin directory %s: %w", dir, err)
	}
	defer root.Close()
	l := &linter{fsys: root.FS(), dir: dir, abs: abs, evals: evals}
	rep, err := l.lint()
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read plugin %s: %w; check its permissions", dir, err)
	}
	if rep.HasErrors() {
		return nil, rep, &diag.ReportError{What: "the plugin in " + dir, Report: rep}
	}
	return l.build(), rep, nil
}

// Run lints the plugin in dir, its eval files (evals/*.yaml) included: Load, for a caller that
// wants the findings only.
func Run(dir string) (*diag.Report, error) {
	_, rep, err := load(dir, true)
	var re *diag.ReportError
	if errors.As(err, &re) {
		return rep, nil
	}
	return rep, err
}

// RunFS lints the plugin at the root of fsys (for example a template rendered into an
// fstest.MapFS). Errors are as for Run.
func RunFS(fsys fs.FS) (*diag.Report, error) {
	return (&linter{fsys: fsys, evals: true}).lint()
}

// RunMany lints each of dirs, in parallel over GOMAXPROCS workers (or workers, when positive).
// reports[i] is the report of dirs[i], nil when that plugin could not be read; err joins those
// errors.
func RunMany(dirs []string, workers int) (reports []*diag.Report, err error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, max(1, len(dirs)))
	reports = make([]*diag.Report, len(dirs))
	errs := make([]error, len(dirs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				reports[i], errs[i] = Run(dirs[i])
			}
		})
	}
	for i := range dirs {
		next <- i
	}
	close(next)
	wg.Wait()
	return reports, errors.Join(errs...)
}

func (l *linter) lint() (*diag.Report, error) {
	if err := l.run(); err != nil {
		return nil, err
	}
	return &diag.Report{Dir: l.dir, Diagnostics: diag.Sort(l.findings)}, nil
}
