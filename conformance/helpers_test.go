package conformance_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/internal/testbin"
	"github.com/orchestrator-zero/oz0/lint"
	"github.com/orchestrator-zero/oz0/plugin"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// loadPlugin writes files into a new plugin directory and loads it; HARNESS in them is the test
// harness's path.
func loadPlugin(t *testing.T, files map[string]string) *plugin.Plugin {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		full := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(strings.ReplaceAll(data, "HARNESS", testbin.Build(t, testbin.TestHarness))), 0o644); err != nil {
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
		if pids := testbin.Running(testbin.Build(t, testbin.TestHarness)); len(pids) > 0 {
			t.Errorf("test harness processes are left: %v", pids)
		}
		testbin.CheckGoroutines(t, before)
	})
}
