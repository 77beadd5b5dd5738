package pyimports

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// pythonPlugin is a plugin whose one harness runs `python3 -m triage` from src/, with agent.py
// beside its __main__ (as the templates are laid out).
func pythonPlugin(t *testing.T, agent, pyproject string) *plugin.Plugin {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"src/triage/__init__.py": "",
		"src/triage/__main__.py": "raise SystemExit('the main guard ran: the check must not run the harness')\n",
		"src/triage/agent.py":    agent,
	})
	if pyproject != "" {
		writeFiles(t, dir, map[string]string{"pyproject.toml": pyproject})
	}
	return &plugin.Plugin{Dir: dir, Manifest: plugin.Manifest{Harnesses: []plugin.Harness{
		{Name: "main", Command: []string{"python3", "-m", "triage"}},
	}}}
}

func TestCheckFindsAFrameworkNotInstalled(t *testing.T) {
	p := pythonPlugin(t, "import oz0_framework_not_installed.agents\n",
		"[project]\nname = \"triage\"\ndependencies = [\"requests>=2\", \"oz0_Framework-Not-Installed==1.2.0\"]\n")
	done, problem, err := Check(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if problem == nil {
		t.Fatalf("no problem found; imported %v", done)
	}
	if problem.Harness != "main" || problem.Module != "triage.agent" || problem.Missing != "oz0_framework_not_installed" || problem.Err != "" {
		t.Errorf("problem = %+v", problem)
	}
	if problem.Listed != "oz0_Framework-Not-Installed==1.2.0" {
		t.Errorf("the dependency that provides it: %q", problem.Listed)
	}
	if msg := problem.Error(); !strings.Contains(msg, "imports oz0_framework_not_installed, which is not installed") ||
		!strings.Contains(msg, "pyproject.toml lists it as oz0_Framework-Not-Installed==1.2.0") {
		t.Errorf("Error() = %s", msg)
	}
	if !strings.Contains(problem.Mend(), "uv sync") {
		t.Errorf("Mend() = %s", problem.Mend())
	}
}

func TestCheckSaysAnUnlistedModuleIsUnlisted(t *testing.T) {
	p := pythonPlugin(t, "import oz0_framework_not_installed\n", "")
	_, problem, err := Check(context.Background(), p, Options{})
	if err != nil || problem == nil {
		t.Fatalf("problem %v, err %v", problem, err)
	}
	if problem.Listed != "" || !strings.Contains(problem.Error(), "pyproject.toml lists no dependency that provides it") {
		t.Errorf("problem = %+v: %s", problem, problem.Error())
	}
}

func TestCheckReportsAModuleThatFailsOtherwise(t *testing.T) {
	p := pythonPlugin(t, "def broken(:\n", "")
	_, problem, err := Check(context.Background(), p, Options{Background: true})
	if err != nil || problem == nil {
		t.Fatalf("problem %v, err %v", problem, err)
	}
	if problem.Missing != "" || !strings.HasPrefix(problem.Err, "SyntaxError: ") || problem.Module != "triage.agent" {
		t.Errorf("problem = %+v", problem)
	}
	if !strings.Contains(problem.Mend(), "fix what the traceback says") {
		t.Errorf("Mend() = %s", problem.Mend())
	}
}

func TestCheckImportsWhatInstalls(t *testing.T) {
	p := pythonPlugin(t, "import json\nprint('a module may print')\n", "")
	p.Manifest.Harnesses = append(p.Manifest.Harnesses,
		plugin.Harness{Name: "node", Command: []string{"node", "main.js"}}, // not Python: not checked
	)
	done, problem, err := Check(context.Background(), p, Options{})
	if err != nil || problem != nil {
		t.Fatalf("problem %v, err %v", problem, err)
	}
	if len(done) != 1 || !strings.HasPrefix(done[0], "triage, triage.agent (") {
		t.Errorf("done = %q", done)
	}
}

func TestHarnessModules(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"src/triage/__main__.py": "", "src/triage/__init__.py": "", "src/triage/agent.py": "", "src/triage/tools.py": "",
		"flat/__main__.py": "", "flat/run.py": "",
	})
	for _, tc := range []struct {
		argv []string
		want []string
	}{
		{[]string{"python3", "-m", "triage"}, []string{"triage", "triage.agent", "triage.tools"}},
		{[]string{"python", "-m", "flat"}, []string{"flat", "flat.run"}},
		{[]string{"python3", "harness.py"}, []string{filepath.Join(dir, "harness.py")}},
		{[]string{"python3", "/abs/harness.py"}, []string{"/abs/harness.py"}},
		{[]string{"python3", "-c", "print(1)"}, nil},
	} {
		if got := harnessModules(dir, tc.argv); !slices.Equal(got, tc.want) {
			t.Errorf("harnessModules(%q) = %q, want %q", tc.argv, got, tc.want)
		}
	}
}

// The check imports the plugin's own code: in the sandbox of the tier it is given, as the
// plugin's sessions run, not as the user. A module's top level that writes outside what a
// session sees writes nothing on the host in tier standard; in tier none it does.
func TestCheckRunsInTheSandbox(t *testing.T) {
	if err := sandbox.Check(sandbox.Standard); err != nil {
		t.Fatalf("tier standard does not work here (make test needs it): %v", err)
	}
	outside := t.TempDir()
	for _, tc := range []struct {
		tier    sandbox.Tier
		written bool
	}{{sandbox.None, true}, {sandbox.Standard, false}} {
		marker := filepath.Join(outside, string(tc.tier))
		p := pythonPlugin(t, fmt.Sprintf("try:\n    open(%q, 'w').write('the plugin ran here')\nexcept OSError:\n    pass\n", marker), "")
		_, problem, err := Check(context.Background(), p, Options{Sandbox: supervisor.Sandbox{Tier: tc.tier}, TempDir: t.TempDir()})
		if err != nil || problem != nil {
			t.Fatalf("tier %s: problem %v, err %v", tc.tier, problem, err)
		}
		if _, err := os.Stat(marker); (err == nil) != tc.written {
			t.Errorf("tier %s: the module's top level wrote on the host: %v, want %v", tc.tier, err == nil, tc.written)
		}
	}
}

// A harness whose check cannot end with a report (its interpreter killed by the module it
// imports) is an error that says why, not a problem of a module.
func TestCheckSaysWhyItHasNoReport(t *testing.T) {
	p := pythonPlugin(t, "import os, sys\nsys.stderr.write('about to go\\n')\nos._exit(3)\n", "")
	_, problem, err := Check(context.Background(), p, Options{})
	if err == nil || problem != nil {
		t.Fatalf("problem %v, err %v; want an error", problem, err)
	}
	if !strings.Contains(err.Error(), "harness main: cannot import its modules") || !strings.Contains(err.Error(), "about to go") {
		t.Errorf("err = %v", err)
	}
}

func TestDependencies(t *testing.T) {
	dir := t.TempDir()
	if got := Dependencies(dir); got != nil {
		t.Errorf("no pyproject.toml: %q", got)
	}
	writeFiles(t, dir, map[string]string{"pyproject.toml": "[project\nbroken"})
	if got := Dependencies(dir); got != nil {
		t.Errorf("a broken pyproject.toml: %q", got)
	}
	writeFiles(t, dir, map[string]string{"pyproject.toml": "[project]\ndependencies = [\"google-adk==1.2.0\"]\n"})
	if got := Dependencies(dir); !slices.Equal(got, []string{"google-adk==1.2.0"}) {
		t.Errorf("Dependencies = %q", got)
	}
	if got := listedAs(dir, "google.adk.agents"); got != "google-adk==1.2.0" {
		t.Errorf("listedAs(google.adk.agents) = %q", got)
	}
}
