package supervisor

import (
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/harnesskit"
)

func TestScriptArg(t *testing.T) {
	for cmd, want := range map[string]int{
		"node harness.mjs":                          1,
		"node --enable-source-maps harness.mjs a b": 2,
		"node -r ./setup.cjs harness.mjs":           3,
		"node -e console.log(1)":                    -1,
		"deno run --allow-net main.ts":              3,
		"deno task start":                           -1,
		"bun run index.ts":                          2,
		"bun index.ts":                              1,
		"python agent.py":                           1,
		"python3.12 -u agent.py":                    2,
		"python -m acme_triage":                     -1,
		"python -c pass":                            -1,
		"bash run.sh":                               1,
		"bash -c run":                               -1,
		"./bin/agent --flag":                        -1,
		"my-agent serve":                            -1,
		"node":                                      -1,
		"node -- harness.mjs":                       2,
	} {
		if got := ScriptArg(strings.Fields(cmd)); got != want {
			t.Errorf("%s: %d, want %d", cmd, got, want)
		}
	}
}

func TestPythonModule(t *testing.T) {
	for cmd, want := range map[string]string{
		"python -m acme_triage":           "acme_triage",
		"python3 -u -W ignore -m a.b":     "a.b",
		"python3.11 -macme":               "acme",
		"python agent.py -m x":            "",
		"/usr/bin/python3 -m acme_triage": "acme_triage",
		"node -m x":                       "",
	} {
		if got, _ := PythonModule(strings.Fields(cmd)); got != want {
			t.Errorf("%s: %q, want %q", cmd, got, want)
		}
	}
}

func TestResolveCommandResolvesAgainstThePlugin(t *testing.T) {
	plugin := t.TempDir()
	argv, _, err := resolveCommand([]string{"sh", "run.sh", "run.sh"}, plugin, t.TempDir(), Env{}, &harnesskit.SessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if argv[1] != plugin+"/run.sh" || argv[2] != "run.sh" || !strings.HasSuffix(argv[0], "/sh") {
		t.Errorf("argv %q: the script resolves against the plugin, other arguments stay", argv)
	}
}
