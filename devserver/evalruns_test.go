package devserver

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/devserver/store"
)

// The dev UI's eval runs: the template's cases run by oz0 eval's engine on the server's own API,
// offline from their recordings; one run at a time; each run kept with its report, and compared
// with the run before.
func TestEvalRuns(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("the template's harness needs python3")
	}
	state := t.TempDir()
	// Two plugins: the report names an eval file by its plugin too.
	other := goPlugin(t, "gosay", buildTestHarness(t), "ok")
	s, err := Start(Config{PluginDirs: []string{templatePlugin(t), other}, StateDir: state, Poll: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := client.New(s.Context())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fs, err := c.EvalFiles(ctx)
	if err != nil || len(fs.Files) != 1 || fs.Files[0].Path != "evals/triage.yaml" || fs.Files[0].Name != "acme-triage/evals/triage.yaml" || len(fs.Files[0].Cases) != 3 {
		t.Fatalf("the eval files: %+v %v", fs, err)
	}
	first := runEvals(ctx, t, c, apiv1.EvalRunRequest{})
	if first.Totals == nil || first.Totals.Passed != 3 || first.Done != 3 || first.Cases != 3 {
		t.Fatalf("the first run: %+v", first)
	}
	var rep struct {
		Cases []struct {
			Case, Status, Job string
		} `json:"cases"`
		Baseline json.RawMessage `json:"baseline"`
	}
	if err := json.Unmarshal(first.Report, &rep); err != nil || len(rep.Cases) != 3 || rep.Cases[0].Job == "" || rep.Baseline != nil {
		t.Errorf("the first run's report: %s %v", first.Report, err)
	}
	one := runEvals(ctx, t, c, apiv1.EvalRunRequest{Plugin: "acme-triage", File: "evals/triage.yaml", Case: "login"})
	if err := json.Unmarshal(one.Report, &rep); err != nil || len(rep.Cases) != 1 || rep.Cases[0].Case != "login" || rep.Baseline == nil {
		t.Errorf("one case, compared with the run before: %s %v", one.Report, err)
	}
	for _, bad := range []apiv1.EvalRunRequest{{Plugin: "acme-triage", File: "evals/none.yaml"}, {Plugin: "acme-triage", File: "evals/triage.yaml", Case: "none"},
		{Case: "login"}, {File: "evals/triage.yaml"}, {Plugin: "acme-triage", File: "../evals/triage.yaml"}} {
		var apiErr *client.APIError
		if _, err := c.StartEvalRun(ctx, bad); !errors.As(err, &apiErr) || apiErr.Code != apiv1.CodeBadEval {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	runs, err := c.EvalRuns(ctx)
	if err != nil || len(runs.Runs) != 2 || runs.Runs[0].ID != one.ID || runs.Runs[0].Report != nil || runs.Runs[1].Totals.Passed != 3 {
		t.Errorf("the runs kept: %+v %v", runs, err)
	}

	// One at a time; the server's stop interrupts a run, which is kept so.
	run, err := c.StartEvalRun(ctx, apiv1.EvalRunRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var apiErr *client.APIError
	if _, err := c.StartEvalRun(ctx, apiv1.EvalRunRequest{}); err != nil && (!errors.As(err, &apiErr) || apiErr.Code != apiv1.CodeEvalBusy) {
		t.Errorf("a second run at once: %v", err)
	}
	s.Close()
	st, err := store.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got, err := st.GetEvalRun(run.ID); err != nil || got.Status == store.EvalRunning {
		t.Errorf("the run oz0 dev stopped in: %+v %v", got, err)
	}
}

// runEvals starts a run and waits for its end.
func runEvals(ctx context.Context, t *testing.T, c *client.Client, req apiv1.EvalRunRequest) apiv1.EvalRun {
	t.Helper()
	run, err := c.StartEvalRun(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for run.Status == store.EvalRunning {
		if ctx.Err() != nil {
			t.Fatalf("run %d did not end: %+v", run.ID, run)
		}
		time.Sleep(20 * time.Millisecond) // polling the API, as the page does
		if run, err = c.EvalRun(ctx, run.ID); err != nil {
			t.Fatal(err)
		}
	}
	return run
}
