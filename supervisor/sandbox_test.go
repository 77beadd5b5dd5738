//go:build linux

package supervisor_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/fakemodel"
	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/internal/testbin"
	"github.com/orchestrator-zero/oz0/supervisor"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

// requireTier skips a test where the kernel refuses the tier, saying why.
func requireTier(t *testing.T, tier sandbox.Tier) {
	t.Helper()
	if err := sandbox.Check(tier); err != nil {
		t.Skipf("%v", err)
	}
}

// sandboxed is spec in tier, with a plugin directory others may read (a root node's harness
// runs as nobody).
func sandboxed(t *testing.T, tier sandbox.Tier, mode string, args ...string) supervisor.Spec {
	sp := spec(t, mode, args...)
	os.Chmod(sp.PluginDir, 0o755)
	sp.Sandbox = supervisor.Sandbox{Tier: tier}
	return sp
}

// pidNamespace is the PID namespace of process pid, as /proc names it ("pid:[4026532…]").
func pidNamespace(t *testing.T, pid int) string {
	t.Helper()
	ns, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	if err != nil {
		t.Fatalf("the session's init %d: %v", pid, err)
	}
	return ns
}

// inNamespace lists the live processes in the PID namespace ns.
func inNamespace(ns string) []int {
	entries, _ := os.ReadDir("/proc")
	var live []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if got, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err == nil && got == ns && processAlive(pid) {
			live = append(live, pid)
		}
	}
	return live
}

// waitNamespaceEmpty waits until no live process is left in ns.
func waitNamespaceEmpty(t *testing.T, ns string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		live := inNamespace(ns)
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v of the session's namespace %s are still alive", live, ns)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSandboxRunsTheHarness(t *testing.T) {
	for _, tier := range []sandbox.Tier{sandbox.Standard, sandbox.Strict} {
		t.Run(string(tier), func(t *testing.T) {
			requireTier(t, tier)
			sp := sandboxed(t, tier, "echo")
			if tier == sandbox.Strict {
				gw := httptest.NewServer(http.NotFoundHandler())
				defer gw.Close()
				sp.Env = supervisor.Env{AnthropicBaseURL: gw.URL + "/anthropic"}
				sp.Sandbox.Gateway = http.NotFoundHandler()
			}
			end, _ := run(t, sp)
			wantStatus(t, end, harnesskit.Completed)
			var got map[string]any
			if err := json.Unmarshal(end.Output, &got); err != nil {
				t.Fatal(err)
			}
			if got["cwd"] != got["workdir"] || got["workdir"] == "" {
				t.Errorf("cwd %v, workdir %v: the session runs in its workdir, at the path its request names", got["cwd"], got["workdir"])
			}
		})
	}
}

func TestSandboxHidesAndShows(t *testing.T) {
	requireTier(t, sandbox.Standard)
	parent := t.TempDir()
	os.Chmod(parent, 0o755)
	plugin := filepath.Join(parent, "plug")
	nodeState := filepath.Join(plugin, ".oz0", "dev")
	if err := os.MkdirAll(nodeState, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(plugin, "README"), []byte("the plugin\n"), 0o644)
	os.WriteFile(filepath.Join(nodeState, "secrets.json"), []byte(`{"ANTHROPIC_API_KEY":"sk-tenant"}`), 0o644)
	other := filepath.Join(parent, "other-plugin", "README")
	os.MkdirAll(filepath.Dir(other), 0o755)
	os.WriteFile(other, []byte("another plugin\n"), 0o644)
	home, _ := os.UserHomeDir()

	sp := sandboxed(t, sandbox.Standard, "probe")
	sp.PluginDir = plugin
	sp.Sandbox.Hide = []string{nodeState}
	opts := map[string][]string{
		"read":  {filepath.Join(plugin, "README"), filepath.Join(nodeState, "secrets.json"), other, filepath.Join(home, ".bashrc"), "/etc/hostname"},
		"write": {filepath.Join(plugin, "new"), "./in-workdir", "/tmp/in-tmp", "/in-root"},
	}
	sp.Request.Options, _ = json.Marshal(opts)
	end, _ := run(t, sp)
	wantStatus(t, end, harnesskit.Completed)
	var got map[string]string
	if err := json.Unmarshal(end.Output, &got); err != nil {
		t.Fatal(err)
	}
	for try, want := range map[string]bool{
		"read " + filepath.Join(plugin, "README"):          true,
		"read " + filepath.Join(nodeState, "secrets.json"): false,
		"read " + other:                          false,
		"read " + filepath.Join(home, ".bashrc"): false,
		"write " + filepath.Join(plugin, "new"):  false,
		"write ./in-workdir":                     true,
		"write /tmp/in-tmp":                      true,
		"write /in-root":                         false,
	} {
		if (got[try] == "ok") != want {
			t.Errorf("%s: %q, want success %v", try, got[try], want)
		}
	}
	if _, err := os.Stat(filepath.Join(plugin, "new")); err == nil {
		t.Errorf("the harness wrote into the plugin directory")
	}
}

func TestSandboxNothingOutlivesTheSession(t *testing.T) {
	requireTier(t, sandbox.Standard)
	t.Run("a setsid grandchild, after the result", func(t *testing.T) {
		// The harness answers once the test has read its init's namespace: an init that has
		// ended (a fast harness) has none to read.
		held := filepath.Join(t.TempDir(), "read")
		sp := sandboxed(t, sandbox.Standard, "grandchildheld", held)
		sp.PluginDir = filepath.Dir(held) // the sandbox shows the harness its plugin's directory
		os.Chmod(sp.PluginDir, 0o755)
		var ns string
		end, _, _ := runSession(t, context.Background(), sp, func(s *supervisor.Session) {
			ns = pidNamespace(t, s.PID())
			if err := os.WriteFile(held, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		})
		wantStatus(t, end, harnesskit.Completed)
		waitNamespaceEmpty(t, ns)
	})
	t.Run("20 children and a setsid one, at the timeout", func(t *testing.T) {
		const children = 20
		sp := sandboxed(t, sandbox.Standard, "spawn", strconv.Itoa(children))
		sp.Limits.Timeout = 200 * time.Millisecond
		spawned := make(chan struct{})
		sp.Sink = func(ev harnesskit.Event) {
			if ev.Kind == harnesskit.EventSay {
				close(spawned)
			}
		}
		var ns string
		end, _, _ := runSession(t, context.Background(), sp, func(s *supervisor.Session) {
			ns = pidNamespace(t, s.PID())
			// The clock stops until every child is seen alive, however slow the machine.
			release := s.Hold()
			defer release()
			<-spawned
			deadline := time.Now().Add(10 * time.Second)
			for len(inNamespace(ns)) < children+3 { // the init, the harness, its children
				if time.Now().After(deadline) {
					t.Fatalf("only %d processes in the session's namespace", len(inNamespace(ns)))
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
		wantStatus(t, end, harnesskit.TimedOut)
		waitNamespaceEmpty(t, ns)
	})
}

func TestSandboxStrictReachesOnlyTheGateway(t *testing.T) {
	requireTier(t, sandbox.Strict)
	gw := httptest.NewServer(fakemodel.New(nil))
	defer gw.Close()
	outside, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer outside.Close()

	sp := sandboxed(t, sandbox.Strict, "probe")
	sp.Env = supervisor.Env{AnthropicBaseURL: gw.URL, AnthropicAPIKey: "k"}
	sp.Sandbox.Gateway = fakemodel.New(nil)
	opts := map[string][]string{
		"connect": {outside.Addr().String()},
		"get":     {gw.URL + "/v1/models"},
	}
	sp.Request.Options, _ = json.Marshal(opts)
	end, _ := run(t, sp)
	wantStatus(t, end, harnesskit.Completed)
	var got map[string]string
	json.Unmarshal(end.Output, &got)
	if got["get "+gw.URL+"/v1/models"] != "ok" {
		t.Errorf("the gateway is not reachable in the strict sandbox: %v", got)
	}
	if r := got["connect "+outside.Addr().String()]; r == "ok" || !strings.Contains(r, "refused") {
		t.Errorf("a loopback port outside the sandbox: %q, want connection refused", r)
	}
}

// A descriptor the node inherited from whatever started it (here put at a number no Go runtime
// uses, without close-on-exec, as a shell's redirection is), on a file its tier hides, does not
// reach the harness, in any tier. (TestInitPassesOnNoInheritedDescriptor, in package sandbox,
// proves the sandbox's init does the same on its own.)
func TestHarnessGetsNoInheritedDescriptor(t *testing.T) {
	secrets := filepath.Join(t.TempDir(), "secrets.json")
	os.WriteFile(secrets, []byte(`{"ANTHROPIC_API_KEY":"sk-tenant"}`), 0o600)
	const fd = 217
	for _, tier := range []sandbox.Tier{sandbox.None, sandbox.Standard, sandbox.Strict} {
		t.Run(string(tier), func(t *testing.T) {
			sp := spec(t, "probe")
			if tier.Policy().Namespaces {
				requireTier(t, tier)
				sp = sandboxed(t, tier, "probe")
			}
			if tier == sandbox.Strict {
				gw := httptest.NewServer(http.NotFoundHandler())
				defer gw.Close()
				sp.Env = supervisor.Env{AnthropicBaseURL: gw.URL + "/anthropic"}
				sp.Sandbox.Gateway = http.NotFoundHandler()
			}
			// Opened afresh for each tier: a descriptor an earlier session marked proves nothing.
			f, err := os.Open(secrets)
			if err != nil {
				t.Fatal(err)
			}
			if err := syscall.Dup3(int(f.Fd()), fd, 0); err != nil {
				t.Fatal(err)
			}
			f.Close()
			defer syscall.Close(fd)
			sp.Request.Options, _ = json.Marshal(map[string][]int{"fds": {fd}})
			end, _ := run(t, sp)
			wantStatus(t, end, harnesskit.Completed)
			var got map[string]string
			json.Unmarshal(end.Output, &got)
			if r, ok := got["fd "+strconv.Itoa(fd)]; !ok || r == "ok" {
				t.Errorf("descriptor %d (the node's, on %s): %q, want it closed", fd, secrets, r)
			}
		})
	}
}

// The Python template in the standard sandbox: with python3 from PATH (here pyenv's shim, which
// needs the user's home: the sandbox runs the interpreter it picks), and from the plugin's .venv
// (whose interpreter lives elsewhere, here in pyenv's installation, shown read-only).
func TestSandboxPythonTemplate(t *testing.T) {
	requireTier(t, sandbox.Standard)
	python := testbin.Python(t)
	ts := httptest.NewServer(fakemodel.New(nil))
	defer ts.Close()
	for _, venv := range []bool{false, true} {
		t.Run(map[bool]string{false: "python3 on PATH", true: "the plugin's venv"}[venv], func(t *testing.T) {
			dir := newTemplatePlugin(t)
			os.Chmod(dir, 0o755)
			if venv {
				if out, err := exec.Command(python, "-m", "venv", "--without-pip", filepath.Join(dir, ".venv")).CombinedOutput(); err != nil {
					t.Skipf("cannot make a venv: %v\n%s", err, out)
				}
			}
			sp := templateSpec(t, dir, ts.URL)
			sp.Sandbox = supervisor.Sandbox{Tier: sandbox.Standard}
			end, _ := run(t, sp)
			wantStatus(t, end, harnesskit.Completed)
			if got := outputString(t, end); got != reply {
				t.Errorf("output %q, want %q", got, reply)
			}
		})
	}
}
