// Package pyimports finds the third-party modules a plugin's Python harnesses import, and those of
// them that are not installed, without running the plugin's code: a framework missing from the
// plugin's environment is said before a job fails on it (oz0 doctor fails on it, oz0 dev warns
// at start).
//
// The check reads; it runs nothing of the plugin's. It is a session of the harness's own
// interpreter, environment and sandbox (the tier's, with its deadline and the reaping of any
// session), running check.py: that parses the harness's module with Python's ast (for `python -m
// PKG`, PKG's __init__ and __main__; for `python FILE.py`, the file) and the plugin's own modules
// they import, relative imports and imports inside functions included, at most 500 files of up to
// 2 MiB each. Of the absolute imports outside the plugin's own package and the standard library
// (sys.stdlib_module_names), each is looked up with importlib.util.find_spec on its top-level
// name, which runs nothing of it (a namespace package, which has no code, is looked into by
// name further: `google.adk` of `google`). An import that runs only when a function is called,
// one under a try that catches ImportError, and one under `if TYPE_CHECKING` are not required: a
// missing one is no problem, and none of them is a dependency.
//
// What is found (Harness.Dependencies) is the harness's dependencies: the third-party modules it
// imports as its modules load, by their dotted names as written (`google.adk.agents`), each with
// the file and line that first imports it. A session made ahead of its job may import these (and
// never the plugin's own modules) to have them loaded when the job comes.
//
// What parsing cannot see is not checked: a module imported by a name computed as it runs
// (importlib.import_module(name)), a dependency of a dependency, an import that fails for
// another reason than the module's absence (its own import error, a version too old).
package pyimports

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/internal/textclip"
	"github.com/orchestrator-zero/oz0/plugin"
	"github.com/orchestrator-zero/oz0/supervisor"
)

// Reader is the Python that reads what a harness imports without running it (reader.py: its
// docstring says how): check.py after it is the import check; the loader of sessions made ahead
// (supervisor/ahead) puts itself after it too.
//
//go:embed reader.py
var Reader string

//go:embed check.py
var checkMain string

// checkScript is a harness of the protocol that reads a harness's modules and answers with a
// report.
var checkScript = sync.OnceValue(func() string { return Reader + "\n" + checkMain })

// report is checkScript's result.
type report struct {
	Files   []string     `json:"files"`
	Deps    []Dependency `json:"deps"`
	Unread  int          `json:"unread"`
	Problem *struct {
		Kind   string `json:"kind"`   // missing, own, entry, syntax, error
		Module string `json:"module"` // what is missing; the module that does not parse
		At     string `json:"at"`     // FILE:LINE, relative to the plugin when in it; "" for the command
		What   string `json:"what"`   // the error of one that does not parse or cannot be read
	} `json:"problem"`
}

// Dependency is a third-party module that a harness imports.
type Dependency struct {
	Module string `json:"module"` // as imported: "google.adk.agents" (of from X import Y, X)
	At     string `json:"at"`     // where it is first imported: "src/acme_adk/agent.py:8"
}

// Harness is what Check found of one Python harness.
type Harness struct {
	Name         string
	Python       string       // the interpreter that its sessions run
	Files        []string     // the plugin's files read, relative to its directory
	Unread       int          // files not read: past the bounds
	Dependencies []Dependency // sorted by module
}

// String is what the harness imports, for a person: "acme-adk imports anthropic, google (PYTHON)".
func (h Harness) String() string {
	var tops []string
	for _, d := range h.Dependencies {
		if top, _, _ := strings.Cut(d.Module, "."); !slices.Contains(tops, top) {
			tops = append(tops, top)
		}
	}
	what := "nothing beyond the standard library and its own modules"
	if len(tops) > 0 {
		what = strings.Join(tops, ", ")
	}
	if h.Unread > 0 {
		what += fmt.Sprintf(" (and %d of its files were not read: over 2 MiB, or past the 500th)", h.Unread)
	}
	return fmt.Sprintf("%s imports %s (%s)", h.Name, what, h.Python)
}

// Problem is what a harness imports that would fail: a module not installed, one of the plugin's
// own that is not there, a file that does not parse.
type Problem struct {
	Harness string
	Module  string // the module not installed, or not there; the module that does not parse
	At      string // where: FILE:LINE, relative to Dir when in it; "" when the harness's command names it
	Err     string // for a file that does not parse or cannot be read: "SyntaxError: invalid syntax"
	Python  string // the interpreter
	Listed  string // the pyproject.toml dependency that provides Module, if one does
	Dir     string
	kind    string
}

func (p *Problem) Error() string {
	switch p.kind {
	case "missing":
		listed := "; pyproject.toml lists no dependency that provides it"
		if p.Listed != "" {
			listed = "; pyproject.toml lists it as " + p.Listed
		}
		return fmt.Sprintf("harness %s: %s imports %s, which is not installed in the plugin's environment (%s)%s", p.Harness, p.At, p.Module, p.Python, listed)
	case "own":
		return fmt.Sprintf("harness %s: %s imports %s, which is not in the plugin", p.Harness, p.At, p.Module)
	case "entry":
		return fmt.Sprintf("harness %s: its command runs %s, which %s cannot find", p.Harness, p.Module, p.Python)
	case "syntax":
		return fmt.Sprintf("harness %s: %s does not parse: %s", p.Harness, p.At, p.Err)
	}
	return fmt.Sprintf("harness %s: %s: %s", p.Harness, p.At, p.Err)
}

// Mend says what to do about it: for a module not installed, supervisor.ModuleMend (how to
// install it, or to add the distribution that provides it when pyproject.toml lists none).
func (p *Problem) Mend() string {
	switch p.kind {
	case "missing":
		return supervisor.ModuleMend(p.Dir, p.Module, true)
	case "own":
		return "add " + p.Module + " to the plugin, or import the module it has"
	case "entry":
		return "put " + p.Module + " in the plugin's src/, or set the harness's command to the module the plugin has"
	case "syntax":
		file, _, _ := strings.Cut(p.At, ":")
		return "fix it there (python3 -m py_compile " + file + ", run in " + p.Dir + ", shows it)"
	}
	return "check the file's permissions"
}

// Options say how Check runs.
type Options struct {
	// Background runs the check at a low CPU priority: oz0 dev's check after its start, which
	// nobody waits for.
	Background bool
	// Sandbox is the sandbox the check runs in: the node's, as its sessions run. Its zero value is
	// tier none.
	Sandbox supervisor.Sandbox
	// TempDir is where the check's session makes its directories; "" is os.TempDir().
	TempDir string
}

// checkTimeout bounds one harness's check, which reads a few files.
const checkTimeout = time.Minute

// Check reads the modules of each Python harness of p, in a session of the harness's interpreter,
// environment and sandbox (opts.Sandbox), and looks up what they import. It returns what it found
// of the harnesses it read (those before the first problem), the first Problem, or an error when
// the check could not run.
func Check(ctx context.Context, p *plugin.Plugin, opts Options) (done []Harness, problem *Problem, err error) {
	for _, h := range p.Manifest.Harnesses {
		if len(h.Command) == 0 || !supervisor.IsPython(h.Command[0]) || strings.ContainsRune(h.Command[0], '/') {
			continue
		}
		entry := harnessEntry(p.Dir, h.Command)
		if entry == nil {
			continue
		}
		args := append([]string{p.Dir}, entry...)
		if opts.Background {
			args = append([]string{"--nice"}, args...)
		}
		// -I: neither PYTHONPATH (the script puts it on sys.path itself) nor the working
		// directory is searched as the interpreter starts, so no sitecustomize of the plugin's runs.
		rep, python, err := run(ctx, p.Dir, append([]string{h.Command[0], "-I", "-c", checkScript()}, args...), opts)
		if err != nil {
			return done, nil, fmt.Errorf("harness %s: cannot check its imports: %w", h.Name, err)
		}
		if pr := rep.Problem; pr != nil {
			problem := &Problem{Harness: h.Name, Module: pr.Module, At: pr.At, Err: pr.What, Python: python, Dir: p.Dir, kind: pr.Kind}
			if pr.Kind == "missing" {
				problem.Listed = supervisor.PyprojectListed(p.Dir, pr.Module)
			}
			return done, problem, nil
		}
		done = append(done, Harness{Name: h.Name, Python: python, Files: rep.Files, Unread: rep.Unread, Dependencies: rep.Deps})
	}
	return done, nil, nil
}

// run runs the check's command as a session and returns its report and the interpreter that ran
// it.
func run(ctx context.Context, pluginDir string, command []string, opts Options) (report, string, error) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	sb := opts.Sandbox
	if sb.Gateway == nil {
		// A strict sandbox serves the gateway in the session's network; the check makes no call.
		sb.Gateway = http.NotFoundHandler()
	}
	sess, err := supervisor.Start(ctx, supervisor.Spec{
		Command: command, PluginDir: pluginDir, TempDir: opts.TempDir, Sandbox: sb,
		Limits: supervisor.Limits{Timeout: checkTimeout},
	})
	if err != nil {
		return report{}, "", err
	}
	end := sess.Wait()
	python := sess.Program()
	var rep report
	if end.Status != harnesskit.Completed || json.Unmarshal(end.Output, &rep) != nil || (rep.Problem != nil && rep.Problem.Kind == "") {
		why := end.Reason
		if tail := textclip.LastLine(end.StderrTail, 300); tail != "" {
			why += ": " + tail
		}
		return report{}, python, fmt.Errorf("%s: %s", python, why)
	}
	return rep, python, nil
}

// harnessEntry is what a Python harness command runs, as check.py takes it: -m MODULE, or the
// file of python FILE.py (its path in the plugin); nil for anything else (-c code).
func harnessEntry(dir string, argv []string) []string {
	if mod, _ := supervisor.PythonModule(argv); mod != "" {
		return []string{"-m", mod}
	}
	if i := supervisor.ScriptArg(argv); i > 0 && strings.HasSuffix(argv[i], ".py") {
		f := argv[i]
		if !filepath.IsAbs(f) {
			f = filepath.Join(dir, f)
		}
		return []string{f}
	}
	return nil
}
