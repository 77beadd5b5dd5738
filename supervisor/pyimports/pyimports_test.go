package pyimports

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/orchestrator-zero/oz0/plugin"
	"github.com/orchestrator-zero/oz0/supervisor"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

// writeFiles writes files (path relative to dir → content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// runs is a module's top level that leaves a mark in dir when it runs, wherever that is.
func runs(dir, name string) string {
	return fmt.Sprintf("import os\ntry:\n    open(os.path.join(%q, %q), 'w').write('the plugin ran here')\nexcept OSError:\n    pass\n", dir, name)
}

// pythonPlugin is a plugin whose one harness runs `python3 -m triage` from src/, laid out as the
// templates are: its __main__ imports agent.py only once a session has started.
func pythonPlugin(t *testing.T, agent, pyproject string) *plugin.Plugin {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"src/triage/__init__.py": "",
		"src/triage/__main__.py": "import sys\n\n\ndef _run():\n    from .agent import run\n    return run()\n\n\nif __name__ == '__main__':\n    raise SystemExit('the main guard ran: the check must not run the harness')\n",
		"src/triage/agent.py":    agent,
	})
	if pyproject != "" {
		writeFiles(t, dir, map[string]string{"pyproject.toml": pyproject})
	}
	return &plugin.Plugin{Dir: dir, Manifest: plugin.Manifest{Harnesses: []plugin.Harness{
		{Name: "main", Command: []string{"python3", "-m", "triage"}},
	}}}
}

// withVenv gives the plugin a .venv (no pip: quick) holding the packages of files (path under
// site-packages → content), as uv sync installs dependencies.
func withVenv(t *testing.T, p *plugin.Plugin, files map[string]string) {
	t.Helper()
	if out, err := exec.Command("python3", "-m", "venv", "--without-pip", filepath.Join(p.Dir, ".venv")).CombinedOutput(); err != nil {
		t.Fatalf("python3 -m venv: %v: %s", err, out)
	}
	site, _ := filepath.Glob(filepath.Join(p.Dir, ".venv", "lib", "python3*", "site-packages"))
	if len(site) != 1 {
		t.Fatalf("the venv's site-packages: %q", site)
	}
	writeFiles(t, site[0], files)
}

func TestCheckFindsAFrameworkNotInstalled(t *testing.T) {
	p := pythonPlugin(t, "import json\nimport oz0_framework_not_installed.agents\n",
		"[project]\nname = \"triage\"\ndependencies = [\"requests>=2\", \"oz0_Framework-Not-Installed==1.2.0\"]\n")
	done, problem, err := Check(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if problem == nil {
		t.Fatalf("no problem found; read %v", done)
	}
	if problem.Harness != "main" || problem.Module != "oz0_framework_not_installed" || problem.At != "src/triage/agent.py:2" || problem.Err != "" {
		t.Errorf("problem = %+v", problem)
	}
	if problem.Listed != "oz0_Framework-Not-Installed==1.2.0" {
		t.Errorf("the dependency that provides it: %q", problem.Listed)
	}
	if msg := problem.Error(); !strings.Contains(msg, "harness main: src/triage/agent.py:2 imports oz0_framework_not_installed, which is not installed") ||
		!strings.Contains(msg, "pyproject.toml lists it as oz0_Framework-Not-Installed==1.2.0") {
		t.Errorf("Error() = %s", msg)
	}
	if !strings.Contains(problem.Mend(), "uv sync") {
		t.Errorf("Mend() = %s", problem.Mend())
	}
}

// A module that no dependency provides is added, not synced: the mend names the distribution.
func TestCheckSaysAnUnlistedModuleIsUnlisted(t *testing.T) {
	p := pythonPlugin(t, "import oz0_not_installed.client\n", "[project]\nname = \"triage\"\ndependencies = [\"requests>=2\"]\n")
	_, problem, err := Check(context.Background(), p, Options{})
	if err != nil || problem == nil {
		t.Fatalf("problem %v, err %v", problem, err)
	}
	if problem.Listed != "" || !strings.Contains(problem.Error(), "pyproject.toml lists no dependency that provides it") {
		t.Errorf("problem = %+v: %s", problem, problem.Error())
	}
	if want := "run `uv add oz0-not-installed` in " + p.Dir; !strings.HasPrefix(problem.Mend(), want) {
		t.Errorf("Mend() = %s, want %s…", problem.Mend(), want)
	}
	// Without a pyproject.toml, uv add has no project to add to.
	os.Remove(filepath.Join(p.Dir, "pyproject.toml"))
	if !strings.Contains(problem.Mend(), "uv init --bare") {
		t.Errorf("Mend() without pyproject.toml = %s", problem.Mend())
	}
}

func TestCheckReportsAFileThatDoesNotParse(t *testing.T) {
	p := pythonPlugin(t, "import json\n\ndef broken(:\n", "")
	_, problem, err := Check(context.Background(), p, Options{Background: true})
	if err != nil || problem == nil {
		t.Fatalf("problem %v, err %v", problem, err)
	}
	if !strings.HasPrefix(problem.Err, "SyntaxError: ") || problem.At != "src/triage/agent.py:3" || problem.Module != "triage.agent" {
		t.Errorf("problem = %+v", problem)
	}
	if !strings.HasPrefix(problem.Error(), "harness main: src/triage/agent.py:3 does not parse: SyntaxError: ") ||
		!strings.Contains(problem.Mend(), "python3 -m py_compile src/triage/agent.py") {
		t.Errorf("Error() = %s; Mend() = %s", problem.Error(), problem.Mend())
	}
}

// What the harness's modules import as they load is its dependencies; what runs only in a
// function, under a try that catches ImportError, or for the type checker is not required.
func TestCheckListsTheDependencies(t *testing.T) {
	p := pythonPlugin(t, `from __future__ import annotations
import os, json
from typing import TYPE_CHECKING
import oz0dep.client
from oz0dep import models
from oz0ns.tools import search
from . import wiring
from .wiring import agent_of

try:
    import oz0_optional_not_installed
except ImportError:
    oz0_optional_not_installed = None

if TYPE_CHECKING:
    from oz0_typing_not_installed import Shape


def run():
    import oz0_lazy_not_installed
`, "")
	writeFiles(t, p.Dir, map[string]string{
		"src/triage/wiring.py": "import oz0dep\n\n\ndef agent_of():\n    pass\n",
		// The harness's entry may be run by hand; its main guard is not the check's.
		"src/triage/tools.py": "import oz0_unreached_not_installed\n",
	})
	withVenv(t, p, map[string]string{
		"oz0dep/__init__.py":      "raise SystemExit('a dependency ran')\n",
		"oz0dep/client.py":        "",
		"oz0ns/tools/__init__.py": "", // a namespace package: oz0ns has no __init__
	})
	done, problem, err := Check(context.Background(), p, Options{})
	if err != nil || problem != nil {
		t.Fatalf("problem %v, err %v", problem, err)
	}
	if len(done) != 1 {
		t.Fatalf("done = %+v", done)
	}
	h := done[0]
	want := []Dependency{
		{"oz0dep", "src/triage/agent.py:5"},
		{"oz0dep.client", "src/triage/agent.py:4"},
		{"oz0ns.tools", "src/triage/agent.py:6"},
	}
	if !slices.Equal(h.Dependencies, want) {
		t.Errorf("Dependencies = %v, want %v", h.Dependencies, want)
	}
	if files := []string{"src/triage/__init__.py", "src/triage/__main__.py", "src/triage/agent.py", "src/triage/wiring.py"}; !slices.Equal(h.Files, files) {
		t.Errorf("Files = %q, want %q", h.Files, files)
	}
	if s := h.String(); !strings.HasPrefix(s, "main imports oz0dep, oz0ns (") {
		t.Errorf("String() = %s", s)
	}
}

// The plugin's own modules are followed to what they import, and what they import of the
// plugin's that is not there is said.
func TestCheckFollowsThePluginsOwnImports(t *testing.T) {
	p := pythonPlugin(t, "from .wiring import build\n", "")
	writeFiles(t, p.Dir, map[string]string{"src/triage/wiring.py": "import json\n\nimport oz0_framework_not_installed\n"})
	_, problem, err := Check(context.Background(), p, Options{})
	if err != nil || problem == nil || problem.At != "src/triage/wiring.py:3" || problem.Module != "oz0_framework_not_installed" {
		t.Fatalf("problem %+v, err %v", problem, err)
	}

	p = pythonPlugin(t, "from .gone import build\n", "")
	_, problem, err = Check(context.Background(), p, Options{})
	if err != nil || problem == nil || problem.Error() != "harness main: src/triage/agent.py:1 imports triage.gone, which is not in the plugin" {
		t.Fatalf("problem %v, err %v", problem, err)
	}
}

func TestCheckReadsAScriptHarness(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"harness.py": "import helpers\n\nif __name__ == '__main__':\n    import oz0_framework_not_installed\n",
		"helpers.py": "if __name__ == '__main__':\n    import oz0_not_reached\n",
	})
	p := &plugin.Plugin{Dir: dir, Manifest: plugin.Manifest{Harnesses: []plugin.Harness{{Name: "script", Command: []string{"python3", "harness.py"}}}}}
	_, problem, err := Check(context.Background(), p, Options{})
	if err != nil || problem == nil || problem.At != "harness.py:4" || problem.Module != "oz0_framework_not_installed" {
		t.Fatalf("problem %+v, err %v", problem, err)
	}
	p.Manifest.Harnesses[0].Command = []string{"python3", "-m", "nowhere"}
	_, problem, err = Check(context.Background(), p, Options{})
	if err != nil || problem == nil || !strings.HasPrefix(problem.Error(), "harness script: its command runs nowhere, which ") {
		t.Fatalf("problem %v, err %v", problem, err)
	}
}

func TestHarnessEntry(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		argv []string
		want []string
	}{
		{[]string{"python3", "-m", "triage"}, []string{"-m", "triage"}},
		{[]string{"python", "-u", "-mtriage.cli"}, []string{"-m", "triage.cli"}},
		{[]string{"python3", "harness.py"}, []string{filepath.Join(dir, "harness.py")}},
		{[]string{"python3", "/abs/harness.py"}, []string{"/abs/harness.py"}},
		{[]string{"python3", "-c", "print(1)"}, nil},
	} {
		if got := harnessEntry(dir, tc.argv); !slices.Equal(got, tc.want) {
			t.Errorf("harnessEntry(%q) = %q, want %q", tc.argv, got, tc.want)
		}
	}
}

// Nothing of the plugin's runs, in any tier: neither its modules (the harness's, those it
// imports of its own, a sitecustomize on its PYTHONPATH) nor its dependencies.
func TestCheckRunsNothingOfThePlugin(t *testing.T) {
	if err := sandbox.Check(sandbox.Standard); err != nil {
		t.Fatalf("tier standard does not work here (make test needs it): %v", err)
	}
	outside := t.TempDir()
	for _, tier := range []sandbox.Tier{sandbox.None, sandbox.Standard} {
		p := pythonPlugin(t, runs(outside, "agent-"+string(tier))+"import oz0dep\n", "")
		writeFiles(t, p.Dir, map[string]string{
			"src/triage/__init__.py": runs(outside, "init-"+string(tier)),
			"src/sitecustomize.py":   runs(outside, "sitecustomize-"+string(tier)),
		})
		withVenv(t, p, map[string]string{"oz0dep/__init__.py": runs(outside, "dep-"+string(tier))})
		done, problem, err := Check(context.Background(), p, Options{Sandbox: supervisor.Sandbox{Tier: tier}, TempDir: t.TempDir()})
		if err != nil || problem != nil {
			t.Fatalf("tier %s: problem %v, err %v", tier, problem, err)
		}
		if len(done) != 1 || len(done[0].Dependencies) != 1 {
			t.Errorf("tier %s: done = %+v", tier, done)
		}
	}
	if ran, _ := os.ReadDir(outside); len(ran) != 0 {
		t.Errorf("the plugin's code ran: %v", ran)
	}
}

// A harness whose check cannot end with a report (its interpreter fails) is an error that says
// why, not a problem of a module.
func TestCheckSaysWhyItHasNoReport(t *testing.T) {
	p := pythonPlugin(t, "", "")
	writeFiles(t, p.Dir, map[string]string{".venv/bin/python": "#!/bin/sh\necho about to go >&2\nexit 3\n"})
	if err := os.Chmod(filepath.Join(p.Dir, ".venv/bin/python"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, problem, err := Check(context.Background(), p, Options{})
	if err == nil || problem != nil {
		t.Fatalf("problem %v, err %v; want an error", problem, err)
	}
	if !strings.Contains(err.Error(), "harness main: cannot check its imports") || !strings.Contains(err.Error(), "about to go") {
		t.Errorf("err = %v", err)
	}
}

// A pipe where a module would be is no module (Python's finder, which the check asks, skips it:
// the read would wait for ever), and a module too large to be written by hand is not read: what
// it imports goes unseen, and it is counted as unread.
func TestCheckSkipsWhatIsNoModule(t *testing.T) {
	p := pythonPlugin(t, "from . import piped, huge\n", "")
	if err := syscall.Mkfifo(filepath.Join(p.Dir, "src/triage/piped.py"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, p.Dir, map[string]string{"src/triage/huge.py": "import oz0_not_installed\n" + strings.Repeat("#\n", 1<<20)})
	done, problem, err := Check(context.Background(), p, Options{})
	if err != nil || problem != nil || len(done) != 1 || done[0].Unread != 1 || slices.Contains(done[0].Files, "src/triage/huge.py") {
		t.Fatalf("done %+v, problem %v, err %v", done, problem, err)
	}
	if s := done[0].String(); !strings.Contains(s, "(and 1 of its files were not read: over 2 MiB, or past the 500th)") {
		t.Errorf("String() = %s", s)
	}
}
