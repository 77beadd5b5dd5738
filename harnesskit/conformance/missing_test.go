package conformance_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/harnesskit/conformance"
	"github.com/orchestrator-zero/oz0/internal/testbin"
)

// A harness whose dependencies are not installed fails every check with the one thing to do:
// install them, as its language does. No check passes by default (unlisted-tool, max-steps), and
// none gives the hint of a harness that ran (SIGTERM, --input).
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
	for h, want := range map[string][2]string{
		"py": {"ModuleNotFoundError: No module named 'oz0_framework_not_installed'", "uv sync"},
		"js": {"Cannot find package '@oz0-test/not-installed'", "npm ci"},
	} {
		for id, c := range checks(t, rep, h) {
			if c.Pass || c.NotApplicable {
				t.Errorf("%s %s passed: %s", h, id, c.Got)
			}
			if !strings.Contains(c.Got, want[0]) {
				t.Errorf("%s %s: got %q, want it to say %q", h, id, c.Got, want[0])
			}
			if !strings.Contains(c.Hint, want[1]) || strings.Contains(c.Hint, "SIGTERM") || strings.Contains(c.Hint, "--input") {
				t.Errorf("%s %s: hint %q, want only how to install: %s", h, id, c.Hint, want[1])
			}
		}
	}
}
