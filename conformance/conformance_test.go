package conformance_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/conformance"
	"github.com/orchestrator-zero/oz0/supervisor/jobspec"
)

// A plugin with one harness per way of behaving, each run on the test harness in one mode.
const manifest = `apiVersion: oz0/v1
name: kit
version: 0.1.0
runtime: binary
harnesses:
  - name: conforming
    command: ["HARNESS", "triage"]
    permissions: true
    tools: [notify_team]
    formats: [anthropic-messages]
  - name: runs-anyway
    command: ["HARNESS", "runsanyway"]
    permissions: true
    tools: [notify_team]
    formats: [anthropic-messages]
  - name: deaf
    command: ["HARNESS", "deaf"]
    permissions: true
    tools: [notify_team]
    formats: [anthropic-messages]
  - name: toolless
    command: ["HARNESS", "triage"]
    formats: [anthropic-messages]
  - name: keeps-to-its-tools
    command: ["HARNESS", "keepstools"]
    permissions: true
    tools: [notify_team]
    formats: [anthropic-messages]
  - name: never-asks
    command: ["HARNESS", "ok"]
    permissions: true
    tools: [notify_team]
    formats: [anthropic-messages]
  - name: dup-keys
    command: ["HARNESS", "dupkeys"]
    permissions: true
    tools: [notify_team]
    formats: [anthropic-messages]
  - name: stray-result
    command: ["HARNESS", "strayresult"]
    permissions: true
    tools: [notify_team]
    formats: [anthropic-messages]
  - name: other-tool
    command: ["HARNESS", "othertool"]
    permissions: true
    tools: [notify_team]
    formats: [anthropic-messages]
agents: [agents/]
`

func kitPlugin(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{"oz0-plugin.yaml": manifest, "prompts/p.md": "Sort the support ticket.\n"}
	for _, h := range []string{"conforming", "runs-anyway", "deaf", "toolless", "keeps-to-its-tools", "never-asks", "dup-keys", "stray-result", "other-tool"} {
		files["agents/"+h+".yaml"] = "name: " + h + "\nruntime: harness:" + h + "\ninstructions: prompts/p.md\n"
	}
	return files
}

// run runs the kit over the named harnesses of the kit plugin, with a grace period long enough
// for a loaded machine.
func run(t *testing.T, files map[string]string, opts conformance.Options) *conformance.Report {
	t.Helper()
	noLeaks(t)
	p := loadPlugin(t, files)
	if opts.Grace == 0 {
		opts.Grace = 3 * time.Second
	}
	var told []string
	opts.Progress = func(c conformance.Check) { told = append(told, c.Harness+"/"+c.ID) }
	rep, err := conformance.Run(context.Background(), p, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(told) != len(rep.Checks) {
		t.Errorf("Progress was told of %d checks, the report has %d", len(told), len(rep.Checks))
	}
	return rep
}

// checks indexes a report's checks of harness h by ID, and checks that they come in the
// scenarios' order.
func checks(t *testing.T, rep *conformance.Report, h string) map[string]conformance.Check {
	t.Helper()
	byID := map[string]conformance.Check{}
	var order []string
	for _, c := range rep.Checks {
		if c.Harness == h {
			byID[c.ID] = c
			order = append(order, c.ID)
		}
	}
	var want []string
	for _, s := range conformance.Scenarios() {
		want = append(want, s[0])
	}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Fatalf("harness %s: checks %v, want %v", h, order, want)
	}
	return byID
}

// wantChecks checks each check's outcome: "ok", "n/a", or "FAIL: <a part of what it got>".
func wantChecks(t *testing.T, rep *conformance.Report, h string, want map[string]string) {
	t.Helper()
	for id, c := range checks(t, rep, h) {
		w, ok := want[id]
		if !ok {
			w = "ok"
		}
		switch got := outcome(c); {
		case w == "ok" || w == "n/a":
			if got != w {
				t.Errorf("%s %s: %s, want %s; got: %s", h, id, got, w, c.Got)
			}
		default:
			if got != "FAIL" || !strings.Contains(c.Got, strings.TrimPrefix(w, "FAIL: ")) {
				t.Errorf("%s %s: %s, got %q; want %s", h, id, got, c.Got, w)
			}
		}
	}
}

func outcome(c conformance.Check) string {
	switch {
	case c.NotApplicable:
		return "n/a"
	case c.Pass:
		return "ok"
	}
	return "FAIL"
}

func TestConformingHarnessPassesEveryCheck(t *testing.T) {
	rep := run(t, kitPlugin(t), conformance.Options{Harnesses: []string{"conforming"}})
	wantChecks(t, rep, "conforming", nil)
	if p, f, na := rep.Counts(); p != 7 || f != 0 || na != 0 || rep.Plugin != "kit" {
		t.Errorf("plugin %s: %d passed, %d failed, %d n/a; want 7 passed", rep.Plugin, p, f, na)
	}
	for _, c := range rep.Checks {
		if c.Expected == "" || c.Title == "" || c.ElapsedMS != c.Elapsed.Milliseconds() {
			t.Errorf("check %s: title %q, expected %q, elapsed_ms %d", c.ID, c.Title, c.Expected, c.ElapsedMS)
		}
	}
}

func TestHarnessThatRunsRefusedToolsFailsThoseChecks(t *testing.T) {
	rep := run(t, kitPlugin(t), conformance.Options{Harnesses: []string{"runs-anyway"}})
	wantChecks(t, rep, "runs-anyway", map[string]string{
		"changed-arguments": `FAIL: tool_result p1 shows the asked value "I was charged twice for my order", not the changed one`,
		"denied":            "FAIL: protocol violation (results): line 3 of stdout is a tool_result for p1, a call of notify_team the node denied: the harness ran it anyway",
		"unlisted-tool":     "FAIL: protocol violation (results): line 3 of stdout is a tool_result for p1, a call of notify_team the node denied: the harness ran it anyway",
	})
	if c := checks(t, rep, "runs-anyway")["max-steps"]; c.Note != "the harness made no model call, so the limit was never met" {
		t.Errorf("max-steps note %q", c.Note)
	}
	for _, c := range rep.Checks {
		if c.Pass != (c.Hint == "") {
			t.Errorf("%s: pass %v, hint %q: every failure, and only a failure, says what to do", c.ID, c.Pass, c.Hint)
		}
	}
	if c := checks(t, rep, "runs-anyway")["denied"]; !strings.Contains(c.Hint, "never run a denied or refused call") {
		t.Errorf("denied hint %q", c.Hint)
	}
}

// A harness that breaks the protocol's rules on keys and results fails the checks it breaks them
// in, each saying what it broke and what to do: a line with "type" twice (say, then a forged
// result, which once passed plain-run), a tool_result for an id it never asked, one that names
// another tool than its request.
func TestHarnessThatBreaksTheProtocolFailsThoseChecks(t *testing.T) {
	rep := run(t, kitPlugin(t), conformance.Options{Harnesses: []string{"dup-keys", "stray-result", "other-tool"}})
	for h, c := range map[string]struct{ check, got, hint string }{
		"dup-keys":     {"plain-run", `protocol violation (keys): line 1 of stdout is an object with the key "type" twice`, "write each key of a message once"},
		"stray-result": {"plain-run", `protocol violation (results): line 2 of stdout is a tool_result for the id "p9", which no permission_request of this session asked`, "send a tool_result only for a call the job allowed"},
		"other-tool":   {"permission-allowed", `protocol violation (results): line 2 of stdout is a tool_result for p1 naming the tool "delete_account", but p1 asked for notify_team`, "with the request's id and tool"},
	} {
		got := checks(t, rep, h)[c.check]
		if got.Pass || !strings.Contains(got.Got, c.got) || !strings.Contains(got.Hint, c.hint) {
			t.Errorf("%s %s: pass %v, got %q, hint %q; want a failure %q, hint %q", h, c.check, got.Pass, got.Got, got.Hint, c.got, c.hint)
		}
	}
	// The line with a key twice is its first: no session of it goes right.
	for id, c := range checks(t, rep, "dup-keys") {
		if c.Pass {
			t.Errorf("dup-keys %s passed: %s", id, c.Got)
		}
	}
}

// A harness that keeps to the session's tools never asks for one outside them: as good as being
// refused, with a note saying so.
func TestHarnessThatKeepsToItsToolsPassesUnlistedTool(t *testing.T) {
	rep := run(t, kitPlugin(t), conformance.Options{Harnesses: []string{"keeps-to-its-tools"}})
	wantChecks(t, rep, "keeps-to-its-tools", nil)
	if c := checks(t, rep, "keeps-to-its-tools")["unlisted-tool"]; !strings.Contains(c.Note, "asked for no tool, so the node had nothing to refuse") {
		t.Errorf("unlisted-tool note %q", c.Note)
	}
}

// A harness that declares tools and never asks for one fails the tool checks, each saying how to
// make it ask: an input that does, or a script.
func TestHarnessThatNeverAsksIsToldHowToMakeItAsk(t *testing.T) {
	rep := run(t, kitPlugin(t), conformance.Options{Harnesses: []string{"never-asks"}})
	for _, id := range []string{"permission-allowed", "changed-arguments", "denied"} {
		c := checks(t, rep, "never-asks")[id]
		if c.Pass || !strings.HasPrefix(c.Got, "no permission_request") || !strings.Contains(c.Hint, "--script") || !strings.Contains(c.Hint, "--input") {
			t.Errorf("%s: pass %v, got %q, hint %q", id, c.Pass, c.Got, c.Hint)
		}
	}
}

func TestHarnessDeafToSIGTERMFailsCancel(t *testing.T) {
	rep := run(t, kitPlugin(t), conformance.Options{Harnesses: []string{"deaf"}, Grace: time.Second})
	wantChecks(t, rep, "deaf", map[string]string{
		"cancel": "FAIL: the process did not exit within the grace period after SIGTERM and was killed",
	})
}

func TestToolChecksDoNotApplyToAHarnessWithoutTools(t *testing.T) {
	rep := run(t, kitPlugin(t), conformance.Options{Harnesses: []string{"toolless"}})
	wantChecks(t, rep, "toolless", map[string]string{
		"permission-allowed": "n/a", "changed-arguments": "n/a", "denied": "n/a", "unlisted-tool": "n/a",
	})
	if p, f, na := rep.Counts(); p != 3 || f != 0 || na != 4 {
		t.Errorf("%d passed, %d failed, %d n/a; want 3, 0, 4", p, f, na)
	}
}

func TestEveryHarnessInManifestOrder(t *testing.T) {
	files := kitPlugin(t)
	rep := run(t, files, conformance.Options{Harnesses: []string{"toolless", "conforming"}})
	if len(rep.Checks) != 14 || rep.Checks[0].Harness != "conforming" || rep.Checks[7].Harness != "toolless" {
		t.Errorf("%d checks, the first of %s, the eighth of %s", len(rep.Checks), rep.Checks[0].Harness, rep.Checks[7].Harness)
	}
}

func TestScenarioBoundedByTimeout(t *testing.T) {
	files := kitPlugin(t)
	files["oz0-plugin.yaml"] = strings.Replace(manifest, "  - name: toolless\n    command: [\"HARNESS\", \"triage\"]", "  - name: toolless\n    command: [\"HARNESS\", \"hang\"]", 1)
	rep := run(t, files, conformance.Options{Harnesses: []string{"toolless"}, Timeout: time.Second})
	c := checks(t, rep, "toolless")["plain-run"]
	if c.Pass || !strings.Contains(c.Got, "the scenario ran past oz0 plugin test's --timeout of 1s") {
		t.Errorf("plain-run of a harness that hangs: pass %v, got %q", c.Pass, c.Got)
	}
}

func TestRefusesAnInputTheAgentDoesNotTake(t *testing.T) {
	noLeaks(t)
	files := kitPlugin(t)
	files["agents/conforming.yaml"] += "input: {schema: {type: object, required: [order]}}\n"
	p := loadPlugin(t, files)
	for input, want := range map[string]string{
		"":              "harness conforming: agent conforming takes JSON input, and this is not JSON: line 1, column 1: invalid character 'I'",
		`{"note": "x"}`: "harness conforming: the input does not match agent conforming's input schema: at /: missing property 'order'",
	} {
		rep, err := conformance.Run(context.Background(), p, conformance.Options{Input: input})
		var inErr *jobspec.InputError
		if rep != nil || !errors.As(err, &inErr) || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "give one the agent takes") {
			t.Errorf("input %q: report %v, error %v; want an InputError %q", input, rep, err, want)
		}
	}
	if _, err := conformance.Run(context.Background(), p, conformance.Options{Harnesses: []string{"nope"}}); err == nil || err.Error() != `the plugin has no harness "nope"` {
		t.Errorf("an unknown harness: %v", err)
	}
}
