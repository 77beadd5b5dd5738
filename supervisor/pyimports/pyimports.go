// Package pyimports imports the modules of a plugin's Python harnesses as a session would run
// them (the same interpreter and PYTHONPATH), so that a framework that is not installed is found
// before a job fails on it: oz0 doctor fails on it, oz0 dev warns at start.
package pyimports

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/internal/lazyre"
	"github.com/orchestrator-zero/oz0/internal/textclip"
	"github.com/orchestrator-zero/oz0/plugin"
	"github.com/orchestrator-zero/oz0/supervisor"
)

// importScript is a harness of the protocol that imports each module named in argv (a path
// ending in .py is loaded from that file, under another name, so its main guard does not run) and
// answers with a result: {"ok": true}, or the first module that failed, {"kind": "missing",
// "module", "what": the module not installed} or {"kind": "error", "module", "what": the error}.
// What the modules print goes to stderr, with the traceback; its own niceness is raised first
// when its first argument is "--nice" (oz0 dev's check, which nobody waits for).
const importScript = `import importlib, importlib.util, json, os, sys, traceback
out = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdin.readline()
names = sys.argv[1:]
if names[:1] == ["--nice"]:
    names = names[1:]
    os.nice(10)
report = {"ok": True}
for name in names:
    try:
        if name.endswith(".py"):
            spec = importlib.util.spec_from_file_location("_oz0_doctor_harness", name)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            importlib.import_module(name)
    except ModuleNotFoundError as err:
        traceback.print_exc()
        report = {"kind": "missing", "module": name, "what": err.name or str(err)}
        break
    except BaseException as err:
        traceback.print_exc()
        report = {"kind": "error", "module": name, "what": "%s: %s" % (type(err).__name__, str(err).replace("\n", " "))}
        break
sys.stdout.flush()
out.write(json.dumps({"type": "result", "output": report}) + "\n")
out.flush()
`

// report is the importScript's result.
type report struct {
	OK     bool   `json:"ok"`
	Kind   string `json:"kind"`
	Module string `json:"module"`
	What   string `json:"what"`
}

// Problem is a harness whose modules do not import.
type Problem struct {
	Harness string
	Module  string // the module (or script) that failed
	Missing string // the module not installed; "" for another failure
	Err     string // the other failure: "SyntaxError: …"
	Python  string // the interpreter
	Listed  string // the pyproject.toml dependency that provides Missing, if one does
	Dir     string
}

func (p *Problem) Error() string {
	if p.Missing == "" {
		return fmt.Sprintf("harness %s: %s does not import: %s", p.Harness, p.Module, p.Err)
	}
	listed := "; pyproject.toml lists no dependency that provides it"
	if p.Listed != "" {
		listed = "; pyproject.toml lists it as " + p.Listed
	}
	return fmt.Sprintf("harness %s: %s imports %s, which is not installed in the plugin's environment (%s)%s", p.Harness, p.Module, p.Missing, p.Python, listed)
}

// Mend says what to do about it.
func (p *Problem) Mend() string {
	if p.Missing == "" {
		return "fix what the traceback says: " + p.Python + " -c 'import " + strings.TrimSuffix(filepath.Base(p.Module), ".py") + "' with the plugin's src/ on PYTHONPATH shows it"
	}
	return supervisor.InstallMend(p.Dir, true)
}

// Options say how Check runs.
type Options struct {
	// Background runs the check at a low CPU priority: oz0 dev's check after its start, which
	// nobody waits for.
	Background bool
	// Sandbox is the sandbox the check runs in: the node's, as its sessions run (the check
	// imports the plugin's own code). Its zero value is tier none.
	Sandbox supervisor.Sandbox
	// TempDir is where the check's session makes its directories; "" is os.TempDir().
	TempDir string
}

// checkTimeout bounds one harness's check: a framework's import takes seconds.
const checkTimeout = time.Minute

// Check imports the modules of each Python harness of p, in a session of the harness's
// interpreter, environment and sandbox (opts.Sandbox), as the harness's own sessions run. It
// returns what it imported, one entry a harness ("MODULES (PYTHON)"), the first Problem, or an
// error when the check could not run.
func Check(ctx context.Context, p *plugin.Plugin, opts Options) (done []string, problem *Problem, err error) {
	for _, h := range p.Manifest.Harnesses {
		if len(h.Command) == 0 || !supervisor.IsPython(h.Command[0]) || strings.ContainsRune(h.Command[0], '/') {
			continue
		}
		modules := harnessModules(p.Dir, h.Command)
		if len(modules) == 0 {
			continue
		}
		args := modules
		if opts.Background {
			args = append([]string{"--nice"}, modules...)
		}
		rep, python, err := run(ctx, p.Dir, append([]string{h.Command[0], "-c", importScript}, args...), opts)
		if err != nil {
			return done, nil, fmt.Errorf("harness %s: cannot import its modules: %w", h.Name, err)
		}
		if !rep.OK {
			pr := &Problem{Harness: h.Name, Module: rep.Module, Python: python, Dir: p.Dir}
			if rep.Kind == "missing" {
				pr.Missing, pr.Listed = rep.What, listedAs(p.Dir, rep.What)
			} else {
				pr.Err = rep.What
			}
			return done, pr, nil
		}
		done = append(done, fmt.Sprintf("%s (%s)", strings.Join(modules, ", "), python))
	}
	return done, nil, nil
}

// run runs the importScript command as a session and returns its report and the interpreter
// that ran it.
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
	if end.Status != harnesskit.Completed || json.Unmarshal(end.Output, &rep) != nil || (!rep.OK && rep.Module == "") {
		why := end.Reason
		if tail := textclip.LastLine(end.StderrTail, 300); tail != "" {
			why += ": " + tail
		}
		return report{}, python, fmt.Errorf("%s: %s", python, why)
	}
	return rep, python, nil
}

// harnessModules are what a Python harness command runs, to import: for python -m PKG, PKG and
// the modules beside its __main__ (the templates import agent.py, and with it the framework,
// only once a session has started); for python FILE.py, that file.
func harnessModules(dir string, argv []string) []string {
	if mod, _ := supervisor.PythonModule(argv); mod != "" {
		mods := []string{mod}
		pkgDir := filepath.Join(append([]string{dir, "src"}, strings.Split(mod, ".")...)...)
		if _, err := os.Stat(pkgDir); err != nil {
			pkgDir = filepath.Join(append([]string{dir}, strings.Split(mod, ".")...)...)
		}
		files, _ := filepath.Glob(filepath.Join(pkgDir, "*.py"))
		for _, f := range files {
			base := strings.TrimSuffix(filepath.Base(f), ".py")
			if base != "__init__" && base != "__main__" {
				mods = append(mods, mod+"."+base)
			}
		}
		return mods
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

// listedAs is the dependency of the plugin's pyproject.toml that provides module, by name
// (google → google-adk==1.2.0); "" when none does.
func listedAs(dir, module string) string {
	top := strings.ToLower(strings.ReplaceAll(strings.SplitN(module, ".", 2)[0], "_", "-"))
	for _, d := range Dependencies(dir) {
		name := strings.ToLower(strings.ReplaceAll(requirementName().FindString(d), "_", "-"))
		if name == top || strings.HasPrefix(name, top+"-") {
			return d
		}
	}
	return ""
}

var requirementName = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]*`)

// Dependencies is [project] dependencies of the pyproject.toml in dir; nil when it has none or
// cannot be read.
func Dependencies(dir string) []string {
	data, err := os.ReadFile(filepath.Join(dir, "pyproject.toml"))
	if err != nil {
		return nil
	}
	var doc struct {
		Project struct {
			Dependencies []string `toml:"dependencies"`
		} `toml:"project"`
	}
	if toml.Unmarshal(data, &doc) != nil {
		return nil
	}
	return doc.Project.Dependencies
}
