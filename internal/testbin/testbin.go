// Package testbin builds the Go programs tests run as child processes (harnesskit's test
// harness, a hook plugin), once per test process, with the toolchain the tests run under.
package testbin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHarness is the import path of harnesskit's Go test harness (modes: ok, flood N, hang, …).
const TestHarness = "github.com/orchestrator-zero/oz0/harnesskit/internal/testharness"

// CrashHook is the import path of a plugin hook that dies in the middle of its first call.
const CrashHook = "github.com/orchestrator-zero/oz0/harnesskit/hook/internal/crashhook"

// BareProxy is the import path of a bare httputil.ReverseProxy in a process of its own: the
// floor the gateway's added latency is measured against.
const BareProxy = "github.com/orchestrator-zero/oz0/internal/testbin/bareproxy"

// MiniUpstream is the import path of the least model API there is: one fixed Anthropic message,
// streamed or not, in a process of its own.
const MiniUpstream = "github.com/orchestrator-zero/oz0/internal/testbin/miniupstream"

var (
	mu    sync.Mutex
	dir   string
	built = map[string]result{}
	// tmp is the temporary directory as the process started: tests point TMPDIR at directories
	// of their own, which are gone before the next test runs.
	tmp = os.TempDir()
)

type result struct {
	path string
	err  error
}

// Build returns the path of the program pkg (an import path), built with CGO_ENABLED=0 the first
// time a test of the process asks for it. Main removes what it built.
func Build(tb testing.TB, pkg string) string {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	r, ok := built[pkg]
	if !ok {
		r = build(pkg)
		built[pkg] = r
	}
	if r.err != nil {
		tb.Fatal(r.err)
	}
	return r.path
}

func build(pkg string) result {
	if dir == "" {
		d, err := os.MkdirTemp(tmp, "oz0-testbin-")
		if err != nil {
			return result{err: err}
		}
		// Readable by all: a sandboxed session of a node run as root runs as nobody.
		if err := os.Chmod(d, 0o755); err != nil {
			return result{err: err}
		}
		dir = d
	}
	out := filepath.Join(dir, fmt.Sprintf("%s-%d", path.Base(pkg), len(built)))
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	cmd := exec.Command(gobin, "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return result{err: fmt.Errorf("cannot build %s: %v\n%s", pkg, err, b)}
	}
	return result{path: out}
}

// Main runs the tests of a package that builds programs with Build, and removes them after.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run runs m's tests and removes what Build built; for a TestMain that must exit through
// another package (testscript.Main).
func Run(m interface{ Run() int }) int {
	code := m.Run()
	mu.Lock()
	if dir != "" {
		os.RemoveAll(dir)
	}
	mu.Unlock()
	return code
}

// M is a testing.M whose Run also removes what Build built.
type M struct{ *testing.M }

func (m M) Run() int { return Run(m.M) }

// Running lists the live (not zombie) processes whose argv[0] is program, from /proc: a test
// checks with it that the sessions it ran left nothing behind. It is nil where there is no /proc.
func Running(program string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.HasPrefix(cmdline, []byte(program+"\x00")) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); err == nil && i >= 0 && len(stat) > i+2 && stat[i+2] != 'Z' {
			pids = append(pids, pid)
		}
	}
	return pids
}

// CheckGoroutines fails tb when more goroutines run than before, once those on their way out
// have had a few seconds to end; it prints them all.
func CheckGoroutines(tb testing.TB, before int) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		tb.Errorf("goroutines: %d before the test, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

// WriteFiles writes files (paths relative to dir, with slashes) under dir, making directories;
// a file that starts with #! is made executable.
func WriteFiles(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(data, "#!") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			tb.Fatal(err)
		}
	}
}

// Plugin writes, in a new directory of tb's, a plugin named name with one harness that runs
// command (a program's absolute path and its arguments) and one agent of the same name on it;
// agentYAML is added to the agent's file (limits, for one). It returns the plugin's directory.
func Plugin(tb testing.TB, name string, command []string, agentYAML string) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), name)
	cmd, err := json.Marshal(command)
	if err != nil {
		tb.Fatal(err)
	}
	WriteFiles(tb, dir, map[string]string{
		"oz0-plugin.yaml":          fmt.Sprintf("apiVersion: oz0/v1\nname: %s\nversion: 0.1.0\nruntime: binary\nharnesses:\n  - name: %s\n    command: %s\n    formats: [anthropic-messages]\nagents: [agents/]\n", name, name, cmd),
		"agents/" + name + ".yaml": fmt.Sprintf("name: %s\nruntime: harness:%s\ninstructions: prompts/p.md\n", name, name) + agentYAML,
		"prompts/p.md":             "Say hello.\n",
	})
	return dir
}

// Python returns the real path of the python3 on PATH (not a pyenv or asdf shim, which a session's
// minimal environment cannot run), or skips the test where there is none.
func Python(tb testing.TB) string {
	tb.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		tb.Skip("no python3 on PATH")
	}
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		tb.Skipf("python3 does not run: %v", err)
	}
	return strings.TrimSpace(string(out))
}
