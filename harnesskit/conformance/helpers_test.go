package conformance_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/lint"
	"github.com/orchestrator-zero/oz0/plugin"
)

// testHarness is harnesskit/internal/testharness, built once for the test process.
var testHarness string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "conformance-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Chmod(dir, 0o755) // readable by all: a sandboxed session of a root node runs as nobody
	testHarness = filepath.Join(dir, "testharness")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	build := exec.Command(gobin, "build", "-o", testHarness, "github.com/orchestrator-zero/oz0/harnesskit/internal/testharness")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	code := 1
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "cannot build the test harness: %v\n%s", err, out)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// loadPlugin writes files into a new plugin directory and loads it; HARNESS in them is the test
// harness's path.
func loadPlugin(t *testing.T, files map[string]string) *plugin.Plugin {
	t.Helper()
	dir := t.TempDir()
	os.Chmod(dir, 0o755) // readable by all: a sandboxed session of a root node runs as nobody
	for name, data := range files {
		full := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(strings.ReplaceAll(data, "HARNESS", testHarness)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, rep, err := lint.Load(dir)
	if err != nil {
		t.Fatalf("%v\n%v", err, rep)
	}
	return p
}

// noLeaks makes the sessions of a test use a temporary directory of their own, and checks at
// the end of the test that they left nothing in it, that no test harness process is left, and
// that the test's goroutines have ended.
func noLeaks(t *testing.T) {
	t.Helper()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // the sessions' directories: harnesskit makes them in os.TempDir()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
			t.Errorf("the sessions left %d entries in TMPDIR, the first %s", len(entries), entries[0].Name())
		}
		if pids := harnessProcesses(); len(pids) > 0 {
			t.Errorf("test harness processes are left: %v", pids)
		}
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			t.Errorf("goroutines: %d before the test, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
		}
	})
}

// harnessProcesses lists the live (not zombie) processes that run the test harness.
func harnessProcesses() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.HasPrefix(cmdline, []byte(testHarness+"\x00")) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); err == nil && i >= 0 && len(stat) > i+2 && stat[i+2] != 'Z' {
			pids = append(pids, pid)
		}
	}
	return pids
}
