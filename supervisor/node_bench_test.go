package supervisor_test

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/fakemodel"
	"github.com/orchestrator-zero/oz0/internal/nodedeps"
	"github.com/orchestrator-zero/oz0/scaffold"
	"github.com/orchestrator-zero/oz0/supervisor"
)

// BenchmarkFirstEventNode: start to first event of a Node harness, against the fake model API;
// the baseline is the same node started with os/exec running nothing. bare: the complete
// standard-library harness of docs/protocol.md (its say "Sorting the ticket. ", before its model
// call). strands-ts and adk-ts: the template on its real framework, Strands or ADK (its
// dependencies as make test-deps installs them): its first event is the tool call the fake model
// asks for, after Node has loaded the framework and made one streamed model call. Goal: 300 ms or
// less.
func BenchmarkFirstEventNode(b *testing.B) {
	node, err := exec.LookPath("node")
	if err != nil {
		b.Skip("node is not installed")
	}
	ts := httptest.NewServer(fakemodel.New(nil))
	defer ts.Close()
	baseline := func() error { return exec.Command(node, "-e", "").Run() }

	b.Run("bare", func(b *testing.B) {
		dir := b.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "prompts"), 0o755); err != nil {
			b.Fatal(err)
		}
		for name, data := range map[string]string{"harness.mjs": docsNodeHarness(b), "prompts/acme-triage.md": "You sort support tickets.\n"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		sp := templateSpec(b, dir, ts.URL)
		sp.Command = []string{"node", "harness.mjs"}
		firstEvent(b, sp, baseline)
	})
	for _, template := range []string{"strands-ts", "adk-ts"} {
		b.Run(template, func(b *testing.B) {
			firstEvent(b, nodeTemplateSpec(b, template, ts.URL), baseline)
		})
	}
}

// nodeTemplateSpec is a session of a Node template, its dependencies linked from the cache make
// test-deps fills, against the model API at url.
func nodeTemplateSpec(b *testing.B, template, url string) supervisor.Spec {
	modules, installed, err := nodedeps.NodeModules("../scaffold/templates", template)
	if err != nil {
		b.Fatal(err)
	}
	if !installed {
		b.Skip(nodedeps.Missing(template, modules))
	}
	parent := b.TempDir()
	os.Chmod(parent, 0o755) // a root node's sandboxed harness runs as nobody
	if _, err := scaffold.Create(scaffold.Options{Name: "acme-triage", Template: template, Description: "Sorts support tickets", Parent: parent}); err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(parent, "acme-triage")
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		b.Fatal(err)
	}
	sp := templateSpec(b, dir, url)
	sp.Command = []string{"node", "src/main.mjs"} // as the template's manifest says
	return sp
}

// docsNodeHarness is the complete Node harness of docs/protocol.md.
func docsNodeHarness(b *testing.B) string {
	doc, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		b.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "### A complete harness in Node")
	if !ok {
		b.Fatal("docs/protocol.md has no Node harness")
	}
	_, code, _ := strings.Cut(rest, "```js\n")
	code, _, _ = strings.Cut(code, "```")
	return code
}
