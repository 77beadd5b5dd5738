//go:build linux

package supervisor_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/internal/testbin"
	"github.com/orchestrator-zero/oz0/supervisor"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

// whoAmI is a harness that answers with the interpreter that runs it.
const whoAmI = `import json, sys
sys.stdin.readline()
print(json.dumps({"type": "result", "output": sys.executable}), flush=True)
`

// fakeShim writes, in a directory of its own, a python3 that is a script as pyenv's shim is: it
// notes each time it runs in asked, then runs body (a shell command line; "$@" are its arguments).
// It returns the directory, for the session's PATH.
func fakeShim(t *testing.T, asked, body string) string {
	t.Helper()
	dir := t.TempDir()
	script := fmt.Sprintf("#!/bin/sh\necho \"$$\" >> %s\n%s\n", asked, body)
	if err := os.WriteFile(filepath.Join(dir, "python3"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// timesAsked is how many times the fake shim ran.
func timesAsked(t *testing.T, asked string) int {
	t.Helper()
	b, err := os.ReadFile(asked)
	if os.IsNotExist(err) {
		return 0
	} else if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// interpSpec is a session of the whoAmI harness run as `python3 agent.py`, python3 found on a
// PATH that has shimDir first, in the standard sandbox.
func interpSpec(t *testing.T, shimDir string) supervisor.Spec {
	sp := spec(t, "")
	sp.Command = []string{"python3", "agent.py"}
	os.Chmod(sp.PluginDir, 0o755)
	testbin.WriteFiles(t, sp.PluginDir, map[string]string{"agent.py": whoAmI})
	os.Chmod(filepath.Join(sp.PluginDir, "agent.py"), 0o644)
	sp.Env.PATH = shimDir + ":" + os.Getenv("PATH")
	sp.Sandbox = supervisor.Sandbox{Tier: sandbox.Standard}
	return sp
}

// startAll starts n sessions of sp at once and returns each one's end, or its error from Start.
func startAll(t *testing.T, sp supervisor.Spec, n int) ([]harnesskit.End, []error) {
	t.Helper()
	ends, errs := make([]harnesskit.End, n), make([]error, n)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-gate
			s, err := supervisor.Start(t.Context(), sp)
			if err != nil {
				errs[i] = err
				return
			}
			ends[i] = s.Wait()
		})
	}
	close(gate)
	wg.Wait()
	return ends, errs
}

// A hundred sessions start together while the interpreter question takes seconds (the machine's
// load made pyenv's shim miss its deadline, and every session then ran the shim, which cannot
// work in the sandbox): the question is asked once, and every session runs the interpreter.
func TestInterpreterAskedOnceByAHerd(t *testing.T) {
	requireTier(t, sandbox.Standard)
	python := testbin.Python(t)
	asked := filepath.Join(t.TempDir(), "asked")
	shim := fakeShim(t, asked, fmt.Sprintf("sleep 2\nexec %s \"$@\"", python))
	sp := interpSpec(t, shim)
	sp.Limits.Timeout = 2 * time.Minute

	ends, errs := startAll(t, sp, 100)
	for i := range ends {
		if errs[i] != nil {
			t.Fatalf("session %d: %v", i, errs[i])
		}
		wantStatus(t, ends[i], harnesskit.Completed)
		if got := outputString(t, ends[i]); got != python {
			t.Fatalf("session %d ran %s, want the interpreter %s", i, got, python)
		}
	}
	if n := timesAsked(t, asked); n != 1 {
		t.Errorf("the shim ran %d times, want once (the question, asked for all)", n)
	}
}

// A wrapper that cannot say which interpreter it runs fails every session at once, saying what to
// do, and is asked once for all of them; asked ahead (a plugin's reload), it is asked again.
func TestInterpreterFailureKept(t *testing.T) {
	requireTier(t, sandbox.Standard)
	asked := filepath.Join(t.TempDir(), "asked")
	shim := fakeShim(t, asked, "echo \"pyenv: cannot find $HOME/.pyenv/libexec/pyenv\" >&2\nexit 127")
	sp := interpSpec(t, shim)

	_, errs := startAll(t, sp, 20)
	for i, err := range errs {
		if err == nil {
			t.Fatalf("session %d started; want it refused", i)
		}
		for _, want := range []string{filepath.Join(shim, "python3") + " is a script", "exit status 127: pyenv: cannot find", "set the harness command to an interpreter's path, or create the plugin's .venv (uv sync)"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("session %d: %v\ndoes not say %q", i, err, want)
			}
		}
	}
	if n := timesAsked(t, asked); n != 1 {
		t.Errorf("the shim ran %d times, want once", n)
	}

	supervisor.AskAhead(sp)
	if _, err := supervisor.Start(t.Context(), sp); err == nil {
		t.Fatal("the session started; want it refused")
	}
	if n := timesAsked(t, asked); n != 2 {
		t.Errorf("the shim ran %d times, want twice: asked again ahead, and the session took that answer", n)
	}
}

// Asked ahead (oz0 dev's start), the answer is the sessions', in every tier: tier none runs the
// interpreter too (the wrapper would cost each session its own start), and a sandboxed tier
// asks nothing again.
func TestInterpreterAskedAhead(t *testing.T) {
	requireTier(t, sandbox.Standard)
	python := testbin.Python(t)
	asked := filepath.Join(t.TempDir(), "asked")
	shim := fakeShim(t, asked, fmt.Sprintf("exec %s \"$@\"", python))
	sp := interpSpec(t, shim)

	none := sp
	none.Sandbox.Tier = sandbox.None
	supervisor.AskAhead(none)
	for _, spec := range []supervisor.Spec{none, sp, sp} {
		end, _ := run(t, spec)
		wantStatus(t, end, harnesskit.Completed)
		var got string
		json.Unmarshal(end.Output, &got)
		if got != python {
			t.Errorf("tier %s: the session ran %s, want %s", spec.Sandbox.Tier, got, python)
		}
	}
	if n := timesAsked(t, asked); n != 1 {
		t.Errorf("the shim ran %d times, want once: the question asked ahead", n)
	}
}
