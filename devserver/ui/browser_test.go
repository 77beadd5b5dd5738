package ui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/internal/testbin"
)

// The dev UI in a real browser: Debian's Chromium, headless, driven by chromedp against a real
// `oz0 dev` (the binary, built from this tree) serving a byo-agent plugin on the fake model. Every
// wait is a condition with a deadline (chromedp's WaitVisible and Poll), never a sleep. The
// screenshots of each page are written to $OZ0_TEST_ARTIFACTS/ui/ (make test sets it to
// test-output/), else to the test's artifact directory (go test -artifacts keeps it); -update
// writes them into docs/ui/ too, for docs/ui.md.

var update = flag.Bool("update", false, "write the screenshots into docs/ui/ as well, for docs/ui.md")

func TestMain(m *testing.M) { testbin.Main(m) }

// step is the deadline of one step in the browser: a correctness bound, far above what a loaded
// machine takes.
const step = 90 * time.Second

const guideStream = `acme-triage: Sorting the ticket.
acme-triage → notify_team {"summary":"I was charged twice for my order","team":"billing"}
acme-triage ← notify_team told the billing team: I was charged twice for my order
billing: Sorry about the double charge; we have refunded the second one.
`

func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test starts oz0 dev and Chromium")
	}
	exe := chromium(t)
	oz0 := testbin.Build(t, "github.com/orchestrator-zero/oz0/cmd/oz0")
	dir := t.TempDir()
	run(t, dir, oz0, "plugin", "new", "acme-triage", "--template", "byo-agent", "--description", "Sorts support tickets")
	plugin := filepath.Join(dir, "acme-triage")
	agent := filepath.Join(plugin, "agents", "acme-triage.yaml")
	b, err := os.ReadFile(agent)
	if err != nil {
		t.Fatal(err)
	}
	// The guide's "Uncomment requires_approval: [notify_team]": every run waits for a person.
	withApproval := strings.Replace(string(b), "# requires_approval: [notify_team]", "requires_approval: [notify_team]", 1)
	if withApproval == string(b) {
		t.Fatal("the template's agent has no commented requires_approval line")
	}
	if err := os.WriteFile(agent, []byte(withApproval), 0o644); err != nil {
		t.Fatal(err)
	}

	d := startDev(t, oz0, plugin)
	br := newBrowser(t, exe)
	ctx := context.Background()
	base := d.ctx.URL + "/ui/"

	t.Run("login", func(t *testing.T) {
		br.t = t
		br.do("open the banner's link", chromedp.Navigate(d.login), chromedp.WaitVisible("#jobs"), br.waitText("#conn", "live"))
		if path := evaluate[string](br, "location.pathname"); path != "/ui/" {
			t.Errorf("after login the page is %s, want /ui/ (the code out of the address)", path)
		}
		if html := evaluate[string](br, "document.documentElement.outerHTML + document.cookie"); strings.Contains(html, d.ctx.Token) || strings.Contains(html, "oz0t_") {
			t.Error("the page or a cookie it can read holds the bearer token")
		}
		if c := evaluate[string](br, "document.cookie"); c != "" {
			t.Errorf("the page can read cookies %q: the session cookie must be HttpOnly", c)
		}
		next := d.nextLogin(t)
		if next == d.login || !strings.HasPrefix(next, base+"login?code=") {
			t.Errorf("the next login link: %q", next)
		}
		br.do("open the used link again", chromedp.Navigate(d.login), br.waitText("body", "This login link is not valid"))
		// Before the feed has said anything, the list is not known: the page says so.
		if got := evaluate[string](br, `import('/ui/jobs.js').then((m) => {
			const root = document.createElement('div');
			m.mount(root, {info: {agents: []}, jobs: new Map()}, {query: new URLSearchParams()}).unmount();
			return root.querySelector('#jobs-empty').textContent;
		})`, chromedp.EvalAwaitPromise); got != "connecting…" {
			t.Errorf("the jobs page before the feed's first snapshot says %q, want connecting…", got)
		}
		br.do("back to the UI", chromedp.Navigate(base), chromedp.WaitVisible("#jobs"), br.waitText("#jobs-empty", "No jobs yet."))
		// A harness's text shows its format characters written out, as on a terminal: an override
		// (U+202E) would show the approval's arguments in another order than they are.
		if got := evaluate[string](br, `import('/ui/dom.js').then((m) => {
			const pre = m.h('pre', {class: 'args'}, '{"cmd":"rm -rf ~/important \u202e\u2066 txt.sgol mr\u2069\u200b\u{e0041}"}');
			const span = document.createElement('span');
			m.setText(span, 'a\u200db\ufeff\u200bc');
			return pre.textContent + ' ' + span.textContent;
		})`, chromedp.EvalAwaitPromise); got != `{"cmd":"rm -rf ~/important \u202e\u2066 txt.sgol mr\u2069\u200b\U000e0041"} a`+"\u200d"+`b\ufeff\u200bc` {
			t.Errorf("format characters in the UI's text: %q", got)
		}
		br.noUnlabelled()
		br.shot("jobs-empty")
	})

	var first string // the job started from the UI
	t.Run("start a job and see its stream", func(t *testing.T) {
		br.t = t
		br.do("open Run", chromedp.Click(`nav a[data-nav="run"]`), chromedp.WaitVisible("#run-form"))
		br.noUnlabelled()
		br.do("type the input", chromedp.SendKeys("#run-input", "I was charged twice for my order"))
		br.shot("run")
		br.do("start", chromedp.Click("#run-start"), poll(`location.hash.startsWith('#/jobs/job_')`))
		first = strings.TrimPrefix(evaluate[string](br, "location.hash"), "#/jobs/")
		br.do("the stream up to the tool call, which waits for a person",
			br.waitText("#stream", "acme-triage: Sorting the ticket.\nacme-triage → notify_team"),
			br.waitText("#waiting", "Waiting for approval: acme-triage.notify_team waits for a person"),
			chromedp.WaitVisible("#job-approvals .approval"))
		if j, err := d.client.Job(ctx, first); err != nil || j.Status != apiv1.StatusWaitingForApproval || j.InputText != "I was charged twice for my order" {
			t.Fatalf("the job the UI started: %+v %v", j, err)
		}
		br.noUnlabelled()
		br.shot("job-waiting")
	})

	t.Run("approve in the UI and see the job finish", func(t *testing.T) {
		br.t = t
		card := `#approvals .approval[data-approval]`
		br.do("open Approvals", chromedp.Click(`nav a[data-nav="approvals"]`), chromedp.WaitVisible(card),
			br.waitText(card, "acme-triage.notify_team"), br.waitText(card+" .args", `{"summary":"I was charged twice for my order","team":"billing"}`),
			br.waitText("#approval-count", "1"))
		br.noUnlabelled()
		br.shot("approvals")
		// By keyboard: the button takes the focus and Enter presses it.
		br.do("approve once", chromedp.Focus(card+` button[data-scope="once"]`), chromedp.KeyEvent("\r"), chromedp.WaitVisible("#approvals-empty"))
		br.do("open the job from the list", chromedp.Click(`nav a[data-nav="jobs"]`), chromedp.Click(`#jobs a[href="#/jobs/`+first+`"]`),
			br.waitText("#result", "billing: Sorry about the double charge; we have refunded the second one."),
			br.waitText("#stream", "\nbilling: Sorry about the double charge; we have refunded the second one.\n"))
		if got := evaluate[string](br, streamText); got != guideStream {
			t.Errorf("the live stream:\n%s\nwant the lines oz0 run shows:\n%s", got, guideStream)
		}
		if j, _ := d.client.Job(ctx, first); j.Status != apiv1.StatusSucceeded {
			t.Errorf("the job after the approval: %s", j.Status)
		}
	})

	t.Run("the timeline shows a model call's tokens", func(t *testing.T) {
		br.t = t
		j, err := d.client.Job(ctx, first)
		if err != nil || j.Usage.ModelCalls == 0 || j.Usage.InputTokens == 0 {
			t.Fatalf("the job's usage: %+v %v", j.Usage, err)
		}
		model := "#timeline .span.k-model"
		tokens := fmt.Sprintf("%s in · %s out", grouped(j.Usage.InputTokens), grouped(j.Usage.OutputTokens))
		br.do("the model call and the tool call on the timeline",
			br.waitText(model, "fake · "+j.ModelName), br.waitText(model+" .detail", tokens), br.waitText(model+" .detail", "status 200"),
			br.waitText("#timeline .span.k-tool", "notify_team"), br.waitText("#timeline .span.k-tool .detail", "allowed by a person"),
			br.waitText("#timeline .span.k-tool .detail", "→ told the billing team"),
			br.waitText("#timeline .span.k-result", "billing: Sorry"))
		// The first model call began before the tool call it asked for, though it was metered
		// (and so is in the trace) after: its row comes first, placed by started_at.
		if order := evaluate[string](br, `[...document.querySelectorAll('#timeline .span')].map((e) => e.dataset.kind).filter((k) => k === 'model' || k === 'tool').join(' ')`); order != "model tool" {
			t.Errorf("the timeline's model and tool rows, in order: %q, want %q", order, "model tool")
		}
		// How the session was made, and when, as its record says.
		if j.Session == nil {
			t.Fatal("the job has no session start")
		}
		label := "session " + j.Session.Start
		br.do("the session's start on the timeline", br.waitText("#timeline .span.k-session", label))
		br.do("expand the model call to its JSON", chromedp.Click(model+" summary"), chromedp.WaitVisible(model+" pre.json"),
			br.waitText(model+" pre.json", fmt.Sprintf(`"input_tokens": %d`, j.Usage.InputTokens)))
		br.do("the job's usage by model record", br.waitText("#job-usage tbody tr", "fake"), br.waitText("#job-usage tbody tr", grouped(j.Usage.InputTokens)))
		if v := evaluate[string](br, `document.getElementById('trace-command').value`); v != "oz0 job trace "+first {
			t.Errorf("the trace command: %q", v)
		}
		br.do("copy the trace command", chromedp.Click("#copy-trace"), poll(`document.querySelector('.copied').textContent !== ''`))
		br.shot("job")
	})

	t.Run("a long log read in pieces is one row of the timeline", func(t *testing.T) {
		br.t = t
		// The pieces as the node stores them, each but the last with more: true; stderr between
		// them does not break the row.
		got := evaluate[string](br, `import('/ui/timeline.js').then((m) => JSON.stringify(m.spans([
			{seq: 1, time: '2026-12-01T10:00:00Z', type: 'log', data: {level: 'info', message: 'aa', more: true}},
			{seq: 2, time: '2026-12-01T10:00:01Z', type: 'stderr', data: {line: 'x'}},
			{seq: 3, time: '2026-12-01T10:00:02Z', type: 'log', data: {level: 'info', message: 'bb', more: true}},
			{seq: 4, time: '2026-12-01T10:00:03Z', type: 'log', data: {level: 'info', message: 'cc'}},
			{seq: 5, time: '2026-12-01T10:00:04Z', type: 'log', data: {level: 'warning', message: 'next'}},
		]).filter((r) => r.kind === 'log').map((r) => r.detail)))`, chromedp.EvalAwaitPromise)
		if want := `["aabbcc","next"]`; got != want {
			t.Errorf("the timeline's log rows: %s, want %s", got, want)
		}
	})

	var second string
	t.Run("the jobs list updates live; deny with a reason", func(t *testing.T) {
		br.t = t
		// A secret in the input: masked in every view, as in the store.
		const secret = "hunter2-oz0-ui-secret"
		if _, err := d.client.SetSecret(ctx, "ACME_DB_PASSWORD", secret, ""); err != nil {
			t.Fatal(err)
		}
		br.do("open Jobs", chromedp.Click(`nav a[data-nav="jobs"]`), chromedp.WaitVisible(`#jobs tr[data-job="`+first+`"]`))
		j, err := d.client.CreateJob(ctx, apiv1.JobRequest{Agent: "acme-triage", Input: "I was charged twice for my order; my password is " + secret})
		if err != nil {
			t.Fatal(err)
		}
		second = j.ID
		row := `#jobs tr[data-job="` + second + `"]`
		br.do("the new job appears, then waits", chromedp.WaitVisible(row), br.waitText(row+" .status", "waiting for approval"))
		br.shot("jobs")

		// The answer comes from a second tab: the first one's list follows it.
		tab := br.tab()
		card := `#approvals .approval[data-approval]`
		tab.do("open Approvals in a second tab", chromedp.Navigate(base+"#/approvals"), chromedp.WaitVisible(card), tab.waitText(card+" .meta", second))
		if args := evaluate[string](tab, `document.querySelector('`+card+` .args').textContent`); strings.Contains(args, secret) || !strings.Contains(args, "***") {
			t.Errorf("the arguments show the secret: %s", args)
		}
		tab.do("deny with a reason, by keyboard", chromedp.SendKeys(card+" input[name=reason]", "billing is told by a person\r"), chromedp.WaitVisible("#approvals-empty"))
		tab.close()

		br.do("the first tab's list shows the job's end", br.waitText(row+" .status", "succeeded"))
		br.do("open the denied job", chromedp.Click(row+" a"),
			br.waitText("#stream", "acme-triage ✗ notify_team refused by a person: billing is told by a person\n"),
			br.waitText("#stream", "acme-triage: (The team was not told: billing is told by a person)"),
			br.waitText("#timeline .span.k-tool .detail", "denied by a person: billing is told by a person"))
		if text := evaluate[string](br, "document.body.innerText"); strings.Contains(text, secret) || !strings.Contains(text, "***") {
			t.Error("the job's page shows the secret, or nothing masked")
		}
		br.shot("job-denied")
	})

	t.Run("cancel from the job's page", func(t *testing.T) {
		br.t = t
		j, err := d.client.CreateJob(ctx, apiv1.JobRequest{Agent: "acme-triage", Input: "I was charged twice for my order"})
		if err != nil {
			t.Fatal(err)
		}
		br.do("open the waiting job", chromedp.Navigate(base+"#/jobs/"+j.ID), chromedp.WaitVisible("#job-approvals .approval"),
			chromedp.Click("#cancel-job"), br.waitText("#failure", "stopped on request"), br.waitText("h1 .status", "cancelled"),
			poll(`document.getElementById('approval-count').hidden`), chromedp.WaitNotPresent("#job-approvals .approval"))
		if got, _ := d.client.Job(ctx, j.ID); got.Status != apiv1.StatusCancelled {
			t.Errorf("the job after Cancel: %s", got.Status)
		}
	})

	t.Run("filter the jobs by status; a reload keeps the filter", func(t *testing.T) {
		br.t = t
		all, err := d.client.Jobs(ctx, "", "", 100)
		if err != nil {
			t.Fatal(err)
		}
		cancelled := 0
		for _, j := range all {
			if j.Status == apiv1.StatusCancelled {
				cancelled++
			}
		}
		if cancelled == 0 || cancelled == len(all) {
			t.Fatalf("the filter needs cancelled jobs and others: %d of %d", cancelled, len(all))
		}
		choose := func(value string) chromedp.Action[chromedp.Void] {
			return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const s = document.getElementById('filter-status');
				s.value = %q; s.dispatchEvent(new Event('change')); })()`, value))
		}
		rows := `document.querySelectorAll('#jobs-body tr')`
		onlyCancelled := fmt.Sprintf(`%s.length === %d && [...%s].every((tr) => tr.querySelector('.status').textContent === 'cancelled')`, rows, cancelled, rows)
		br.do("show the cancelled jobs", chromedp.Navigate(base+"#/jobs"), chromedp.WaitVisible("#jobs-body tr"),
			choose("cancelled"), poll(`location.hash === '#/jobs?status=cancelled'`), poll(onlyCancelled))
		br.do("reload: still filtered", chromedp.Reload(), chromedp.WaitVisible("#filter-status"),
			poll(`document.getElementById('filter-status').value === 'cancelled'`), poll(onlyCancelled))
		br.do("a status no job has", choose("timed_out"), poll(rows+`.length === 0`),
			br.waitText("#jobs-empty", "No job matches the filters."))
		br.do("all statuses again", choose(""), poll(fmt.Sprintf(`%s.length === %d`, rows, len(all))))
	})

	t.Run("usage", func(t *testing.T) {
		br.t = t
		agents, err := get[apiv1.UsageReport](d, "/api/v1/usage")
		if err != nil || len(agents.Usage) != 1 {
			t.Fatalf("usage from the API: %+v %v", agents, err)
		}
		jobs, err := get[apiv1.UsageReport](d, "/api/v1/usage?by=job")
		if err != nil || len(jobs.Usage) < 2 {
			t.Fatalf("usage by job from the API: %+v %v", jobs, err)
		}
		u, j := agents.Usage[0], jobs.Usage[0]
		row := "#usage-agents tbody tr"
		br.do("open Usage", chromedp.Click(`nav a[data-nav="usage"]`), chromedp.WaitVisible(row),
			br.waitText(row, "acme-triage"), br.waitText(row, u.Record), br.waitText(row, grouped(u.InputTokens)),
			br.waitText(`#usage-jobs tbody tr[data-key^="acme-triage|`+j.Job+`"]`, grouped(j.InputTokens)))
		if n := evaluate[int](br, `document.querySelectorAll('#usage-jobs tbody tr').length`); n != len(jobs.Usage) {
			t.Errorf("%d rows per job, want %d", n, len(jobs.Usage))
		}
		br.shot("usage")
	})

	t.Run("quota bars", func(t *testing.T) {
		br.t = t
		// A daily token quota of twice what the jobs used so far: the bar is half full; a record's
		// monthly cost quota on a record with no calls: empty. Set through the API, as oz0 tenant
		// quota set does with oz0 dev running.
		var used int64
		jobs, err := get[apiv1.UsageReport](d, "/api/v1/usage")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range jobs.Usage {
			used += r.InputTokens + r.OutputTokens + r.CacheReadTokens + r.CacheCreationTokens
		}
		for _, q := range []apiv1.Quota{{Name: apiv1.QuotaTokensPerDay, Limit: float64(2 * used)}, {Record: "anthropic", Name: apiv1.QuotaCostPerMonth, Limit: 20}} {
			if _, err := d.client.SetQuota(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := d.client.KillTenant(ctx, "anthropic"); err != nil {
			t.Fatal(err)
		}
		day := `#quotas li[data-key="tenant.tokens_per_day"]`
		month := `#quotas li[data-key="record.anthropic.cost_usd_per_month"]`
		br.do("the quotas on Usage", chromedp.Navigate(base+"#/usage"), chromedp.Reload(), chromedp.WaitVisible(day),
			br.waitText(day, "tenant.tokens_per_day"), br.waitText(day, grouped(used)+" of "+grouped(2*used)),
			br.waitText(month, "$0 of $20"),
			br.waitText("#tenant-kills", "Every model call of record anthropic is stopped since"))
		if v := evaluate[float64](br, `document.querySelector('`+day+` meter').value / document.querySelector('`+day+` meter').max`); v != 0.5 {
			t.Errorf("the day's bar is %v full, want 0.5", v)
		}
		if v := evaluate[float64](br, `document.querySelector('`+month+` meter').value`); v != 0 {
			t.Errorf("the month's bar is at %v, want 0", v)
		}
		if reached := evaluate[bool](br, `document.querySelector('`+day+`').classList.contains('reached')`); reached {
			t.Error("a quota half used shows as reached")
		}
		br.noUnlabelled()
		br.shot("usage-quotas")
		// Lifted and resumed: the page says so once read again.
		for _, q := range []apiv1.Quota{{Name: apiv1.QuotaTokensPerDay}, {Record: "anthropic", Name: apiv1.QuotaCostPerMonth}} {
			if _, err := d.client.RemoveQuota(ctx, q.Record, q.Name); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := d.client.ResumeTenant(ctx, "anthropic"); err != nil {
			t.Fatal(err)
		}
		br.do("no quotas", chromedp.Reload(), br.waitText("#quotas-empty", "No quotas"),
			poll(`document.querySelectorAll('#quotas li, #tenant-kills li').length === 0`))
	})

	t.Run("another origin is refused", func(t *testing.T) {
		br.t = t
		before, err := d.client.Jobs(ctx, "", "", 100)
		if err != nil {
			t.Fatal(err)
		}
		// A page on another port of loopback: the same site, so the browser sends the cookie,
		// but another origin.
		// A plain POST (as a form sends it: no preflight, the cookie goes along) and a JSON one
		// (preflighted); the page says when both are done. What refuses each here is the first
		// of the UI's checks it fails (the CSRF token the page cannot have; the preflight); a
		// browser cannot send the token from another origin, so the Origin check on its own is
		// TestRefusals' to prove, with requests a browser would not make.
		evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<!doctype html><title>evil</title><p id="done"></p>
<script>
const job = '{"agent":"acme-triage","input":"from another origin"}';
Promise.allSettled([
  fetch(%[1]q, {method: 'POST', mode: 'no-cors', credentials: 'include', body: job}),
  fetch(%[1]q, {method: 'POST', credentials: 'include', headers: {'Content-Type': 'application/json'}, body: job}),
]).then((rs) => { document.getElementById('done').textContent = 'sent: ' + rs.map((r) => r.status).join(' '); });
</script>`, base+"api/v1/jobs")
		}))
		defer evil.Close()
		br.do("a page of another origin posts to the UI", chromedp.Navigate(evil.URL), br.waitText("#done", "sent: "))
		after, err := d.client.Jobs(ctx, "", "", 100)
		if err != nil || len(after) != len(before) {
			t.Errorf("jobs before %d, after %d (%v): a cross-origin write went through", len(before), len(after), err)
		}
	})

	// oz0 dev, started with no flag, kept every model call: opened on the timeline, a call reads
	// as a conversation: the prompt's text as the system prompt, the ticket as the user's message,
	// the model's answer. In Anthropic's format (the template's, not streamed), then in OpenAI's,
	// streamed.
	prompt, err := os.ReadFile(filepath.Join(plugin, "prompts", "acme-triage.md"))
	if err != nil {
		t.Fatal(err)
	}
	system := strings.TrimSpace(string(prompt))
	const answer = `{"team":"billing","reply":"Sorry about the double charge; we have refunded the second one."}`
	call := "#timeline .span.k-model .call"
	openCall := func(br *browser, job string) {
		br.t.Helper()
		br.do("open the job and its model call", chromedp.Navigate(base+"#/jobs/"+job), chromedp.WaitVisible("#timeline .span.k-model summary"),
			chromedp.Click("#timeline .span.k-model summary"), chromedp.WaitVisible(call+" .role-system"))
		if got := evaluate[string](br, `document.querySelector('`+call+` .role-system pre.text').textContent`); strings.TrimSpace(got) != system {
			br.t.Errorf("the system prompt shown:\n%s\nwant the text of prompts/acme-triage.md:\n%s", got, system)
		}
	}

	t.Run("a model call as a conversation (Anthropic Messages)", func(t *testing.T) {
		br.t = t
		j, err := d.client.Job(ctx, first)
		if err != nil {
			t.Fatal(err)
		}
		openCall(br, first)
		br.do("the ticket as the user's message, the answer",
			br.waitText(call+` .msg[data-role="user"]`, "<ticket>\nI was charged twice for my order\n</ticket>"),
			br.waitText(call+" .role-answer", "stop reason end_turn"), br.waitText(call+" .role-answer pre.text", answer),
			br.waitText(call+" .call-facts", "anthropic-messages"), br.waitText(call+" .call-facts", fmt.Sprintf("%s in · %s out", grouped(j.Usage.InputTokens), grouped(j.Usage.OutputTokens))))
		br.noUnlabelled()
		br.shot("job-call")
		br.do("the Raw tab: the request and the answer as kept", chromedp.Click(call+" .t-raw"), chromedp.WaitVisible(call+" .raw-request"),
			br.waitText(call+" .raw-request", `"system": "You sort support tickets`), br.waitText(call+" .raw-answer", `"stop_reason": "end_turn"`))
	})

	t.Run("a streamed model call as a conversation (OpenAI Chat), compared with another job's", func(t *testing.T) {
		br.t = t
		// The harness speaks OpenAI's format now, and streams the model's answer.
		manifest := filepath.Join(plugin, "oz0-plugin.yaml")
		edit(t, manifest, "formats: [anthropic-messages]", "formats: [openai-chat]")
		edit(t, filepath.Join(plugin, "src", "acme_triage", "agent.py"), "complete=session.complete", "complete=lambda p: session.complete(p, say=True)")
		d.waitLine(t, regexp.MustCompile(`^reload: acme-triage reloaded`))
		// Model and harness text is text on the page, never HTML.
		const ticket = `I was charged twice for my order <img id="pwned" src="x">`
		j, err := d.client.CreateJob(ctx, apiv1.JobRequest{Agent: "acme-triage", Input: ticket})
		if err != nil {
			t.Fatal(err)
		}
		d.approveAll(t, j.ID)
		openCall(br, j.ID)
		br.do("the user's message, the streamed answer assembled",
			br.waitText(call+` .msg[data-role="user"]`, "<ticket>\n"+ticket+"\n</ticket>"),
			br.waitText(call+" .role-answer h4", "streamed, "), br.waitText(call+" .role-answer h4", "stop reason stop"),
			br.waitText(call+" .role-answer pre.text", answer), br.waitText(call+" .call-facts", "openai-chat, streamed"))
		if evaluate[bool](br, `document.getElementById('pwned') !== null`) {
			t.Error("text from the job became HTML")
		}
		br.do("compare with the first job's call", chromedp.Click(call+" .t-compare"), chromedp.WaitVisible(call+" .cmp-job"),
			chromedp.SetValue(call+" .cmp-job", first), chromedp.SetValue(call+" .cmp-n", "1"), chromedp.Click(call+" button.compare"),
			br.waitText(call+" .diff-result", "What changed from call 1 of "+first),
			br.waitText(call+" .diff .del", "request: - POST /anthropic/v1/messages"), br.waitText(call+" .diff", "+ POST /openai/chat/completions"))
		br.shot("job-call-compare")
	})

	t.Run("a failed job's traceback is one block", func(t *testing.T) {
		br.t = t
		edit(t, filepath.Join(plugin, "src", "acme_triage", "agent.py"), `    return f"told the {team} team: {summary}"`,
			`    accounts = {"billing": {"id": 1}}
    return accounts[team]["account"]`)
		j, err := d.client.CreateJob(ctx, apiv1.JobRequest{Agent: "acme-triage", Input: "I was charged twice for my order"})
		if err != nil {
			t.Fatal(err)
		}
		if j, err := d.approveUntilEnd(t, j.ID); err != nil || j.Status != apiv1.StatusFailed || len(j.Traceback) == 0 {
			t.Fatalf("the job: %+v %v", j, err)
		}
		br.do("the job fails, its traceback whole under its reason", chromedp.Navigate(base+"#/jobs/"+j.ID),
			br.waitText("h1 .status", "failed"), br.waitText("#failure", "KeyError: 'account'"),
			br.waitText("#traceback", "Traceback (most recent call last):\n"),
			br.waitText("#traceback", `File "src/acme_triage/agent.py", line 15, in notify_team`+"\n"+`    return accounts[team]["account"]`),
			br.waitText("#traceback", "\nKeyError: 'account'"))
		// The stderr the traceback came as is one row of the timeline, opened to its lines; the
		// error's row opens to the traceback too.
		stderr := `.timeline details[data-kind="stderr"]`
		br.do("one row of stderr", poll(`document.querySelectorAll('`+stderr+`').length === 1`),
			br.waitText(stderr+" .label", " lines"), br.waitText(stderr+" .detail", "KeyError: 'account'"),
			chromedp.Click(stderr+" summary"), br.waitText(stderr+" pre.lines", `line 15, in notify_team`+"\n"),
			br.waitText(`.timeline details[data-kind="error"] pre.lines`, "KeyError: 'account'"))
		if evaluate[bool](br, `document.querySelector('`+stderr+` pre.lines').hidden`) {
			t.Error("the stderr row's lines are hidden")
		}
		br.noUnlabelled()
		br.shot("job-traceback")
	})
}

// edit replaces old with new in the file, which must hold old.
func edit(t *testing.T, file, old, new string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %q", file, old)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// streamText is the live stream, as oz0 run prints it to stdout.
const streamText = `document.getElementById('stream').textContent`

// grouped writes a count as the UI does: 12345 is 12,345.
func grouped(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// chromium is the browser to drive: the first of these on PATH (scripts/test-deps.sh looks for the
// same, and installs Debian's chromium when there is none).
func chromium(t *testing.T) string {
	for _, name := range []string{os.Getenv("OZ0_CHROMIUM"), "chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium on CI: scripts/test-deps.sh (make test runs it) installs Debian's chromium")
	}
	t.Skip("no Chromium: install Debian's chromium (make test does) or set OZ0_CHROMIUM to a Chromium or Chrome binary")
	return ""
}

func run(t *testing.T, dir, exe string, args ...string) {
	t.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(exe), strings.Join(args, " "), err, out)
	}
}

// dev is a running `oz0 dev`.
type dev struct {
	ctx    apiv1.Context
	login  string // the banner's ui link
	client *client.Client
	lines  chan string // what it prints after the banner
	log    string      // its stderr
}

var (
	uiLine   = regexp.MustCompile(`^  ui +(http://\S+/ui/login\?code=\S+)`)
	nextLine = regexp.MustCompile(`^ui: a browser logged in; the next login link is (http://\S+)$`)
)

func startDev(t *testing.T, exe, dir string, args ...string) *dev {
	t.Helper()
	cmd := exec.Command(exe, append([]string{"dev", "--ephemeral"}, args...)...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, apiv1.ContextEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	d := &dev{lines: make(chan string, 1000), log: filepath.Join(t.TempDir(), "dev.log")}
	logf, err := os.Create(d.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			d.lines <- sc.Text()
		}
		close(d.lines)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("oz0 dev: %v", err)
			}
		case <-time.After(step):
			cmd.Process.Kill()
			t.Errorf("oz0 dev did not stop on SIGINT")
		}
		if t.Failed() {
			b, _ := os.ReadFile(d.log)
			t.Logf("oz0 dev's log:\n%s", b)
		}
	})
	deadline := time.After(step)
	for d.ctx.URL == "" {
		select {
		case line, ok := <-d.lines:
			if !ok {
				b, _ := os.ReadFile(d.log)
				t.Fatalf("oz0 dev stopped before it was ready:\n%s", b)
			}
			if m := uiLine.FindStringSubmatch(line); m != nil {
				d.login = m[1]
			}
			if v, ok := strings.CutPrefix(line, "export "+apiv1.ContextEnv+"="); ok {
				if d.ctx, err = apiv1.ParseContext(v); err != nil {
					t.Fatal(err)
				}
			}
		case <-deadline:
			t.Fatal("oz0 dev was not ready")
		}
	}
	if d.login == "" {
		t.Fatal("the banner has no ui line")
	}
	d.client = client.New(d.ctx)
	return d
}

// nextLogin waits for the line that gives the next login link, after a login.
func (d *dev) nextLogin(t *testing.T) string {
	t.Helper()
	return d.waitLine(t, nextLine)[1]
}

// waitLine waits for a line of oz0 dev's output that matches re, and returns the match.
func (d *dev) waitLine(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.After(step)
	for {
		select {
		case line, ok := <-d.lines:
			if !ok {
				t.Fatal("oz0 dev stopped")
			}
			if m := re.FindStringSubmatch(line); m != nil {
				return m
			}
		case <-deadline:
			t.Fatalf("oz0 dev printed no line like %s", re)
		}
	}
}

// approveAll approves the job's calls as they wait, until it ends, and fails the test unless it
// succeeded.
func (d *dev) approveAll(t *testing.T, job string) {
	t.Helper()
	if j, err := d.approveUntilEnd(t, job); err != nil || j.Status != apiv1.StatusSucceeded {
		t.Fatalf("job %s: %s %s %v", job, j.Status, j.Reason, err)
	}
}

// approveUntilEnd approves the job's calls as they wait, until it ends, and returns its record.
func (d *dev) approveUntilEnd(t *testing.T, job string) (apiv1.Job, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), step)
	defer cancel()
	err := d.client.Events(ctx, job, 0, func(ev apiv1.Event) error {
		if ev.Type != apiv1.EventStatus || !strings.Contains(string(ev.Data), `"status":"waiting_for_approval"`) {
			return nil
		}
		as, err := d.client.Approvals(ctx, false)
		for _, a := range as {
			if a.Job == job {
				_, _, err = d.client.Approve(ctx, a.ID, "once")
			}
		}
		return err
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d.client.Job(ctx, job)
}

// get reads a call of the control API with the token, as the CLI does.
func get[T any](d *dev, path string) (T, error) {
	var v T
	req, _ := http.NewRequest("GET", d.ctx.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+d.ctx.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return v, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return v, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return v, json.NewDecoder(resp.Body).Decode(&v)
}

// browser is one tab of a headless Chromium.
type browser struct {
	t      *testing.T
	ctx    context.Context
	cancel context.CancelFunc
	shots  []string // the directories the screenshots go to
}

func newBrowser(t *testing.T, exe string) *browser {
	t.Helper()
	profile, err := os.MkdirTemp("", "oz0-ui-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
		// Nothing but the pages under test: this machine's network is closed.
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	b := &browser{t: t, ctx: ctx, cancel: cancel}
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		os.RemoveAll(profile)
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser, with no deadline: it lives as long as ctx
		t.Fatalf("cannot start %s: %v", exe, err)
	}
	dir := os.Getenv("OZ0_TEST_ARTIFACTS")
	if dir != "" {
		dir = filepath.Join(dir, "ui")
	} else {
		dir = t.ArtifactDir()
	}
	b.shots = append(b.shots, dir)
	if *update {
		b.shots = append(b.shots, filepath.Join("..", "..", "docs", "ui"))
	}
	for _, d := range b.shots {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// tab opens a second tab of the same browser, with its cookies.
func (b *browser) tab() *browser {
	ctx, cancel := chromedp.NewContext(b.ctx)
	// Made with no deadline: a tab lives as long as the context of its first action.
	if err := chromedp.Do(ctx); err != nil {
		b.t.Fatalf("cannot open a tab: %v", err)
	}
	return &browser{t: b.t, ctx: ctx, cancel: cancel}
}

func (b *browser) close() { b.cancel() }

// do runs the actions of one step, within the step's deadline; on failure it keeps a screenshot
// and the page's text.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, step)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		if len(b.shots) > 0 {
			b.shot("failed")
		}
		ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		defer cancel()
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText + "\nthe stream: " + JSON.stringify(document.getElementById('stream')?.textContent)`))
		b.t.Fatalf("%s: %v\nthe page:\n%s", what, err, text)
	}
}

// waitText waits until the first element sel selects holds text.
func (b *browser) waitText(sel, text string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.PollFunction[chromedp.Void](`(sel, text) => { const e = document.querySelector(sel); return e !== null && e.textContent.includes(text); }`,
			chromedp.WithPollingArgs(sel, text), chromedp.WithPollingTimeout(step))(ctx, t)
		if errors.Is(err, context.DeadlineExceeded) || err != nil {
			return fmt.Errorf("waiting for %q in %s: %w", text, sel, err)
		}
		return nil
	})
}

// poll waits until the expression is true.
func poll(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(step))
}

// noUnlabelled fails the test for a control of the page that has no label: the UI is used by
// keyboard and screen readers too.
func (b *browser) noUnlabelled() {
	b.t.Helper()
	bare := evaluate[[]string](b, `[...document.querySelectorAll('input, select, textarea, button')]
		.filter((e) => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.textContent.trim())
		.map((e) => e.outerHTML)`)
	for _, e := range bare {
		b.t.Errorf("a control without a label: %s", e)
	}
}

// shot saves a screenshot of the whole page.
func (b *browser) shot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, step)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	for _, d := range b.shots {
		if name == "failed" && d != b.shots[0] {
			continue
		}
		if err := os.WriteFile(filepath.Join(d, name+".png"), png, 0o644); err != nil {
			b.t.Error(err)
		}
	}
}

func evaluate[T any](b *browser, expr string, opts ...chromedp.EvaluateOption) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, step)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}
