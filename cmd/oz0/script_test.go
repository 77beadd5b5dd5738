package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/orchestrator-zero/oz0/internal/testbin"
)

// scriptCmds are the extra commands scripts may use; other _test files add theirs in init().
var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"tree":  cmdTree,
	"exits": cmdExits,
}

// scriptConds are the extra conditions scripts may use, [name:arg] by name; other _test files add
// theirs in init().
var scriptConds = map[string]func(arg string) (bool, error){}

// scriptCondition answers a condition of scriptConds.
func scriptCondition(cond string) (bool, error) {
	name, arg, _ := strings.Cut(cond, ":")
	if f, ok := scriptConds[name]; ok {
		return f(arg)
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

// TestMain lets the test binary stand in for the real oz0 binary inside scripts.
func TestMain(m *testing.M) {
	testscript.Main(testbin.M{M: m}, map[string]func(){
		"oz0": func() { os.Exit(run(sessionsArgs(os.Args[1:], os.Getenv(sessionsEnv)))) },
	})
}

// sessionsEnv set to "cold" runs the scripts as the platform's cold start does (make
// test-cold): each oz0 dev, oz0 plugin test and oz0 eval a script runs gets --cold, unless it
// says --warm or --cold itself. Scripts that are about sessions made ahead say [!cold].
const sessionsEnv = "OZ0_TEST_SESSIONS"

// sessionsArgs is args with --cold after the command that makes sessions, when sessions is
// "cold".
func sessionsArgs(args []string, sessions string) []string {
	if sessions != "cold" || slices.ContainsFunc(args, func(a string) bool {
		// --dev: oz0 eval's cases run on oz0 dev's node, whose sessions its own flags say.
		return a == "--cold" || a == "--warm" || a == "--dev" || strings.HasPrefix(a, "--cold=") || strings.HasPrefix(a, "--warm=") || strings.HasPrefix(a, "--dev=")
	}) {
		return args
	}
	at := 0
	switch {
	case len(args) >= 2 && args[0] == "eval" && (args[1] == "merge" || args[1] == "add"):
		return args // runs no case: merges results, or writes one from a job that ran
	case len(args) >= 1 && (args[0] == "dev" || args[0] == "eval"):
		at = 1
	case len(args) >= 2 && args[0] == "plugin" && args[1] == "test":
		at = 2
	default:
		return args
	}
	return slices.Concat(args[:at], []string{"--cold"}, args[at:])
}

func init() {
	scriptConds["cold"] = func(string) (bool, error) { return os.Getenv(sessionsEnv) == "cold", nil }
}

// TestScripts runs testdata/scripts/*.txtar against the oz0 binary, end to end.
func TestScripts(t *testing.T) {
	uv, err := findUV()
	if err != nil {
		t.Fatal(err)
	}
	uvBin, err := uvBinDir(t, uv)
	if err != nil {
		t.Fatal(err)
	}
	jaegerBin, err := jaegerBinDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The Node the Node templates support (scripts/node.env): where the machine's is older, the one
	// make test-deps installed, first on PATH, as make test puts it.
	nodeFirst, err := exec.Command("../../scripts/node-path.sh").Output()
	if err != nil {
		t.Fatal("scripts/node-path.sh:", err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "../../testdata/scripts",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       os.Getenv("OZ0_UPDATE_SCRIPTS") == "1",
		Cmds:                scriptCmds,
		Condition:           scriptCondition,
		Setup: func(env *testscript.Env) error {
			// Each script has a home of its own: testscript's /no-home, which root may create,
			// would carry what a script's programs keep there (oz0's sandbox memory, CrewAI's
			// storage, Go's telemetry settings) into the next. Beside $WORK, not in it: scripts
			// check what is left there.
			home := env.WorkDir + ".home"
			if err := os.Mkdir(home, 0o755); err != nil {
				return err
			}
			env.Setenv("HOME", home)
			// Python writes no bytecode into the scaffolded trees the scripts compare.
			env.Setenv("PYTHONDONTWRITEBYTECODE", "1")
			// The Python templates' scripts run uv (uv lock, uv sync, uv run) on the real frameworks.
			setupUV(env, uv, uvBin)
			// The OpenTelemetry scripts export to a real Jaeger (otlp_script_test.go).
			env.Setenv("PATH", jaegerBin+string(os.PathListSeparator)+string(nodeFirst)+env.Getenv("PATH"))
			// Scripts that build a Go program (a plugin hook) use this repository and the
			// caches the test itself was built with, offline.
			repo, err := filepath.Abs("../..")
			if err != nil {
				return err
			}
			env.Setenv("OZ0_REPO", repo)
			if err := offlineGo(env); err != nil {
				return err
			}
			env.Setenv("CGO_ENABLED", "0")
			env.Setenv(sessionsEnv, os.Getenv(sessionsEnv))
			env.Values[scriptT{}] = env.T() // for commands that skip a script (unprivileged)
			return nil
		},
	})
}

// offlineGo has a script's go commands use the caches this test was built with, offline.
func offlineGo(env *testscript.Env) error {
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			return err
		}
		env.Setenv(k, strings.TrimSpace(string(out)))
	}
	env.Setenv("GOPROXY", "off")
	env.Setenv("GOFLAGS", "-mod=readonly")
	return nil
}

// cmdTree prints every file under a directory (default: the current one), one slash path a
// line, sorted, so a script can compare a whole tree with cmp; "(no files)" when empty.
func cmdTree(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! tree")
	}
	root := ts.MkAbs(".")
	if len(args) == 1 {
		root = ts.MkAbs(args[0])
	}
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "__pycache__" || d.Name() == ".pytest_cache") {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			paths = append(paths, filepath.ToSlash(rel))
		}
		return nil
	})
	ts.Check(err)
	sort.Strings(paths)
	if len(paths) == 0 {
		paths = []string{"(no files)"}
	}
	ts.Stdout().Write([]byte(strings.Join(paths, "\n") + "\n"))
}

// cmdExits runs a program like exec does but asserts its exact exit status, which exec cannot:
// exits CODE PROG [ARGS...]. Its stdout and stderr are kept for stdout/stderr checks.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		got = exitErr.ExitCode()
	} else {
		ts.Check(err)
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

func TestSessionsArgs(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{"dev --ready-file f", "dev --cold --ready-file f"},
		{"plugin test --timeout 10m", "plugin test --cold --timeout 10m"},
		{"eval evals/", "eval --cold evals/"},
		{"dev --warm 2", "dev --warm 2"},
		{"plugin test --cold", "plugin test --cold"},
		{"eval --dev evals/", "eval --dev evals/"},
		{"plugin lint", "plugin lint"},
		{"run acme hi", "run acme hi"},
		{"eval merge a.json b.json", "eval merge a.json b.json"},
		{"eval add job_x --name double", "eval add job_x --name double"},
		{"dev --warm=2", "dev --warm=2"},
	} {
		if got := strings.Join(sessionsArgs(strings.Fields(c.args), "cold"), " "); got != c.want {
			t.Errorf("cold: %q gives %q; want %q", c.args, got, c.want)
		}
		if got := strings.Join(sessionsArgs(strings.Fields(c.args), ""), " "); got != c.args {
			t.Errorf("default: %q gives %q; want it as it is", c.args, got)
		}
	}
}
