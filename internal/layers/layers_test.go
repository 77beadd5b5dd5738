package layers

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/orchestrator-zero/oz0/"

// floors is the drawing of docs/development.md: a folder may import folders on lower floors only.
var floors = map[string]int{
	"cmd":         8,
	"devserver":   7,
	"doctor":      6,
	"eval":        6,
	"conformance": 5,
	"lint":        5,
	"supervisor":  4,
	"fakemodel":   4,
	"scaffold":    4,
	"gateway":     3,
	"telemetry":   3,
	"schemas":     3,
	"harnesskit":  2,
	"diag":        2,
	"api":         2,
	"plugin":      1,
	"internal":    1,
	"examples":    9, // an example plugin hook: above everything, as a plugin author's code is
	"third_party": 0,
}

// imports lists, for each package of the module matched by patterns, the module's packages it
// imports (tests left out: a test may reach across floors).
func imports(t *testing.T, args ...string) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		var own []string
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module) {
				own = append(own, strings.TrimPrefix(imp, module))
			}
		}
		m[strings.TrimPrefix(f[0], module)] = own
	}
	return m
}

func folder(pkg string) string { return strings.Split(pkg, "/")[0] }

func TestImportsRunDown(t *testing.T) {
	for pkg, imps := range imports(t, "../../...") {
		from, ok := floors[folder(pkg)]
		if !ok {
			t.Errorf("%s is in a folder docs/development.md does not draw: give it a floor there and here", pkg)
			continue
		}
		for _, imp := range imps {
			if folder(imp) == folder(pkg) {
				continue
			}
			if to := floors[folder(imp)]; to >= from {
				t.Errorf("%s (floor %d) imports %s (floor %d): imports run down", pkg, from, imp, to)
			}
		}
	}
}

// A plugin author's harness or hook binary links the protocol, not the node.
func TestSDKsLinkNoNode(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../../harnesskit/harness", "../../harnesskit/hook").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if p, ok := strings.CutPrefix(dep, module); ok && !strings.HasPrefix(p, "harnesskit") && !strings.HasPrefix(p, "internal/") {
			t.Errorf("the Go SDKs link %s", p)
		}
	}
}

// The CLI starts the dev server and reads files through its loaders; the rest of the server it
// reaches through the API.
func TestCLISeesNoServerInsides(t *testing.T) {
	allowed := map[string]bool{"devserver": true, "devserver/tenanthooks": true}
	for pkg, imps := range imports(t, "../../cmd/...") {
		for _, imp := range imps {
			if folder(imp) == "devserver" && !allowed[imp] {
				t.Errorf("%s imports %s: the CLI reaches the dev server through api/client", pkg, imp)
			}
		}
	}
}
