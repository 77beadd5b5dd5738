package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/internal/testbin"
)

// exitFixtures is what the exit-code cases read: a plugin that lints clean and one that does
// not, a fake model script and a hooks file with problems, a port something else holds, and dev
// servers that are gone, refuse what they are asked, or refuse the token.
type exitFixtures struct {
	dir                            string
	busyAddr                       string
	deadCtx, refusingCtx, badToken string
}

func newExitFixtures(t *testing.T) *exitFixtures {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"plug/oz0-plugin.yaml":   "apiVersion: oz0/v1\nname: hello\nversion: 0.1.0\ndescription: Says hello\nruntime: binary\nharnesses:\n  - name: h\n    command: [\"./h.sh\"]\n    formats: [anthropic-messages]\nagents: [agents/]\n",
		"plug/agents/hello.yaml": "name: hello\ndescription: Says hello\nruntime: harness:h\ninstructions: prompts/hello.md\n",
		"plug/prompts/hello.md":  "Say hello.\n",
		"plug/h.sh":              "#!/bin/sh\nread -r request\necho '{\"type\":\"result\",\"output\":\"hello\"}'\n",
		"bad/oz0-plugin.yaml":    "apiVersion: oz0/v1\nname: bad\nversion: 0.1.0\ndescription: Does not lint\nruntime: binary\nharnesses:\n  - name: h\n    command: [\"./h.sh\"]\n    formats: [anthropic-messages]\nagents: [agents/]\n",
		"bad/agents/hello.yaml":  "name: hello\ndescription: Says hello\nruntime: harness:h\ninstructions: prompts/hello.md\ncolour: blue\n",
		"bad/prompts/hello.md":   "Say hello.\n",
		"bad/h.sh":               "#!/bin/sh\n",
		"bad-script.yaml":        "rules:\n- reply: {text: a, delay: soon}\n",
		"bad-hooks.yaml":         "hooks:\n  - name: typo\n    match: \"hello.*\"\n    decide: deny\n    reasn: a typo\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fx := &exitFixtures{dir: dir}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	fx.busyAddr = busy.Addr().String()

	fx.deadCtx = "http://" + testbin.RefusedAddr(t) + "#" + apiv1.NewToken()

	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(apiv1.ServerHeader, "v1")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":{"code":"not_found","message":"no such thing; oz0 job list shows the jobs"}}`))
	}))
	t.Cleanup(refusing.Close)
	fx.refusingCtx = refusing.URL + "#" + apiv1.NewToken()
	unauthorized := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(apiv1.ServerHeader, "v1")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":{"code":"unauthorized","message":"missing or wrong bearer token"}}`))
	}))
	t.Cleanup(unauthorized.Close)
	fx.badToken = unauthorized.URL + "#" + apiv1.NewToken()
	return fx
}

// runOz0 runs the command tree in-process as main does, with OZ0_CONTEXT set to ctx, in dir.
func runOz0(t *testing.T, dir, ctx, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ios, in, out, errOut := iostreams.Test()
	in.WriteString(stdin)
	f := &cmdutil.Factory{
		IOStreams: ios,
		Version:   "test",
		Getwd:     func() (string, error) { return dir, nil },
		Getenv: func(k string) string {
			if k == apiv1.ContextEnv {
				return ctx
			}
			return ""
		},
		Prompter: &testPrompter{},
	}
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	code = execute(f, args)
	return code, out.String(), errOut.String()
}

// TestExitCodes runs every command through a usage error, a bad input file where it reads one,
// a busy port where it listens, and no dev server where it needs one, and pins the exit code: 0
// ok, 1 problems found, 2 usage (and what the dev server refused), 3 the environment.
func TestExitCodes(t *testing.T) {
	fx := newExitFixtures(t)
	in := func(name string) string { return filepath.Join(fx.dir, name) }
	missing := in("missing.yaml")
	type tc struct {
		args   string
		ctx    string // OZ0_CONTEXT
		code   int
		stderr string // a part of stderr
	}
	cases := []tc{
		// Usage.
		{"frobnicate", "", 2, `unknown command "frobnicate" for "oz0"`},
		{"version --bogus", "", 2, "unknown flag: --bogus"},
		{"completion tcsh", "", 2, "unknown shell"},
		{"plugn", "", 2, `unknown command "plugn" for "oz0"; did you mean "plugin"?`},
		{"help plugn", "", 2, `unknown command "plugn" for "oz0"; did you mean "plugin"?`},
		{"job list --jq .[", "", 2, "--jq \".[\""},
		{"job list --template {{.x", "", 2, `--template "{{.x" is not a Go template: unclosed action`},
		{"schema nope", "", 2, `no schema "nope"`},
		{"schema agent --json", "", 2, "give no NAME or --write with them"},
		{"dev --log-level loud", "", 2, `unknown --log-level "loud"`},
		{"dev --log-format xml", "", 2, `unknown --log-format "xml"`},
		{"plugin lint plug --format sarif --base nowhere", "", 2, "--base nowhere is not a directory"},
		{"plugin new", "", 2, "missing NAME, --template, --description"},
		{"plugin templates extra", "", 2, "takes no arguments"},
		{"plugin lint plug --format xml", "", 2, `unknown --format "xml"`},
		{"plugin test a b --harness x", "", 2, "--harness picks a harness of one plugin: give one DIR with it"},
		{"eval --shard 0/3", "", 2, `--shard "0/3": the shard counts from 1 to 3`},
		{"eval --shard x", "", 2, "--shard takes i/n"},
		{"eval merge", "", 2, "oz0 eval merge needs REPORT..."},
		{"eval add", "", 2, "oz0 eval add needs one job ID"},
		{"eval add job_x --file notes.txt", "", 2, `--file: the eval file "notes.txt" is not a name`},
		{"plugin list nowhere", "", 2, "nowhere does not exist"},
		{"plugin test plug --harness nope", "", 2, `--harness "nope": the plugin in plug has no harness "nope"; it has h`},
		{"dev --ephemeral --state-dir x", "", 2, "--ephemeral and --state-dir do not go together"},
		{"dev --addr 0.0.0.0:0", "", 2, `--addr "0.0.0.0:0" is not a loopback address`},
		{"dev --addr localhost", "", 2, `--addr "localhost" is not HOST:PORT`},
		{"run", "", 2, "needs AGENT"},
		{"run hello", "", 2, "needs an INPUT"},
		{"run hello hi --json --detach", "", 2, "--json and --detach do not go together"},
		{"job list --status nope", "", 2, `unknown --status "nope"`},
		{"job list --limit 0", "", 2, "--limit must be at least 1"},
		{"job show", "", 2, "needs one job ID"},
		{"job cancel a b", "", 2, "takes one job ID"},
		{"job trace", "", 2, "needs one job ID"},
		{"job replay", "", 2, "needs one job ID"},
		{"job script a b", "", 2, "takes one job ID"},
		{"job frobnicate", "", 2, `unknown command "frobnicate" for "oz0 job"`},
		{"secret set bad-name", "", 2, `secret name "bad-name" is not valid`},
		{"secret list extra", "", 2, "takes no arguments"},
		{"secret rm", "", 2, "needs one NAME"},
		{"approval list extra", "", 2, "takes no arguments"},
		{"approval approve apr_x --scope never", "", 2, `unknown --scope "never"`},
		{"approval deny apr_x", "", 2, "a denial needs --reason"},
		{"approval rules extra", "", 2, "takes no arguments"},
		{"approval revoke", "", 2, "needs one RULE"},
		{"fake-model serve --addr 0.0.0.0:0", "", 2, `--addr "0.0.0.0:0" is not a loopback address`},
		{"fake-model serve extra", "", 2, "takes no arguments"},
		{"doctor extra", "", 2, "takes no arguments"},

		// Input with problems: 1; input that cannot be read: 3.
		{"plugin lint bad", "", 1, ""},
		{"plugin lint " + in("nowhere"), "", 3, "nowhere"},
		{"plugin test bad", "", 1, "the plugin in bad has 1 error; nothing was run"},
		{"plugin test plug --script " + in("bad-script.yaml"), "", 1, "bad-script.yaml has 1 error; nothing was run"},
		{"plugin test plug --script " + missing, "", 3, "cannot read the fake model script"},
		{"dev --ephemeral --plugin bad", "", 1, "the plugin in bad has 1 error; nothing was run"},
		{"dev --ephemeral --plugin plug --fake-script " + in("bad-script.yaml"), "", 1, "bad-script.yaml has 1 error; nothing was run"},
		{"dev --ephemeral --plugin plug --fake-script " + missing, "", 3, "cannot read the fake model script"},
		{"dev --ephemeral --plugin plug --hooks " + in("bad-hooks.yaml"), "", 1, "bad-hooks.yaml has 1 error; nothing was run"},
		{"dev --ephemeral --plugin plug --hooks " + missing, "", 3, "cannot read --hooks "},
		{"dev --ephemeral --plugin plug --plugin plug", "", 1, "agent hello is in both hello and hello"},
		{"fake-model serve --script " + in("bad-script.yaml"), "", 1, "bad-script.yaml has 1 error; nothing was run"},
		{"fake-model serve --script " + missing, "", 3, "cannot read the fake model script"},
		{"run hello --input-file " + missing, fx.deadCtx, 3, "cannot read --input-file"},

		// A busy port: 3.
		{"dev --ephemeral --plugin plug --addr " + fx.busyAddr, "", 3, "cannot listen on " + fx.busyAddr},
		{"fake-model serve --addr " + fx.busyAddr, "", 3, "cannot listen on " + fx.busyAddr},
	}
	// No dev server (no OZ0_CONTEXT, a malformed one, nothing at its address, a token it
	// refuses): 3. A dev server that refuses what was asked: 2.
	for _, args := range []string{
		"run hello hi", "job list", "job show job_x", "job cancel job_x", "job trace job_x",
		"job replay job_x", "job script job_x",
		"secret set NAME", "secret list", "secret rm NAME",
		"approval list", "approval approve apr_x", "approval deny apr_x --reason no", "approval rules", "approval revoke rule_x",
	} {
		cases = append(cases,
			tc{args, "", 3, "OZ0_CONTEXT is not set"},
			tc{args, "127.0.0.1:7311", 3, "OZ0_CONTEXT is not valid"},
			tc{args, fx.deadCtx, 3, "no dev server at"},
			tc{args, fx.badToken, 3, "refused the token in OZ0_CONTEXT"},
			tc{args, fx.refusingCtx, 2, "no such thing"},
		)
	}
	for _, c := range cases {
		code, _, stderr := runOz0(t, fx.dir, c.ctx, "a value\n", strings.Fields(c.args)...)
		if code != c.code || !strings.Contains(stderr, c.stderr) {
			t.Errorf("oz0 %s (OZ0_CONTEXT=%q): exit %d, want %d with %q on stderr\nstderr: %s", c.args, c.ctx, code, c.code, c.stderr, stderr)
		}
	}
}

// TestFindingsOnStderr pins how an input with problems is reported: each finding on stderr at
// its line and column, as oz0 plugin lint prints them, a count, then one line that sums up.
func TestFindingsOnStderr(t *testing.T) {
	fx := newExitFixtures(t)
	script := filepath.Join(fx.dir, "bad-script.yaml")
	want := script + ":2:27: error invalid-value `delay` must be a duration such as 20ms, 2s or 1m30s, not `soon`\n1 error\n" +
		"oz0: the fake model script " + script + " has 1 error; nothing was run\n"
	for _, args := range [][]string{
		{"fake-model", "serve", "--script", script},
		{"dev", "--ephemeral", "--plugin", "plug", "--fake-script", script},
		{"plugin", "test", "plug", "--script", script},
	} {
		code, stdout, stderr := runOz0(t, fx.dir, "", "", args...)
		if code != 1 || stderr != want || stdout != "" {
			t.Errorf("oz0 %s: exit %d\nstdout: %s\nstderr: %s\nwant stderr: %s", strings.Join(args, " "), code, stdout, stderr, want)
		}
	}
	code, _, stderr := runOz0(t, fx.dir, "", "", "dev", "--ephemeral", "--plugin", "bad")
	wantLint := "bad/agents/hello.yaml:5:1: error unknown-key"
	if code != 1 || !strings.HasPrefix(stderr, wantLint) || !strings.HasSuffix(stderr, "\noz0: the plugin in bad has 1 error; nothing was run\n") {
		t.Errorf("oz0 dev --plugin bad: exit %d\nstderr: %s", code, stderr)
	}
}
