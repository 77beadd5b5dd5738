// Package pyimports imports the modules of a plugin's Python harnesses as a session would run
// them (the same interpreter and PYTHONPATH), so that a framework that is not installed is found
// before a job fails on it: oz0 doctor fails on it, oz0 dev warns at start.
package pyimports

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/orchestrator-zero/oz0/plugin"
	"github.com/orchestrator-zero/oz0/supervisor"
)

// importScript imports each module named in argv (a path ending in .py is loaded from that file,
// under another name, so its main guard does not run) and prints a line for the first that
// fails: "missing<TAB>MODULE<TAB>PACKAGE" for a module not installed, "error<TAB>MODULE<TAB>TEXT"
// for any other failure, its traceback on stderr.
const importScript = `import importlib, importlib.util, sys, traceback
for name in sys.argv[1:]:
    try:
        if name.endswith(".py"):
            spec = importlib.util.spec_from_file_location("_oz0_doctor_harness", name)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            importlib.import_module(name)
    except ModuleNotFoundError as err:
        traceback.print_exc()
        print("missing\t%s\t%s" % (name, err.name or err))
        sys.exit(1)
    except BaseException as err:
        traceback.print_exc()
        print("error\t%s\t%s: %s" % (name, type(err).__name__, str(err).replace("\n", " ")))
        sys.exit(1)
`

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

// Check imports the modules of each Python harness of p. It returns what it imported, one entry
// a harness ("MODULES (PYTHON)"), the first Problem, or an error when Python could not be run.
func Check(ctx context.Context, p *plugin.Plugin) (done []string, problem *Problem, err error) {
	for _, h := range p.Manifest.Harnesses {
		if len(h.Command) == 0 || !supervisor.IsPython(h.Command[0]) || strings.ContainsRune(h.Command[0], '/') {
			continue
		}
		modules := harnessModules(p.Dir, h.Command)
		if len(modules) == 0 {
			continue
		}
		exe, path, pythonPath, err := supervisor.PythonEnv(h.Command[0], p.Dir, os.Getenv("PATH"))
		if err != nil {
			return done, nil, err
		}
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		cmd := exec.CommandContext(ctx, exe, append([]string{"-c", importScript}, modules...)...)
		cmd.Dir = p.Dir
		cmd.Env = []string{"PATH=" + path, "PYTHONPATH=" + pythonPath, "PYTHONDONTWRITEBYTECODE=1", "HOME=" + os.Getenv("HOME"), "LANG=C.UTF-8"}
		out, runErr := cmd.Output()
		cancel()
		if runErr != nil {
			kind, module, what, ok := lastReport(string(out))
			if !ok {
				return done, nil, fmt.Errorf("harness %s: cannot import its modules with %s: %v", h.Name, exe, runErr)
			}
			pr := &Problem{Harness: h.Name, Module: module, Python: exe, Dir: p.Dir}
			if kind == "missing" {
				pr.Missing, pr.Listed = what, listedAs(p.Dir, what)
			} else {
				pr.Err = what
			}
			return done, pr, nil
		}
		done = append(done, fmt.Sprintf("%s (%s)", strings.Join(modules, ", "), exe))
	}
	return done, nil, nil
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
		name := strings.ToLower(strings.ReplaceAll(requirementName.FindString(d), "_", "-"))
		if name == top || strings.HasPrefix(name, top+"-") {
			return d
		}
	}
	return ""
}

var requirementName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*`)

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

// lastReport splits the importScript's report, its last line of stdout (a module may print too).
func lastReport(out string) (kind, module, what string, ok bool) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	f := strings.SplitN(lines[len(lines)-1], "\t", 3)
	if len(f) != 3 || (f[0] != "missing" && f[0] != "error") {
		return "", "", "", false
	}
	return f[0], f[1], f[2], true
}
