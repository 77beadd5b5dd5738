package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/internal/testbin"
)

// What an author does in the dev UI beyond watching jobs: a job saved as an eval case, run again
// and replayed, the agents drawn, usage charted, the eval cases run. A dev server of its own
// (TestBrowser's edits its plugin as it goes), on the byo-agent template with notify_team needing
// a person's approval.
func TestBrowserAuthoring(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test starts oz0 dev and Chromium")
	}
	exe := chromium(t)
	oz0 := testbin.Build(t, "github.com/orchestrator-zero/oz0/cmd/oz0")
	dir := t.TempDir()
	run(t, dir, oz0, "plugin", "new", "acme-triage", "--template", "byo-agent", "--description", "Sorts support tickets")
	plugin := filepath.Join(dir, "acme-triage")
	edit(t, filepath.Join(plugin, "agents", "acme-triage.yaml"), "# requires_approval: [notify_team]", "requires_approval: [notify_team]")

	// The tenant's rule: notify_team's calls for the legal team are refused.
	hooks := filepath.Join(dir, "hooks.yaml")
	if err := os.WriteFile(hooks, []byte(`hooks:
  - name: legal-by-person
    match: "*.notify_team"
    when: {arguments: {team: "^legal$"}}
    decide: deny
    reason: the legal team is told by a person
`), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDev(t, oz0, plugin, "--hooks", hooks)
	br := newBrowser(t, exe)
	ctx := context.Background()
	base := d.ctx.URL + "/ui/"
	br.do("log in", chromedp.Navigate(d.login), chromedp.WaitVisible("#jobs"), br.waitText("#conn", "live"))

	j, err := d.client.CreateJob(ctx, apiv1.JobRequest{Agent: "acme-triage", Input: "I was charged twice for my order"})
	if err != nil {
		t.Fatal(err)
	}
	d.approveAll(t, j.ID)
	first := j.ID

	t.Run("save a job as an eval case", func(t *testing.T) {
		br.t = t
		panel := "#eval-case"
		br.do("open the job and its Save as eval case", chromedp.Navigate(base+"#/jobs/"+first), br.waitText("h1 .status", "succeeded"),
			press(panel+" summary"), br.waitText("#case-yaml mark.added", "  - name: i-was-charged-twice\n"),
			br.waitText("#case-where", "Added at the end of acme-triage/evals/triage.yaml, its recording evals/recordings/triage/i-was-charged-twice.json."))
		// The file is the template's, whole, the case at its end; the file answers notify_team's
		// approvals already, so the case does not.
		template, err := os.ReadFile(filepath.Join(plugin, "evals", "triage.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if got := evaluate[string](br, `document.getElementById('case-yaml').textContent`); !strings.HasPrefix(got, string(template)) || strings.Contains(got[len(template):], "approvals") {
			t.Errorf("the proposed file:\n%s", got)
		}
		br.do("name it", chromedp.SetValue("#case-name", "double-charge"), chromedp.Evaluate[chromedp.Void](`document.getElementById('case-name').dispatchEvent(new Event('change'))`),
			br.waitText("#case-yaml mark.added", "  - name: double-charge\n"),
			br.waitText("#case-yaml mark.added", "      - called: {name: notify_team, arguments: {summary: I was charged twice for my order, team: billing}}\n"),
			br.waitText("#case-yaml mark.added", "      - equals: 'billing: Sorry about the double charge; we have refunded the second one.'\n"))
		shown := evaluate[string](br, `document.getElementById('case-yaml').textContent`)
		br.noUnlabelled()
		br.shot("job-eval-case")
		br.do("save", press("#case-save"), br.waitText("#case-done", "Written: evals/triage.yaml has case double-charge."))
		written, err := os.ReadFile(filepath.Join(plugin, "evals", "triage.yaml"))
		if err != nil || string(written) != shown {
			t.Errorf("the file written is not the one shown (%v):\n%s", err, written)
		}
		// The file lints clean and oz0 eval replays the case offline.
		if out, err := oz0In(plugin, oz0, "plugin", "lint"); err != nil {
			t.Errorf("oz0 plugin lint: %v\n%s", err, out)
		}
		out, err := oz0In(plugin, oz0, "eval", "evals/triage.yaml")
		if err != nil || !strings.Contains(out, "evals/triage.yaml double-charge  passed") || !strings.Contains(out, "4 passed, 0 failed") {
			t.Errorf("oz0 eval: %v\n%s", err, out)
		}
		br.do("the same name again is refused", press("#case-preview"), br.waitText("#alert-text", "has a case double-charge already: choose another name"))
	})

	t.Run("replay a job and run it again", func(t *testing.T) {
		br.t = t
		br.do("open the job's Run again or replay", chromedp.Navigate(base+"#/jobs/"+first), br.waitText("h1 .status", "succeeded"),
			press("#run-again summary"), poll(`document.getElementById('again-input').value === 'I was charged twice for my order'`))
		br.noUnlabelled()
		br.do("replay it", press("#replay"), poll(`location.hash.startsWith('#/jobs/job_') && location.hash !== '#/jobs/`+first+`'`))
		replayed := strings.TrimPrefix(evaluate[string](br, "location.hash"), "#/jobs/")
		d.approveAll(t, replayed)
		if j, err := d.client.Job(ctx, replayed); err != nil || j.From == nil || *j.From != (apiv1.JobOrigin{Job: first, How: apiv1.OriginReplay}) {
			t.Fatalf("the replayed job: %+v %v", j.From, err)
		}
		br.do("the replay names its job, and its calls are the recording's", br.waitText("h1 .status", "succeeded"),
			br.waitText("#job-from", first+" (replay)"), br.waitText("#origin", "Replayed from "+first),
			br.waitText(`#origin .origin-call[data-n="1"] .same`, "The same request as call 1 of "+first+"."),
			br.waitText("#timeline .span.k-model .detail", "status 200"))
		br.shot("job-replay")

		br.do("back to the job; run it again on another input", chromedp.Navigate(base+"#/jobs/"+first), br.waitText("h1 .status", "succeeded"),
			press("#run-again summary"), poll(`document.getElementById('again-input').value !== ''`),
			chromedp.SetValue("#again-input", "I was charged three times for my order"), press("#again-start"),
			poll(`location.hash.startsWith('#/jobs/job_') && location.hash !== '#/jobs/`+first+`'`))
		again := strings.TrimPrefix(evaluate[string](br, "location.hash"), "#/jobs/")
		d.approveAll(t, again)
		j, err := d.client.Job(ctx, again)
		if err != nil || j.From == nil || *j.From != (apiv1.JobOrigin{Job: first, How: apiv1.OriginRunAgain}) || j.InputText != "I was charged three times for my order" {
			t.Fatalf("the job run again: %+v %+v %v", j, j.From, err)
		}
		br.do("what changed from the job it came from", br.waitText("#job-from", first+" (run again)"), br.waitText("#origin", "Run again from "+first),
			br.waitText(`#origin .origin-call[data-n="1"] .diff .del`, "charged twice"), br.waitText(`#origin .origin-call[data-n="1"] .diff .add`, "charged three times"))
		br.do("its model call's Compare is with that job's", press("#timeline .span.k-model summary"), press("#timeline .span.k-model .call .t-compare"),
			br.waitText("#timeline .span.k-model .call .diff-result", "What changed from call 1 of "+first))
		br.shot("job-run-again")
	})

	t.Run("the agents drawn, and a job's drawing lit", func(t *testing.T) {
		br.t = t
		tool := `#agent-acme-triage svg .n-tool[data-name="notify_team"]`
		br.do("open Agents", chromedp.Click(`nav a[data-nav="agents"]`), chromedp.WaitVisible("#agent-acme-triage svg"),
			br.waitText(`#agent-acme-triage svg .n-agent[data-name="acme-triage"]`, "model fake"),
			br.waitText(`#agent-acme-triage svg .n-harness`, "acme-triage"),
			br.waitText(tool+" .p-approval", "approval"), br.waitText(tool+" .p-deny", "may be refused"),
			br.waitText(tool+" title", "rule legal-by-person sometimes refused: the legal team is told by a person"))
		if n := evaluate[int](br, `document.querySelectorAll('#agent-acme-triage svg .edge').length`); n != 2 {
			t.Errorf("%d edges, want agent → harness → notify_team", n)
		}
		// Nothing of the drawing is fetched: it is the page's own SVG, with the system's font.
		if n := evaluate[int](br, `performance.getEntriesByType('resource').filter((e) => !e.name.startsWith(location.origin)).length`); n != 0 {
			t.Errorf("%d resources from elsewhere", n)
		}
		br.shot("agents")
		lit := `#job-drawing svg .n-tool[data-name="notify_team"]`
		br.do("the job's drawing lit with its call", chromedp.Navigate(base+"#/jobs/"+first), br.waitText("h1 .status", "succeeded"),
			br.waitText(lit, "called 1×"), poll(`document.querySelector('`+lit+`').classList.contains('lit')`),
			br.waitText(`#job-drawing svg .n-harness`, "1 model call"))
		// The sub-agents a framework's spans name, with the tools their spans ran; its outermost
		// agent span is the job's agent, whatever the framework names it.
		got := evaluate[string](br, `import('/ui/agents.js').then((m) => JSON.stringify(m.litOf([
			{type: 'span', data: {span_id: 'a', parent_span_id: 'root', name: 'invoke_agent triage', attributes: {'gen_ai.agent.name': 'triage'}}},
			{type: 'span', data: {span_id: 'b', parent_span_id: 'a', name: 'invoke_agent', attributes: {'gen_ai.agent.name': 'researcher'}}},
			{type: 'span', data: {span_id: 'c', parent_span_id: 'b', name: 'execute_tool search'}},
			{type: 'span', data: {span_id: 'd', parent_span_id: 'b', name: 'x', attributes: {'gen_ai.tool.name': 'search'}}},
			{type: 'span', data: {span_id: 'e', parent_span_id: 'a', name: 'execute_tool notify_team'}},
		], 'acme-triage').subAgents))`, chromedp.EvalAwaitPromise)
		if want := `[{"name":"researcher","tools":[["search",2]]}]`; got != want {
			t.Errorf("the sub-agents from spans: %s, want %s", got, want)
		}
	})

	t.Run("usage charts whose figures are oz0 job list's", func(t *testing.T) {
		br.t = t
		// What oz0 job list --json says, summed per hour and agent, and per hour and model record.
		cmd := exec.Command(oz0, "job", "list", "--json", "--limit", "1000")
		cmd.Env = append(os.Environ(), apiv1.ContextEnv+"="+d.ctx.URL+"#"+d.ctx.Token)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("oz0 job list --json: %v", err)
		}
		var jobs []apiv1.Job
		if err := json.Unmarshal(out, &jobs); err != nil || len(jobs) < 3 {
			t.Fatalf("oz0 job list --json: %d jobs, %v", len(jobs), err)
		}
		want := func(by string) map[string]int64 {
			m := map[string]int64{}
			for _, j := range jobs {
				if j.Usage.ModelCalls == 0 && j.Usage.InputTokens == 0 {
					continue
				}
				g := j.Agent
				if by == "record" {
					g = j.ModelRecord
				}
				m[fmt.Sprintf("%d|%s", j.CreatedAt.Truncate(time.Hour).UnixMilli(), g)] += j.Usage.InputTokens + j.Usage.OutputTokens
			}
			return m
		}
		bars := `Object.fromEntries([...document.querySelectorAll('#usage-chart .seg')].map((r) => [r.dataset.bucket + '|' + r.dataset.group, Number(r.dataset.tokens)]))`
		br.do("open Usage: the chart above the tables", chromedp.Click(`nav a[data-nav="usage"]`), chromedp.WaitVisible("#usage-chart .seg"),
			chromedp.WaitVisible("#usage-agents tbody tr"), poll(`document.getElementById('chart-per').value === 'hour'`))
		if got := evaluate[map[string]int64](br, bars); !reflect.DeepEqual(got, want("agent")) {
			t.Errorf("the chart's tokens per hour by agent: %v, want oz0 job list's %v", got, want("agent"))
		}
		br.do("by model record", chromedp.SetValue("#chart-by", "record"), chromedp.Evaluate[chromedp.Void](`document.getElementById('chart-by').dispatchEvent(new Event('change'))`),
			poll(`document.querySelector('#usage-chart .seg').dataset.group === 'fake'`))
		if got := evaluate[map[string]int64](br, bars); !reflect.DeepEqual(got, want("record")) {
			t.Errorf("the chart's tokens per hour by model record: %v, want %v", got, want("record"))
		}
		var total int64
		for _, v := range want("record") {
			total += v
		}
		br.do("hover a bar: its figures", chromedp.Evaluate[chromedp.Void](`document.querySelector('#usage-chart .seg').dispatchEvent(new MouseEvent('mouseenter'))`),
			br.waitText("#chart-readout", " · fake: "+grouped(total)+" tokens ("))
		br.noUnlabelled()
		br.shot("usage-charts")

		j, err := d.client.Job(ctx, first)
		if err != nil {
			t.Fatal(err)
		}
		bar := `#calls-chart .call-bar[data-n="1"]`
		br.do("a job's calls, a bar each", chromedp.Navigate(base+"#/jobs/"+first), chromedp.WaitVisible(bar),
			chromedp.Evaluate[chromedp.Void](`document.querySelector('`+bar+`').dispatchEvent(new MouseEvent('mouseenter'))`),
			br.waitText("#calls-readout", fmt.Sprintf("call 1 · fake (fake-model) · %s in · %s out", grouped(j.Usage.InputTokens), grouped(j.Usage.OutputTokens))))
		if n := evaluate[int](br, `document.querySelectorAll('#calls-chart .call-bar').length`); int64(n) != j.Usage.ModelCalls {
			t.Errorf("%d bars, want a bar for each of the job's %d model calls", n, j.Usage.ModelCalls)
		}
	})

	t.Run("run the evals from the page; a failing case's diff; the run before", func(t *testing.T) {
		br.t = t
		file := `#eval-files .eval-file[data-file="evals/triage.yaml"]`
		br.do("open Evals", chromedp.Click(`nav a[data-nav="evals"]`), chromedp.WaitVisible(file),
			poll(`document.querySelectorAll('`+file+` tbody tr').length === 4`), br.waitText(file+` tr[data-case="double-charge"]`, "recording"))
		br.noUnlabelled()
		br.do("run all: every case passes, offline", press("#evals-run-all"), br.waitText("#eval-run h2", "every case"),
			br.waitText("#eval-run-status", "done"), br.waitText("#eval-totals", "4 passed, 0 failed"),
			br.waitText(`#eval-results tr[data-case="double-charge"]`, "passed"),
			br.waitText(`#eval-results tr[data-case="double-charge"] .asserts .a-passed[data-kind="called"]`, "✓ called"),
			br.waitText(`#eval-results tr[data-case="double-charge"] .asserts .a-passed[data-kind="equals"]`, "✓ equals"))
		firstRun := evaluate[int64](br, `Number(document.querySelector('#eval-runs tr[data-run]').dataset.run)`)

		// The prompt changes: the recorded calls no longer answer the case's, which fails with the
		// diff oz0 eval prints.
		drain(d)
		edit(t, filepath.Join(plugin, "prompts", "acme-triage.md"), "You sort support tickets", "You sort tickets for a help desk")
		d.waitLine(t, regexp.MustCompile(`^reload: acme-triage reloaded`))
		row := `#eval-results tr[data-case="double-charge"]`
		br.do("run one case: it fails, with the diff of its request", press(file+` tr[data-case="double-charge"] button.run-case`),
			br.waitText("#eval-run h2", "evals/triage.yaml · double-charge"), br.waitText("#eval-run-status", "done"),
			br.waitText(row, "failed"), br.waitText(row+` .asserts .a-failed[data-kind="job"]`, "✗ job"),
			br.waitText(row+` .asserts .a-failed[data-kind="called"]`, "✗ called"), br.waitText(row+` .asserts .a-failed[data-kind="equals"]`, "✗ equals"),
			br.waitText(`#eval-run .failure[data-case="double-charge"] .where`, "evals/triage.yaml:"),
			br.waitText(`#eval-run .failure[data-case="double-charge"] .where`, ": double-charge: job: the job failed: replay: model call 1 differs from call 1 of the recording of job "+first),
			br.waitText(`#eval-run .failure .diff .del`, "You sort support tickets"), br.waitText(`#eval-run .failure .diff .add`, "You sort tickets for a help desk"),
			br.waitText("#eval-baseline", "Now failing, since the run before: evals/triage.yaml double-charge."))
		// The page's failure is oz0 eval's, word for word.
		out, _ := oz0In(plugin, oz0, "eval", "evals/triage.yaml", "--json")
		var cli struct {
			Cases []struct {
				Case     string `json:"case"`
				Failures []struct {
					Kind, Message string
					Line, Col     int
				} `json:"failures"`
			} `json:"cases"`
		}
		// Its stdout's JSON, before the line it ends with on stderr.
		if err := json.NewDecoder(strings.NewReader(out)).Decode(&cli); err != nil || len(cli.Cases) != 4 {
			t.Fatalf("oz0 eval --json: %v\n%s", err, out)
		}
		for _, c := range cli.Cases {
			if c.Case != "double-charge" || len(c.Failures) == 0 {
				continue
			}
			f := c.Failures[0]
			line, _, _ := strings.Cut(f.Message, "\n")
			want := fmt.Sprintf("evals/triage.yaml:%d:%d: double-charge: %s: %s", f.Line, f.Col, f.Kind, line)
			if got := evaluate[string](br, `document.querySelector('#eval-run .failure[data-case="double-charge"] .where').textContent`); got != want {
				t.Errorf("the page's failure:\n%s\noz0 eval's:\n%s", got, want)
			}
			if got := evaluate[string](br, `document.querySelector('#eval-run .failure[data-case="double-charge"] pre').textContent`); !strings.Contains(f.Message, strings.TrimRight(got, "\n")) {
				t.Errorf("the page's diff:\n%s\noz0 eval's message:\n%s", got, f.Message)
			}
		}
		br.do("the runs kept", poll(`document.querySelectorAll('#eval-runs tr[data-run]').length === 2`),
			br.waitText(file+` tr[data-case="double-charge"]`, "failed"))
		br.shot("evals")
		if got := evaluate[string](br, `document.querySelector('#eval-runs tr[data-run]:last-child').dataset.run`); got != fmt.Sprint(firstRun) {
			t.Errorf("the oldest run listed: %s, want %d", got, firstRun)
		}
	})
}

// oz0In runs oz0 in dir, outside the dev server's context, and returns its output.
func oz0In(dir, exe string, args ...string) (string, error) {
	cmd := exec.Command(exe, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, apiv1.ContextEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// drain drops what oz0 dev printed so far, so that a wait for a line waits for a new one.
func drain(d *dev) {
	for {
		select {
		case <-d.lines:
		default:
			return
		}
	}
}

// press focuses the control and presses Enter, as a keyboard does: where it is on the page, which
// a job's stream and timeline may still move as they fill, does not matter.
func press(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := chromedp.Focus(sel)(ctx, t); err != nil {
			return fmt.Errorf("focus %s: %w", sel, err)
		}
		_, err := chromedp.KeyEvent("\r")(ctx, t)
		return err
	})
}
