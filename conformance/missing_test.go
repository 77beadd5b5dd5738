package conformance_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/conformance"
	"github.com/orchestrator-zero/oz0/internal/testbin"
)

// A harness whose dependencies are not installed passes no check: one failure ahead of the
// scenarios says what is missing and the one thing to do, install it as its language does; the
// scenarios are not run (none passes by default, none gives the hint of a harness that ran).
func TestHarnessMissingAModuleIsToldToInstallIt(t *testing.T) {
	python := testbin.Python(t)
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed:", err)
	}
	files := map[string]string{
		"oz0-plugin.yaml": "apiVersion: oz0/v1\nname: deps\nversion: 0.1.0\nruntime: binary\nharnesses:\n" +
			"  - name: py\n    command: [\"" + python + "\", \"harness.py\"]\n    permissions: true\n    tools: [notify_team]\n    formats: [anthropic-messages]\n" +
			"  - name: js\n    command: [\"node\", \"harness.mjs\"]\n    permissions: true\n    tools: [notify_team]\n    formats: [anthropic-messages]\nagents: [agents/]\n",
		"agents/py.yaml": "name: py\nruntime: harness:py\ninstructions: prompts/p.md\n",
		"agents/js.yaml": "name: js\nruntime: harness:js\ninstructions: prompts/p.md\n",
		"prompts/p.md":   "Sort the support ticket.\n",
		// Both list what their harness imports: installing it is the mend (one that no
		// dependency provides is added instead: supervisor's TestMissingMend).
		"pyproject.toml": "[project]\nname = \"deps\"\ndependencies = [\"oz0-framework-not-installed==1.0\"]\n",
		"package.json":   `{"name": "deps", "dependencies": {"@oz0-test/not-installed": "1.0.0"}}`,
		// As the Python templates' harness does: the agent's import fails once the request is
		// read, and the session ends with an error line naming it.
		"harness.py": `import json, sys, traceback
sys.stdin.readline()
try:
    import oz0_framework_not_installed  # noqa: F401
except ImportError as err:
    traceback.print_exc()
    print(json.dumps({"type": "error", "message": f"{type(err).__name__}: {err}"}), flush=True)
    sys.exit(1)
`,
		// Node dies on a static import before any line: only its stderr says why.
		"harness.mjs": "import '@oz0-test/not-installed';\n",
	}
	rep := run(t, files, conformance.Options{})
	if p, f, na := rep.Counts(); p != 0 || f != 2 || na != 0 || rep.NotRun() != 14 {
		t.Errorf("counts: %d passed, %d failed, %d not applicable, %d not run; want 0, 2, 0, 14", p, f, na, rep.NotRun())
	}
	for h, want := range map[string][2]string{
		"py": {"ModuleNotFoundError: No module named 'oz0_framework_not_installed'", "uv sync"},
		"js": {"Cannot find package '@oz0-test/not-installed'", "npm ci"},
	} {
		var load *conformance.Check
		for _, c := range rep.Checks {
			if c.Harness != h {
				continue
			}
			if c.ID == conformance.LoadCheck {
				load = &c
				continue
			}
			if load == nil || !c.NotRun || c.Pass {
				t.Errorf("%s %s: ran or passed after the load failure (or before it): %+v", h, c.ID, c)
			}
		}
		if load == nil {
			t.Fatalf("%s: no %s check", h, conformance.LoadCheck)
		}
		if load.Pass || !strings.Contains(load.Got, want[0]) {
			t.Errorf("%s: got %q, want it to say %q", h, load.Got, want[0])
		}
		if !strings.Contains(load.Hint, want[1]) || strings.Contains(load.Hint, "SIGTERM") || strings.Contains(load.Hint, "--input") {
			t.Errorf("%s: hint %q, want only how to install: %s", h, load.Hint, want[1])
		}
		if !strings.Contains(load.Output, want[0]) {
			t.Errorf("%s: output %q, want what it printed", h, load.Output)
		}
	}
}
