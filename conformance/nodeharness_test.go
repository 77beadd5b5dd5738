package conformance_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/conformance"
)

// The complete Node harness docs/protocol.md shows passes every check, run as its manifest says:
// `node harness.mjs`, the script resolved against the plugin.
func TestNodeHarnessOfTheDocsPassesEveryCheck(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed:", err)
	}
	doc, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "### A complete harness in Node")
	if !ok {
		t.Fatal("docs/protocol.md has no Node harness")
	}
	_, code, _ := strings.Cut(rest, "```js\n")
	code, _, _ = strings.Cut(code, "```")
	files := map[string]string{
		"harness.mjs": code,
		"oz0-plugin.yaml": "apiVersion: oz0/v1\nname: shop\nversion: 0.1.0\nruntime: node\nharnesses:\n  - name: shop\n" +
			"    command: [\"node\", \"harness.mjs\"]\n    permissions: true\n    tools: [notify_team]\n" +
			"    formats: [anthropic-messages, openai-chat]\nagents: [agents/]\n",
		"agents/shop.yaml": "name: shop\nruntime: harness:shop\ninstructions: prompts/p.md\nlimits: {max_steps: 10, timeout: 1m}\n",
		"prompts/p.md":     "You sort support tickets.\n",
	}
	rep := run(t, files, conformance.Options{})
	wantChecks(t, rep, "shop", nil)
	if p, f, na := rep.Counts(); p != 7 || f != 0 || na != 0 {
		t.Errorf("%d passed, %d failed, %d n/a", p, f, na)
	}
}
