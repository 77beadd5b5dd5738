package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
)

// parseFlags runs a command's flag parsing and checks with args, stdin as its input, and
// returns the options it would run with; nothing runs.
func parseFlags[O any](t *testing.T, newCmd func(*cmdutil.Factory, func(*O) error) *cobra.Command, stdin string, args ...string) (*O, error) {
	t.Helper()
	f, _ := newTestFactory(t, false, &testPrompter{})
	f.IOStreams.In.(interface{ WriteString(string) (int, error) }).WriteString(stdin)
	var got *O
	cmd := newCmd(f, func(o *O) error { got = o; return nil })
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	return got, err
}

// check compares the named fields of got (a pointer to options) with want.
func check(t *testing.T, what string, got any, err error, want map[string]any) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	v := reflect.ValueOf(got).Elem()
	for name, w := range want {
		if g := v.FieldByName(name).Interface(); !reflect.DeepEqual(g, w) {
			t.Errorf("%s: %s = %#v, want %#v", what, name, g, w)
		}
	}
}

func TestRunFlags(t *testing.T) {
	o, err := parseFlags(t, newCmdRun, "", "acme-triage", "I was charged twice", "--json")
	check(t, "run AGENT INPUT --json", o, err, map[string]any{"Agent": "acme-triage", "Input": "I was charged twice", "JSON": true, "Detach": false})
	o, err = parseFlags(t, newCmdRun, `{"order": 42}`, "order-bot", "-", "--detach")
	check(t, "run AGENT - --detach", o, err, map[string]any{"Input": `{"order": 42}`, "Detach": true})
	// Of stdin, exactly one line break at the end is dropped: echo's.
	for stdin, want := range map[string]string{"x\n": "x", "x\r\n": "x", "x\n\n": "x\n", "x\r": "x\r", "\n": "", "a\nb\n": "a\nb", "x": "x"} {
		o, err = parseFlags(t, newCmdRun, stdin, "acme-triage", "-")
		check(t, fmt.Sprintf("run AGENT - with stdin %q", stdin), o, err, map[string]any{"Input": want})
	}
	file := filepath.Join(t.TempDir(), "ticket.txt")
	os.WriteFile(file, []byte("from a file\n"), 0o644)
	o, err = parseFlags(t, newCmdRun, "", "acme-triage", "--input-file", file)
	check(t, "run AGENT --input-file", o, err, map[string]any{"Input": "from a file\n", "InputFile": file})
	o, err = parseFlags(t, newCmdRun, "", "acme-triage", "hi", "--record")
	check(t, "run --record", o, err, map[string]any{"Record": true, "NoRecord": false})
	o, err = parseFlags(t, newCmdRun, "", "acme-triage", "hi", "--no-record")
	check(t, "run --no-record", o, err, map[string]any{"Record": false, "NoRecord": true})
}

func TestDevFlags(t *testing.T) {
	o, err := parseFlags(t, newCmdDev, "")
	check(t, "dev", o, err, map[string]any{"Plugins": []string(nil), "Addr": "", "Ephemeral": false})
	o, err = parseFlags(t, newCmdDev, "", "--plugin", "a", "--plugin", "b", "--addr", ":7311", "--state-dir", "s",
		"--ready-file", "r", "--fake-script", "f.yaml", "--hooks", "h.yaml")
	check(t, "dev with every flag", o, err, map[string]any{"Plugins": []string{"a", "b"}, "Addr": "127.0.0.1:7311", "StateDir": "s",
		"ReadyFile": "r", "FakeScript": "f.yaml", "Hooks": "h.yaml"})
	o, err = parseFlags(t, newCmdDev, "", "--ephemeral", "--addr", "[::1]:0")
	check(t, "dev --ephemeral", o, err, map[string]any{"Ephemeral": true, "Addr": "[::1]:0", "LogLevel": "info", "LogFormat": "text"})
	o, err = parseFlags(t, newCmdDev, "", "-v", "--log-format", "json")
	check(t, "dev -v --log-format json", o, err, map[string]any{"Verbose": true, "LogLevel": "debug", "LogFormat": "json"})
	o, err = parseFlags(t, newCmdDev, "", "--log-level", "warn")
	check(t, "dev --log-level warn", o, err, map[string]any{"LogLevel": "warn"})
	o, err = parseFlags(t, newCmdDev, "", "--no-record")
	check(t, "dev --no-record", o, err, map[string]any{"NoRecord": true})
	// --record was the way to keep the calls; they are kept by default now: accepted, a no-op.
	o, err = parseFlags(t, newCmdDev, "", "--record")
	check(t, "dev --record", o, err, map[string]any{"NoRecord": false})
}

func TestFakeModelServeFlags(t *testing.T) {
	o, err := parseFlags(t, newCmdFakeModelServe, "", "-s", "replies.yaml", "--addr", "LocalHost:8089", "--ready-file", "fm.url", "-v")
	check(t, "fake-model serve", o, err, map[string]any{"Script": "replies.yaml", "Addr": "LocalHost:8089", "ReadyFile": "fm.url", "Verbose": true})
}

func TestPluginFlags(t *testing.T) {
	lintOpts, err := parseFlags(t, newCmdPluginLint, "")
	check(t, "plugin lint", lintOpts, err, map[string]any{"Dirs": []string{"."}, "Format": "text"})
	lintOpts, err = parseFlags(t, newCmdPluginLint, "", "acme-triage", "--format", "sarif", "--base", ".")
	check(t, "plugin lint DIR --format sarif --base .", lintOpts, err, map[string]any{"Dirs": []string{"acme-triage"}, "Format": "sarif", "Base": "."})
	lintOpts, err = parseFlags(t, newCmdPluginLint, "", "plugins/a", "plugins/b")
	check(t, "plugin lint DIR DIR", lintOpts, err, map[string]any{"Dirs": []string{"plugins/a", "plugins/b"}})

	testOpts, err := parseFlags(t, newCmdPluginTest, "", "acme-triage", "--json", "--harness", "a", "--harness", "b",
		"--script", "m.yaml", "--input", "The app crashes", "--timeout", "5s", "--grace", "1s")
	check(t, "plugin test with every flag", testOpts, err, map[string]any{"Dirs": []string{"acme-triage"}, "JSONFlags": cmdutil.JSONFlags{JSON: true}, "Harnesses": []string{"a", "b"},
		"Script": "m.yaml", "Input": "The app crashes", "Timeout": 5 * time.Second, "Grace": time.Second})
	testOpts, err = parseFlags(t, newCmdPluginTest, "", "plugins/a", "plugins/b", "--json")
	check(t, "plugin test DIR DIR", testOpts, err, map[string]any{"Dirs": []string{"plugins/a", "plugins/b"}})

	newOpts, err := parseFlags(t, newCmdPluginNew, "", "acme-triage", "--template", "byo-agent", "-d", "Sorts support tickets", "--dir", "src")
	check(t, "plugin new", newOpts, err, map[string]any{"Name": "acme-triage", "Template": "byo-agent", "Description": "Sorts support tickets", "Dir": "src"})
}

func TestJobFlags(t *testing.T) {
	list, err := parseFlags(t, newCmdJobList, "")
	check(t, "job list", list, err, map[string]any{"Limit": 50, "Status": "", "JSONFlags": cmdutil.JSONFlags{}})
	list, err = parseFlags(t, newCmdJobList, "", "--status", "failed,timed_out", "--agent", "acme-triage", "-L", "5", "--json")
	check(t, "job list with every flag", list, err, map[string]any{"Status": "failed,timed_out", "Agent": "acme-triage", "Limit": 5, "JSONFlags": cmdutil.JSONFlags{JSON: true}})
	list, err = parseFlags(t, newCmdJobList, "", "--jq", ".[].id")
	check(t, "job list --jq", list, err, map[string]any{"JSONFlags": cmdutil.JSONFlags{JQ: ".[].id"}})
	show, err := parseFlags(t, newCmdJobShow, "", "job_x", "-t", "{{.status}}")
	check(t, "job show --template", show, err, map[string]any{"ID": "job_x", "JSONFlags": cmdutil.JSONFlags{Template: "{{.status}}"}})
	show, err = parseFlags(t, newCmdJobShow, "", "job_x", "--calls", "--json")
	check(t, "job show --calls --json", show, err, map[string]any{"ID": "job_x", "Calls": true, "JSONFlags": cmdutil.JSONFlags{JSON: true}})
	cancel, err := parseFlags(t, newCmdJobCancel, "", "job_x")
	check(t, "job cancel", cancel, err, map[string]any{"ID": "job_x"})
	trace, err := parseFlags(t, newCmdJobTrace, "", "job_x")
	check(t, "job trace", trace, err, map[string]any{"ID": "job_x"})
	replay, err := parseFlags(t, newCmdJobReplay, "", "job_x")
	check(t, "job replay", replay, err, map[string]any{"ID": "job_x", "Upstream": false, "JSON": false})
	replay, err = parseFlags(t, newCmdJobReplay, "", "job_x", "--upstream", "--json")
	check(t, "job replay with every flag", replay, err, map[string]any{"ID": "job_x", "Upstream": true, "JSON": true})
	script, err := parseFlags(t, newCmdJobScript, "", "job_x", "-o", "recorded.yaml")
	check(t, "job script", script, err, map[string]any{"ID": "job_x", "Output": "recorded.yaml"})
}

func TestSecretFlags(t *testing.T) {
	set, err := parseFlags(t, newCmdSecretSet, "", "ANTHROPIC_API_KEY", "--base-url", "http://127.0.0.1:8080")
	check(t, "secret set", set, err, map[string]any{"Name": "ANTHROPIC_API_KEY", "BaseURL": "http://127.0.0.1:8080"})
	list, err := parseFlags(t, newCmdSecretList, "", "--json")
	check(t, "secret list", list, err, map[string]any{"JSONFlags": cmdutil.JSONFlags{JSON: true}})
	rm, err := parseFlags(t, newCmdSecretRm, "", "OPENAI_API_KEY")
	check(t, "secret rm", rm, err, map[string]any{"Name": "OPENAI_API_KEY"})
}

func TestApprovalFlags(t *testing.T) {
	list, err := parseFlags(t, newCmdApprovalList, "", "--all", "--json")
	check(t, "approval list", list, err, map[string]any{"All": true, "JSONFlags": cmdutil.JSONFlags{JSON: true}})
	approve, err := parseFlags(t, newCmdApprovalApprove, "", "apr_x")
	check(t, "approval approve", approve, err, map[string]any{"ID": "apr_x", "Scope": "once"})
	approve, err = parseFlags(t, newCmdApprovalApprove, "", "apr_x", "--scope", "always")
	check(t, "approval approve --scope always", approve, err, map[string]any{"Scope": "always"})
	deny, err := parseFlags(t, newCmdApprovalDeny, "", "apr_x", "--reason", "billing is told by a person")
	check(t, "approval deny", deny, err, map[string]any{"ID": "apr_x", "Reason": "billing is told by a person"})
	rules, err := parseFlags(t, newCmdApprovalRules, "", "--json")
	check(t, "approval rules", rules, err, map[string]any{"JSONFlags": cmdutil.JSONFlags{JSON: true}})
	revoke, err := parseFlags(t, newCmdApprovalRevoke, "", "acme-triage.notify_team")
	check(t, "approval revoke", revoke, err, map[string]any{"Rule": "acme-triage.notify_team"})
}

func TestDoctorFlags(t *testing.T) {
	o, err := parseFlags(t, newCmdDoctor, "")
	check(t, "doctor", o, err, map[string]any{"Plugin": ".", "JSONFlags": cmdutil.JSONFlags{}})
	o, err = parseFlags(t, newCmdDoctor, "", "--plugin", "acme-triage", "--json")
	check(t, "doctor --plugin --json", o, err, map[string]any{"Plugin": "acme-triage", "JSONFlags": cmdutil.JSONFlags{JSON: true}})
}

func TestSchemaVersionTemplatesFlags(t *testing.T) {
	s, err := parseFlags(t, newCmdSchema, "", "agent", "--write", "out")
	check(t, "schema NAME --write", s, err, map[string]any{"Name": "agent.schema.json", "WriteDir": "out"})
	s, err = parseFlags(t, newCmdSchema, "", "--jq", ".[].url")
	check(t, "schema --jq", s, err, map[string]any{"Name": "", "JSONFlags": cmdutil.JSONFlags{JQ: ".[].url"}})
	v, err := parseFlags(t, newCmdVersion, "", "--json")
	check(t, "version --json", v, err, map[string]any{"JSONFlags": cmdutil.JSONFlags{JSON: true}})
	tp, err := parseFlags(t, newCmdPluginTemplates, "", "--template", "{{range .}}{{.name}}{{end}}")
	check(t, "plugin templates --template", tp, err, map[string]any{"JSONFlags": cmdutil.JSONFlags{Template: "{{range .}}{{.name}}{{end}}"}})
}

// A usage error stops before runF: nothing runs.
func TestUsageErrorsRunNothing(t *testing.T) {
	expectUsage := func(what string, ran bool, err error) {
		t.Helper()
		if ran || cmdutil.ExitCode(err) != cmdutil.ExitUsage {
			t.Errorf("%s: ran %v, err %v", what, ran, err)
		}
	}
	dev, err := parseFlags(t, newCmdDev, "", "--ephemeral", "--state-dir", "s")
	expectUsage("dev --ephemeral --state-dir", dev != nil, err)
	dev, err = parseFlags(t, newCmdDev, "", "--addr", "10.0.0.1:7311")
	expectUsage("dev --addr 10.0.0.1:7311", dev != nil, err)
	deny, err := parseFlags(t, newCmdApprovalDeny, "", "apr_x")
	expectUsage("approval deny without --reason", deny != nil, err)
	list, err := parseFlags(t, newCmdJobList, "", "--status", "done")
	expectUsage("job list --status done", list != nil, err)
	list, err = parseFlags(t, newCmdJobList, "", "--jq", ".[", "--json")
	expectUsage("job list --jq .[", list != nil, err)
	list, err = parseFlags(t, newCmdJobList, "", "--jq", ".", "--template", "{{.}}")
	expectUsage("job list --jq --template", list != nil, err)
	dev, err = parseFlags(t, newCmdDev, "", "-v", "--log-level", "error")
	expectUsage("dev -v --log-level error", dev != nil, err)
	run, err := parseFlags(t, newCmdRun, "", "acme-triage", "hi", "--input-file", "f")
	expectUsage("run with INPUT and --input-file", run != nil, err)
}

func TestEvalFlags(t *testing.T) {
	e, err := parseFlags(t, newCmdEval, "", "evals/triage.yaml", "--jobs", "3", "--junit", "j.xml", "--format", "github", "--record", "--baseline", "b.json")
	check(t, "eval", e, err, map[string]any{"Paths": []string{"evals/triage.yaml"}, "Jobs": 3, "JUnit": "j.xml", "Format": "github", "Record": true, "Baseline": "b.json"})
	e, err = parseFlags(t, newCmdEval, "", "--dev", "--live", "--json")
	check(t, "eval --dev --live", e, err, map[string]any{"Paths": []string{"."}, "Dev": true, "Live": true, "JSONFlags": cmdutil.JSONFlags{JSON: true}})
	e, err = parseFlags(t, newCmdEval, "", "--shard", "2/3", "--report", "r.json")
	check(t, "eval --shard 2/3", e, err, map[string]any{"Shard": 2, "Shards": 3, "Report": "r.json"})
	for _, args := range [][]string{{"--jobs", "0"}, {"--dev", "--jobs", "2"}, {"--live", "--update"}, {"--format", "junit"}, {"--dev", "--sandbox", "none"},
		{"--shard", "0/3"}, {"--shard", "5/4"}, {"--shard", "x"}, {"--shard", "1/0"}} {
		e, err := parseFlags(t, newCmdEval, "", args...)
		if e != nil || cmdutil.ExitCode(err) != cmdutil.ExitUsage {
			t.Errorf("eval %v: ran %v, err %v", args, e != nil, err)
		}
	}
}

func TestEvalMergeFlags(t *testing.T) {
	m, err := parseFlags(t, newCmdEvalMerge, "", "a.json", "b.json", "--junit", "j.xml", "--format", "github", "--baseline", "base.json")
	check(t, "eval merge", m, err, map[string]any{"Reports": []string{"a.json", "b.json"}, "JUnit": "j.xml", "Format": "github", "Baseline": "base.json"})
	for _, args := range [][]string{{}, {"a.json", "--format", "junit"}} {
		m, err := parseFlags(t, newCmdEvalMerge, "", args...)
		if m != nil || cmdutil.ExitCode(err) != cmdutil.ExitUsage {
			t.Errorf("eval merge %v: ran %v, err %v", args, m != nil, err)
		}
	}
}
