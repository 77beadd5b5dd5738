package doctor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/internal/testbin"
	"github.com/orchestrator-zero/oz0/lint"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

func noEnv(string) string { return "" }

func TestPythonMissingFailsWithAMend(t *testing.T) {
	r := checkPython(context.Background(), Env{LookPath: func(string) (string, error) { return "", errors.New("not found") }})
	if r.Level != Fail || !strings.Contains(r.Mend, "install Python 3.10") {
		t.Errorf("got %+v", r)
	}
}

func TestPythonTooOld(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "python3")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho Python 3.8.10\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := checkPython(context.Background(), Env{LookPath: func(string) (string, error) { return fake, nil }})
	if r.Level != Fail || !strings.Contains(r.Detail, "3.8.10") {
		t.Errorf("got %+v", r)
	}
}

func TestUVMissingIsAWarning(t *testing.T) {
	r := checkUV(context.Background(), Env{LookPath: func(string) (string, error) { return "", errors.New("not found") }})
	if r.Level != Warn || r.Mend == "" {
		t.Errorf("got %+v", r)
	}
}

func TestDevServer(t *testing.T) {
	// Without a server, doctor's mend is the one every command's error gives.
	if r := checkDevServer(context.Background(), Env{Getenv: noEnv, PluginDir: t.TempDir()}); r.Level != Warn || r.Mend != client.StartMend {
		t.Errorf("unset: %+v, want the mend %q", r, client.StartMend)
	}
	dead := func(string) string { return "http://127.0.0.1:1#oz0t_abc" }
	if r := checkDevServer(context.Background(), Env{Getenv: dead}); r.Level != Fail || !strings.Contains(r.Detail, "no dev server") {
		t.Errorf("dead: %+v", r)
	}
	bad := func(string) string { return "nonsense" }
	if r := checkDevServer(context.Background(), Env{Getenv: bad}); r.Level != Fail {
		t.Errorf("bad: %+v", r)
	}
}

func TestVenvAndPlugin(t *testing.T) {
	dir := t.TempDir()
	if r := checkPluginIn(dir); r.Level != Warn || !strings.Contains(r.Mend, "oz0 plugin new") {
		t.Errorf("no manifest: %+v", r)
	}
	// No plugin here at all: the venv check does not call it "not a Python plugin".
	os.WriteFile(filepath.Join(dir, "pyproject.toml"), []byte("[project]\nname='x'\n"), 0o644)
	if r := checkVenv(context.Background(), Env{PluginDir: dir}); r.Level != OK || r.Detail != "no plugin in "+dir+", so no venv to check" {
		t.Errorf("no plugin: %+v", r)
	}
	os.Remove(filepath.Join(dir, "pyproject.toml"))
	os.WriteFile(filepath.Join(dir, "oz0-plugin.yaml"), []byte("apiVersion: oz0/v1\n"), 0o644)
	if r := checkVenv(context.Background(), Env{PluginDir: dir}); r.Level != OK || !strings.Contains(r.Detail, "not a Python plugin") {
		t.Errorf("no pyproject: %+v", r)
	}
	// No dependencies: no .venv is needed, nothing to warn about.
	os.WriteFile(filepath.Join(dir, "pyproject.toml"), []byte("[project]\nname='x'\ndependencies = []\n"), 0o644)
	if r := checkVenv(context.Background(), Env{PluginDir: dir}); r.Level != OK || !strings.Contains(r.Detail, "none needed") {
		t.Errorf("no venv, no dependencies: %+v", r)
	}
	os.WriteFile(filepath.Join(dir, "pyproject.toml"), []byte("[project]\nname='x'\ndependencies = ['google-adk==2.13.0']\n"), 0o644)
	if r := checkVenv(context.Background(), Env{PluginDir: dir}); r.Level != Warn || !strings.Contains(r.Mend, "uv sync") {
		t.Errorf("no venv: %+v", r)
	}
	// A bin/python that is a script is not run (the .venv is the plugin's: it could hold any
	// program) and is no interpreter.
	ran := filepath.Join(t.TempDir(), "ran")
	os.MkdirAll(filepath.Join(dir, ".venv", "bin"), 0o755)
	os.WriteFile(filepath.Join(dir, ".venv", "bin", "python"), []byte("#!/bin/sh\ntouch "+ran+"\nexit 1\n"), 0o755)
	if r := checkVenv(context.Background(), Env{PluginDir: dir}); r.Level != Fail || !strings.Contains(r.Mend, "remove .venv") || !strings.Contains(r.Detail, "not an interpreter's binary") {
		t.Errorf("broken venv: %+v", r)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the plugin's .venv/bin/python ran")
	}
	// An interpreter (a link to one, as uv makes it): its version is pyvenv.cfg's.
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output() // past a shim
	if err != nil {
		t.Fatal(err)
	}
	python3 := strings.TrimSpace(string(out))
	os.Remove(filepath.Join(dir, ".venv", "bin", "python"))
	os.Symlink(python3, filepath.Join(dir, ".venv", "bin", "python"))
	if r := checkVenv(context.Background(), Env{PluginDir: dir}); r.Level != Fail || !strings.Contains(r.Detail, "no pyvenv.cfg") {
		t.Errorf("no pyvenv.cfg: %+v", r)
	}
	for _, tc := range []struct {
		cfg, detail string
		level       Level
	}{
		{"home = /usr/bin\nimplementation = CPython\nversion_info = 3.12.4\n", ".venv with Python 3.12.4", OK},
		{"home = /usr/bin\nversion = 3.11.2\nexecutable = /usr/bin/python3.11\n", ".venv with Python 3.11.2", OK},
		{"version_info = 3.8.10\n", "the plugin's .venv has Python 3.8.10", Fail},
		{"version = three\n", "not a Python version", Fail},
	} {
		os.WriteFile(filepath.Join(dir, ".venv", "pyvenv.cfg"), []byte(tc.cfg), 0o644)
		if r := checkVenv(context.Background(), Env{PluginDir: dir}); r.Level != tc.level || !strings.Contains(r.Detail, tc.detail) {
			t.Errorf("pyvenv.cfg %q: %+v", tc.cfg, r)
		}
	}
}

func TestSandbox(t *testing.T) {
	refused := &sandbox.Unavailable{Tier: sandbox.Standard, Reason: "user namespaces are disabled (sysctl user.max_user_namespaces = 0)", Mend: "sudo sysctl -w user.max_user_namespaces=15000"}
	for _, tc := range []struct {
		name             string
		standard, strict error
		level            Level
		detail, mend     string
	}{
		{"both", nil, nil, OK, "standard (oz0 dev's default) and strict work here", ""},
		{"no strict", nil, &sandbox.Unavailable{Tier: sandbox.Strict, Reason: "no loopback", Mend: "m"}, Warn, "strict does not: the strict sandbox cannot work here: no loopback", "m"},
		{"none", refused, refused, Warn, "sessions run without a sandbox (tier none): the standard sandbox cannot work here: user namespaces are disabled", "sudo sysctl -w user.max_user_namespaces=15000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := checkSandbox(Env{Sandbox: func(tier sandbox.Tier) error {
				if tier == sandbox.Standard {
					return tc.standard
				}
				return tc.strict
			}})
			if r.Level != tc.level || !strings.Contains(r.Detail, tc.detail) || r.Mend != tc.mend {
				t.Errorf("got %+v", r)
			}
		})
	}
}

func TestNodePluginIsToldFromItsFiles(t *testing.T) {
	for files, want := range map[string]bool{"package.json": true, "package.json pyproject.toml": false, "pyproject.toml": false, "": false} {
		dir := t.TempDir()
		for _, f := range strings.Fields(files) {
			testbin.WriteFiles(t, dir, map[string]string{f: "{}"})
		}
		if got := nodePlugin(dir, nil); got != want {
			t.Errorf("%q: node plugin %v, want %v", files, got, want)
		}
	}
}

func TestNodeVersion(t *testing.T) {
	bin := t.TempDir()
	node := func(version string) Env {
		testbin.WriteFiles(t, bin, map[string]string{"node": "#!/bin/sh\necho " + version + "\n"})
		return Env{LookPath: func(string) (string, error) { return filepath.Join(bin, "node"), nil }}
	}
	plugin := t.TempDir()
	for _, tc := range []struct {
		name             string
		engines, version string
		level            Level
		says             string
	}{
		{"no engines, a recent node", "", "v22.11.0", OK, "node v22.11.0"},
		{"no engines, an old node", "", "v20.20.2", Fail, "the Node kit needs Node 22 or newer"},
		{"engines met", ">=22", "v22.23.5", OK, "node v22.23.5"},
		{"engines not met", ">=24", "v22.23.5", Fail, "the plugin's package.json (engines.node) needs Node 24 or newer"},
		{"engines below the kit's floor", ">=20", "v20.20.2", Fail, "the Node kit needs Node 22 or newer"},
		{"a constraint it does not read", "^24 || ^26", "v22.23.5", OK, "node v22.23.5"}, // a constraint it does not read: the kit's floor only
		{"not a version", "", "not a version", Fail, "does not say a version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testbin.WriteFiles(t, plugin, map[string]string{"package.json": `{"engines":{"node":"` + tc.engines + `"}}`})
			env := node(tc.version)
			env.PluginDir = plugin
			if r := checkNode(context.Background(), env); r.Level != tc.level || !strings.Contains(r.Detail, tc.says) {
				t.Errorf("engines %q, %s: %+v", tc.engines, tc.version, r)
			}
		})
	}
	r := checkNode(context.Background(), Env{PluginDir: plugin, LookPath: func(string) (string, error) { return "", errors.New("not found") }})
	if r.Level != Fail || !strings.Contains(r.Mend, "install Node") {
		t.Errorf("no node: %+v", r)
	}
}

func TestNodeModules(t *testing.T) {
	lock := func(b string) string {
		return `{"packages":{"":{"name":"p"},"node_modules/a":{"version":"1.0.0"},"node_modules/b":{"version":"` + b + `"},` +
			`"node_modules/fsevents":{"version":"2.3.3","os":["darwin"]},"node_modules/only-x":{"version":"1.0.0","optional":true},` +
			`"node_modules/tsc":{"version":"5.0.0","dev":true},"node_modules/both":{"version":"1.0.0","devOptional":true}}}`
	}
	hidden := `{"packages":{"node_modules/a":{"version":"1.0.0"},"node_modules/b":{"version":"2.0.0"}}}`
	installed := map[string]string{"node_modules/a/package.json": "{}", "node_modules/b/package.json": "{}", "node_modules/.package-lock.json": hidden}
	deps := `{"dependencies":{"a":"1.0.0","b":"2.0.0"}}`
	with := func(files ...map[string]string) map[string]string {
		out := map[string]string{}
		for _, f := range files {
			maps.Copy(out, f)
		}
		return out
	}
	for _, tc := range []struct {
		what  string
		files map[string]string // under the workspace's root; the plugin is in plug/
		level Level
		says  string
		mend  string
	}{
		{"no dependencies", map[string]string{"plug/package.json": `{"name":"p"}`}, OK, "no dependencies", ""},
		{"not installed", map[string]string{"plug/package.json": deps, "plug/package-lock.json": lock("2.0.0")}, Warn, "(a is not)", "run npm ci in the plugin"},
		{"as locked", with(map[string]string{"plug/package.json": deps, "plug/package-lock.json": lock("2.0.0")}, prefixed("plug/", installed)), OK, "as the lock pins it", ""},
		{"another version", with(map[string]string{"plug/package.json": deps, "plug/package-lock.json": lock("2.1.0")}, prefixed("plug/", installed)), Warn, "b is 2.1.0 there, 2.0.0 installed", "run npm ci in the plugin"},
		{"shrinkwrap", with(map[string]string{"plug/package.json": deps, "plug/npm-shrinkwrap.json": lock("2.0.0")}, prefixed("plug/", installed)), OK, "as the lock pins it", ""},
		{"pnpm, installed", with(map[string]string{"plug/package.json": deps, "plug/pnpm-lock.yaml": "lockfileVersion: '9.0'\n"}, prefixed("plug/", installed)), OK, "2 dependencies are installed", ""},
		{"yarn, not installed", map[string]string{"plug/package.json": deps, "plug/yarn.lock": "# yarn\n"}, Warn, "not installed", "run yarn install --frozen-lockfile in the plugin"},
		{"a workspace member, installed at the root", with(map[string]string{"plug/package.json": deps, "package-lock.json": lock("2.0.0")}, installed), OK, "2 dependencies are installed", ""},
		{"a workspace member, not installed", map[string]string{"plug/package.json": deps, "package-lock.json": lock("2.0.0")}, Warn, "not installed", "(the workspace's root)"},
		{"no lock", with(map[string]string{"plug/package.json": deps}, prefixed("plug/", installed)), OK, "installed", ""},
	} {
		t.Run(tc.what, func(t *testing.T) {
			root := t.TempDir()
			testbin.WriteFiles(t, root, tc.files)
			r := checkNodeModules(Env{PluginDir: filepath.Join(root, "plug")})
			if r.Level != tc.level || !strings.Contains(r.Detail, tc.says) || !strings.Contains(r.Mend, tc.mend) {
				t.Errorf("%s: %+v", tc.what, r)
			}
		})
	}
}

// prefixed is files with each name under dir.
func prefixed(dir string, files map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		out[dir+k] = v
	}
	return out
}

func TestAllows(t *testing.T) {
	for _, tc := range []struct {
		name string
		list []string
		here string
		want bool
	}{
		{"no list", nil, "linux", true},
		{"not listed", []string{"darwin"}, "linux", false},
		{"listed", []string{"linux", "darwin"}, "linux", true},
		{"not excluded", []string{"!win32"}, "linux", true},
		{"excluded", []string{"!linux"}, "linux", false},
		{"node's name of the CPU", []string{"x64"}, nodeName("amd64"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := allows(tc.list, tc.here); got != tc.want {
				t.Errorf("allows(%v, %s) = %v", tc.list, tc.here, got)
			}
		})
	}
}

// checkPluginIn is checkPlugin of the plugin in dir, loaded as Run loads it.
func checkPluginIn(dir string) Result {
	_, rep, err := lint.Load(dir)
	var re *diag.ReportError
	if errors.As(err, &re) {
		err = nil
	}
	return checkPlugin(Env{PluginDir: dir}, rep, err)
}

// One Node everywhere: the Node templates' engines.node and their READMEs, scripts/node.env (the
// Node the tests run on, installed by make test-deps where the machine's is older), the README and
// oz0 doctor's floor are one major, which @strands-agents/sdk declares (engines.node >=22).
func TestOneNode(t *testing.T) {
	env, err := os.ReadFile("../scripts/node.env")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("\nOZ0_NODE_MAJOR=%d\n", MinNode); !strings.Contains(string(env), want) {
		t.Errorf("scripts/node.env has no %q", strings.TrimSpace(want))
	}
	pkgs, _ := filepath.Glob("../scaffold/templates/*/package.json")
	if len(pkgs) == 0 {
		t.Fatal("no Node template")
	}
	for _, p := range pkgs {
		// A template (its name and description are Go template actions, so not JSON yet).
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`"node": ">=%d"`, MinNode); !strings.Contains(string(data), want) {
			t.Errorf("%s: its engines.node is not %s, oz0 doctor's floor", p, want)
		}
		readme, err := os.ReadFile(filepath.Join(filepath.Dir(p), "README.md"))
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("needs Node %d or later", MinNode); !strings.Contains(strings.Join(strings.Fields(string(readme)), " "), want) {
			t.Errorf("%s: its README does not say %q", filepath.Dir(p), want)
		}
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("Node %d or later", MinNode); !strings.Contains(strings.Join(strings.Fields(string(readme)), " "), want) {
		t.Errorf("README.md does not say %q", want)
	}
}
