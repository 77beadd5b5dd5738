//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/internal/testbin"
)

// TestLongLinesBounded runs 8 jobs at once through a real `oz0 dev`, each of a harness that sends
// three lines of 8 MiB read whole (tool results; then, on a second server, permission requests,
// which the node answers with the arguments and records twice), and checks that every job
// succeeds and that the server's peak resident memory (VmHWM) stays within a bound: each long
// line is held a few times over (read, decoded, recorded), and at most two at once across the
// sessions (supervisor.LongLines). Before, these took oz0 dev to 440 and 1080 MiB; the figures
// are in docs/reliability.md.
func TestLongLinesBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 48 lines of 8 MiB through oz0 dev")
	}
	for _, c := range []struct {
		mode  string
		bound int64
	}{
		{"bigresults", 256 << 20},
		{"bigasks", 512 << 20},
	} {
		t.Run(c.mode, func(t *testing.T) {
			bin, work := longLinesPlugin(t, c.mode, "3x8388000")
			dev := startProcess(t, filepath.Join(work, "ctx"), filepath.Join(work, "dev.log"), bin,
				"dev", "--plugin", filepath.Join(work, "plug"), "--state-dir", filepath.Join(work, "state"),
				"--ready-file", filepath.Join(work, "ctx"), "--max-sessions", "8")
			var wg sync.WaitGroup
			errs := make([]string, 8)
			for i := range errs {
				wg.Go(func() {
					run := exec.Command(bin, "run", "big", "go")
					run.Env = append(os.Environ(), apiv1.ContextEnv+"="+dev.ready)
					var out countingWriter
					var stderr strings.Builder
					run.Stdout, run.Stderr = &out, &stderr
					if err := run.Run(); err != nil {
						errs[i] = fmt.Sprintf("oz0 run: %v: %s", err, stderr.String())
					} else if out < 3*8388000 {
						errs[i] = fmt.Sprintf("oz0 run printed %d bytes, not the three long lines", out)
					}
				})
			}
			wg.Wait()
			for _, e := range errs {
				if e != "" {
					t.Error(e)
				}
			}
			hwm := procStatus(t, dev.cmd.Process.Pid, "VmHWM")
			t.Logf("oz0 dev: VmHWM %d MiB after 8 jobs of 3 lines of 8 MiB (%s)", hwm>>20, c.mode)
			switch {
			case raceEnabled:
				t.Log("built with the race detector, which multiplies memory: the bound is not checked")
			case hwm >= c.bound:
				t.Errorf("oz0 dev's peak resident memory was %d MiB, over %d MiB", hwm>>20, c.bound>>20)
			}
		})
	}
}

// longLinesPlugin writes, in a fresh directory (work/plug), a plugin whose agent big runs the test
// harness in mode with arg, asking for notify_team, with a budget of stdout bytes that lets three
// lines of 8 MiB through in a second; it returns oz0's path on PATH and the directory.
func longLinesPlugin(t *testing.T, mode, arg string) (bin, work string) {
	t.Helper()
	bin, err := exec.LookPath("oz0")
	if err != nil {
		t.Fatal(err)
	}
	work, err = os.MkdirTemp("", "oz0-longlines-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	if err := os.Chmod(work, 0o755); err != nil { // sessions of a root node run as nobody
		t.Fatal(err)
	}
	testbin.WriteFiles(t, filepath.Join(work, "plug"), map[string]string{
		"oz0-plugin.yaml": fmt.Sprintf("apiVersion: oz0/v1\nname: big\nversion: 0.1.0\nruntime: binary\nagents: [agents/]\n"+
			"harnesses:\n  - name: big\n    command: [%q, %q, %q]\n    permissions: true\n    tools: [notify_team]\n    formats: [anthropic-messages]\n",
			testbin.Build(t, testbin.TestHarness), mode, arg),
		"agents/big.yaml": "name: big\nruntime: harness:big\ninstructions: prompts/p.md\n" +
			"limits: {max_event_bytes: 67108864, max_event_bytes_per_second: 67108864}\n",
		"prompts/p.md": "Go.\n",
	})
	return bin, work
}
