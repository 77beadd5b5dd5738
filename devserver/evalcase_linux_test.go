package devserver

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/internal/testbin"
	"github.com/orchestrator-zero/oz0/scaffold"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

// A job saved as an eval case through the API: proposed (nothing written), written into the
// plugin's evals/ alone, a file name outside it refused; and a plugin on a read-only file system
// refused with 403 read_only, nothing written, while a proposal still reads.
func TestEvalCaseWrites(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("the template's harness needs python3")
	}
	disk, ok := testbin.SmallDisk(t, 64)
	if !ok {
		return
	}
	if _, err := scaffold.Create(scaffold.Options{Name: "acme-triage", Template: "byo-agent", Description: "Sorts support tickets", Parent: disk}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(disk, "acme-triage")
	s, err := Start(Config{PluginDirs: []string{dir}, Ephemeral: true, Poll: -1, Sandbox: sandbox.None, Record: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := client.New(s.Context())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _, st, err := runJob(ctx, c, "acme-triage", "I was charged twice for my order", nil)
	if err != nil || st != apiv1.StatusSucceeded {
		t.Fatalf("the job: %s %v", st, err)
	}
	jobs, err := c.Jobs(ctx, "", "", 1)
	if err != nil || len(jobs) != 1 {
		t.Fatal(err)
	}
	id := jobs[0].ID
	before, _ := os.ReadFile(filepath.Join(dir, "evals", "triage.yaml"))

	p, err := c.EvalCase(ctx, id, apiv1.EvalCaseRequest{Name: "double"})
	if err != nil || p.Written || p.Path != "evals/triage.yaml" || !strings.HasPrefix(p.YAML, string(before)) || !strings.Contains(p.CaseYAML, "- name: double\n") {
		t.Fatalf("the proposal: %+v %v", p, err)
	}
	if now, _ := os.ReadFile(filepath.Join(dir, "evals", "triage.yaml")); string(now) != string(before) {
		t.Error("a proposal wrote the file")
	}
	var apiErr *client.APIError
	for _, bad := range []string{"../oz0-plugin.yaml", "sub/x.yaml", "/tmp/x.yaml"} {
		if _, err := c.EvalCase(ctx, id, apiv1.EvalCaseRequest{File: bad, Write: true}); !errors.As(err, &apiErr) || apiErr.Code != apiv1.CodeBadEval {
			t.Errorf("file %s: %v", bad, err)
		}
	}

	// Read-only: the plugin's file system remounted so.
	if err := syscall.Mount("", disk, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	_, err = c.EvalCase(ctx, id, apiv1.EvalCaseRequest{Name: "double", Write: true})
	if !errors.As(err, &apiErr) || apiErr.Status != 403 || apiErr.Code != apiv1.CodeReadOnly || !strings.Contains(apiErr.Message, "read-only") {
		t.Errorf("a write into a read-only plugin: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "evals", "recordings", "triage", "double.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the recording: %v", err)
	}
	if p, err := c.EvalCase(ctx, id, apiv1.EvalCaseRequest{Name: "double"}); err != nil || p.Written {
		t.Errorf("a proposal of a read-only plugin: %+v %v", p, err)
	}
}
