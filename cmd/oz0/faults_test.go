package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/devserver/store"
	"github.com/orchestrator-zero/oz0/internal/testbin"
	"github.com/orchestrator-zero/oz0/scaffold"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

// The fault matrix (docs/reliability.md): a harness, a model upstream, a hook and a person
// each fail in the ways the table below lists, through a real `oz0 dev` and `oz0 run`. For each,
// the job ends with the status and a reason a person understands, `oz0 run` shows what it should,
// the next job on the same server succeeds, and the server is back where it was: no process, no
// session directory, no file descriptor and no goroutine left. After the whole matrix, the
// server's memory is within a small bound of what it was before.

// fault is a row of the matrix.
type fault struct {
	name  string // as docs/reliability.md names it
	agent string
	input string
	// cancelAt, when set, is a line of oz0 run's output (stdout or stderr) after which the job
	// is cancelled with `oz0 job cancel`.
	cancelAt string
	status   apiv1.Status
	reason   string // a regexp the job's reason must match whole
	out      string // a regexp oz0 run's stdout must match ((?m) mode)
	trace    func(t *testing.T, evs []store.Event)
	after    func(t *testing.T, d *faultDev, job string) // more checks, once the job has ended
	python   bool                                        // the row runs the Python template's harness
	none     bool                                        // the row runs in tier none too
}

// The plugin of the Go rows: harness NAME runs the test harness in a mode, agent NAME on it.
var faultHarnesses = []struct{ name, mode, arg, agentExtra string }{
	{"ok", "ok", "", ""},
	{"triage", "triage", "", ""},
	{"crash", "crash", "", ""},
	{"sigkill", "sigkill", "", ""},
	{"hang", "hang", "", "limits: {timeout: 2s}\n"},
	{"nonjson", "nonjson", "", ""},
	{"longline", "longline", "", ""},
	{"exit0", "exit0", "", ""},
	{"exit3", "exit3", "", ""},
	{"tworesults", "tworesults", "", ""},
	{"after", "after", "", ""},
	{"ignoreterm", "ignoreterm", "", ""},
	{"grandchild", "grandchild", "", ""},
	{"setsid", "grandchild", "setsid", ""},
	{"stderrflood", "stderrflood", strconv.Itoa(1 << 30), ""},
	{"eventflood", "saysflood", "1000x65536", "limits: {max_event_bytes: 1048576}\n"},
	{"escapes", "escapes", "", ""},
	{"unlisted", "unlisted", "", ""},
	{"reuseid", "reuseid", "", ""},
	{"dupkeys", "dupkeys", "", ""},
	{"strayresult", "strayresult", "", ""},
	{"othertool", "othertool", "", ""},
	{"badutf8", "badutf8", "", ""},
	{"protocol2", "protocol2", "", ""},
	{"overstep", "overstep", "", "limits: {max_steps: 3}\n"},
	{"hookcrash", "triage", "", ""},
	{"approval", "triage", "", "harness: {requires_approval: [notify_team]}\n"},
	// For the crash loop: a chatty job, and one that makes model calls one after another.
	{"chatty", "flood", "3000", ""},
	{"caller", "calls", "1000000", "limits: {max_steps: 1000000}\n"},
}

var faults = []fault{
	{name: "crash (a panic)", agent: "crash", status: apiv1.StatusFailed, none: true,
		reason: `the harness exited with status 2 without a result or an error \(rule 2\); the end of its stderr:\n(?s:.*)panic: assignment to entry in nil map(?s:.*)`,
		out:    `^crash: about to crash$`},
	{name: "killed by a signal", agent: "sigkill", status: apiv1.StatusFailed,
		reason: `the harness was killed by SIGKILL without a result or an error \(rule 2\); the end of its stderr:\ngoing down`},
	{name: "hang, until limits.timeout", agent: "hang", status: apiv1.StatusTimedOut, none: true,
		reason: `the session ran for its limits\.timeout of 2s without an answer \(time waiting for a person does not count\)`,
		out:    `^hang: working$`},
	{name: "stdout that is not JSON", agent: "nonjson", status: apiv1.StatusSucceeded,
		out:   `^nonjson ! stray output \(not protocol JSON\): hello, this is not JSON\nnonjson ! stray output \(not protocol JSON\): \[1,2,3\]\nnonjson: still here\ndone$`,
		trace: wantEvents(`"type":"log","data":\{"level":"warning","line":"\{\\"type\\":\\"mystery\\",\\"x\\":1\}","message":"ignored a line: unknown type \\"mystery\\" \(rule 3\)"`)},
	{name: "a 9 MiB line", agent: "longline", status: apiv1.StatusFailed, none: true,
		reason: `protocol violation \(rule 3\): line 2 of stdout: a line of 9437209 bytes is over the protocol's limit of 8 MiB \(8388608 bytes\)`,
		// A say is read in pieces as it comes: what came within the limit has been said.
		out: `^longline: beforex+$`},
	{name: "exit 0 without a result", agent: "exit0", status: apiv1.StatusFailed, none: true,
		reason: `the harness exited with status 0 without a result or an error \(rule 2\); its stderr is empty`},
	{name: "a non-zero exit without a result", agent: "exit3", status: apiv1.StatusFailed,
		reason: `the harness exited with status 3 without a result or an error \(rule 2\); the end of its stderr:\n(?s:.*)Traceback \(most recent call last\):\n  File "agent.py", line 3, in run\nValueError: the ticket is empty`},
	{name: "two results", agent: "tworesults", status: apiv1.StatusSucceeded, out: `^first$`,
		trace: wantInOrder(`"type":"result","data":\{"output":"first"\}`,
			`"type":"log","data":\{"level":"warning","line":"\{\\"type\\":\\"result\\",\\"output\\":\\"second\\"\}","message":"ignored a line: after the session's last line \(rule 2\)"\}`,
			`"status":"succeeded"`)},
	{name: "output after the result", agent: "after", status: apiv1.StatusSucceeded, out: `^first$`,
		trace: wantInOrder(`"type":"result","data":\{"output":"first"\}`,
			`"line":"\{\\"type\\":\\"say\\",\\"text\\":\\"too late\\"\}","message":"ignored a line: after the session's last line \(rule 2\)"`,
			`"line":"\{\\"type\\":\\"error\\",\\"message\\":\\"too late too\\"\}","message":"ignored a line: after the session's last line \(rule 2\)"`,
			`"line":"not JSON, and late","message":"ignored a line: after the session's last line \(rule 2\); not JSON"`,
			`"status":"succeeded"`)},
	{name: "ignores SIGTERM, cancelled", agent: "ignoreterm", cancelAt: `^ignoreterm: you cannot stop me$`, status: apiv1.StatusCancelled, none: true,
		reason: `stopped on request; the harness did not exit within 5s of SIGTERM, so its processes were killed`,
		out:    `^ignoreterm: you cannot stop me$`},
	{name: "a grandchild holding stdout", agent: "grandchild", status: apiv1.StatusSucceeded, out: `^left a grandchild$`, none: true},
	{name: "a setsid grandchild holding stdout", agent: "setsid", status: apiv1.StatusSucceeded, out: `^left a grandchild$`, none: true},
	{name: "a say flood past limits.max_event_bytes", agent: "eventflood", status: apiv1.StatusFailed, none: true,
		reason: `the harness wrote events past its limits\.max_event_bytes of 1 MiB on stdout \(\d+ bytes and more; set a larger limit in the agent's limits if it needs to\)`,
		trace:  wantInOrder(`"type":"status","data":\{"status":"failed","from":"running","reason":"the harness wrote events past its limits\.max_event_bytes`)},
	{name: "terminal control sequences", agent: "escapes", status: apiv1.StatusSucceeded, none: true,
		out: `^escapes: title \\x1b\]0;pwned\\x07 clip \\x1b\]52;c;ZWNobw==\\x07\nescapes ! stray output \(not protocol JSON\): stray \\x1b\[2J output\nescapes: \\r\\x1b\[2Kcsi \\u009b31m\nanswer \\x1b\[31mred$`},
	{name: "a 1 GiB stderr flood", agent: "stderrflood", status: apiv1.StatusSucceeded, out: `^flooded$`, none: true,
		trace: wantInOrder(`"type":"stderr","data":\{"note":"\d+ lines of stderr \(\d+ bytes\) were left out of the trace: over the budget of 1 MiB at once and 64 KiB a second; the last 64 KiB of stderr is kept with the session's end"\}`,
			`"type":"stderr","data":\{"note":"the last 65536 bytes of stderr \(of 1073\d{6}\), as the session ended","tail":"e+\\n(e+\\n)+the last line of stderr\\n"\}`,
			`"type":"result"`)},
	{name: "an unlisted tool", agent: "unlisted", status: apiv1.StatusSucceeded,
		out: "^unlisted → rm_rf \\{\"path\":\"/\"\\}\nunlisted ✗ rm_rf refused by the node: tool `rm_rf` is not in the agent's harness.tools \\(it lists notify_team\\)\n"},
	{name: "a permission id used twice", agent: "reuseid", status: apiv1.StatusFailed,
		reason: `protocol violation \(ids\): line 2 of stdout is a permission_request with the id "p1", which this session has already used; ids are unique per session`},
	{name: "a result forged with \"type\" twice", agent: "dupkeys", status: apiv1.StatusFailed,
		reason: `protocol violation \(keys\): line 1 of stdout is an object with the key "type" twice; JSON parsers differ on which of the two counts, so the node takes it as no message: write each key once`,
		out:    `^dupkeys ! protocol violation \(keys\): line 1 of stdout is an object with the key "type" twice; `,
		trace:  wantInOrder(`"type":"violation","data":\{"line":"\{\\"type\\":\\"say\\",\\"text\\":\\"working\\",\\"type\\":\\"result\\",\\"output\\":\\"forged\\"\}","message":"protocol violation \(keys\)`, `"type":"error"`, `"status":"failed"`)},
	{name: "a tool_result for an id never asked", agent: "strayresult", status: apiv1.StatusFailed,
		reason: `protocol violation \(results\): line 2 of stdout is a tool_result for the id "p9", which no permission_request of this session asked; a tool_result reports a call the job allowed, with its request's id and tool`,
		out:    `^strayresult: working\nstrayresult ! protocol violation \(results\): line 2 `},
	{name: "a tool_result naming another tool", agent: "othertool", status: apiv1.StatusFailed,
		reason: `protocol violation \(results\): line 2 of stdout is a tool_result for p1 naming the tool "delete_account", but p1 asked for notify_team; .*`,
		trace:  wantInOrder(`"type":"permission_decision","data":\{"arguments":\{"team":"billing"\},"by":"policy","changed":false,"decision":"allow"`, `"type":"violation","data":\{"line":"\{\\"type\\":\\"tool_result\\",\\"id\\":\\"p1\\",\\"tool\\":\\"delete_account\\"`)},
	{name: "invalid UTF-8", agent: "badutf8", status: apiv1.StatusSucceeded,
		out: `^badutf8 ! stray output \(not valid UTF-8\): \x{FFFD} not UTF-8 at all\nbadutf8 ! stray output \(not valid UTF-8\): \{"type":"say","text":"caf\x{FFFD}"\}\ndone$`},
	{name: "another protocol version", agent: "protocol2", status: apiv1.StatusFailed,
		reason: `the session asks for protocol 1: this harness speaks protocol 2`},
	{name: "a program that is not there", agent: "badcmd", status: apiv1.StatusFailed,
		reason: `the harness could not start: the harness command nosuchprogram9 is not on the session's PATH \(.*\)`},
	{name: "an interpreter that is not there", agent: "badinterp", status: apiv1.StatusFailed, none: true,
		reason: `the harness could not start: /\S+/faults/bad\.sh names the interpreter /usr/bin/nosuchinterp on its #! line, which is not (in the sandbox|on this machine); install it, or correct the #! line`},
	{name: "model upstream 429", agent: "modelfaults", input: "fault-429", python: true, status: apiv1.StatusFailed,
		reason: `ModelError: the model API answered 429: rate_limit_error: This request would exceed your organization's rate limit\. Please try again later\. \(oz0 fake model: rule "r429" of script \S+/faults\.yaml\)`,
		trace:  wantEvents(`"type":"model_call","data":\{.*"status":429`)},
	{name: "model upstream 529", agent: "modelfaults", input: "fault-529", python: true, status: apiv1.StatusFailed,
		reason: `ModelError: the model API answered 529: overloaded_error: Overloaded \(oz0 fake model: rule "r529" of script \S+/faults\.yaml\)`,
		trace:  wantEvents(`"type":"model_call","data":\{.*"status":529`)},
	{name: "model upstream 500", agent: "modelfaults", input: "fault-500", python: true, status: apiv1.StatusFailed,
		reason: `ModelError: the model API answered 500: api_error: Internal server error \(oz0 fake model: rule "r500" of script \S+/faults\.yaml\)`,
		trace:  wantEvents(`"type":"model_call","data":\{.*"status":500`)},
	{name: "model stream cut midway", agent: "modelfaults", input: "stream fault-cut", python: true, status: apiv1.StatusFailed,
		reason: `ModelError: the model API's stream stopped before the answer's end \(no message_stop\): the connection was cut short`,
		out:    `^modelfaults: one two three$`,
		trace:  wantEvents(`"type":"model_call","data":\{"aborted":"upstream",.*"streamed":true`)},
	{name: "model stream ends with an error event", agent: "modelfaults", input: "stream fault-overloaded", python: true, status: apiv1.StatusFailed,
		reason: `ModelError: the model API ended the stream with an error: overloaded_error: Overloaded \(oz0 fake model: rule "overloaded-midway" of script \S+/faults\.yaml\)`,
		out:    `^modelfaults: one two three$`},
	{name: "past limits.max_steps", agent: "overstep", status: apiv1.StatusFailed,
		reason: `model call 4: the model API answered 429: rate_limit_error: oz0 gateway: limits\.max_steps of 3 reached for job job_[a-z2-7]+ \(agent overstep's session has made 3 model calls\)`,
		trace:  wantEvents(`"type":"model_call","data":\{.*"refused":"limits\.max_steps".*"step":0`)},
	{name: "a hook that crashes", agent: "hookcrash", status: apiv1.StatusSucceeded,
		out: `^hookcrash ✗ notify_team refused: hook crashy failed: the plugin exited during the call \(exit status 3; its last words: crashhook: the policy tripped over hookcrash\.notify_team\); it is restarted on the next call\n`},
	{name: "an approval never answered, the job cancelled", agent: "approval", cancelAt: `^oz0: waiting for approval: `, status: apiv1.StatusCancelled, none: true,
		reason: `stopped on request`,
		out:    `^approval → notify_team \{"summary":"I was charged twice for my order","team":"general"\}$`,
		trace:  wantInOrder(`"type":"permission_request"`, `"status":"waiting_for_approval"`, `"status":"cancelled"`),
		after:  approvalWithdrawn},
}

// The fake model upstream's script: errors by the ticket's words, else a short answer.
const faultsScript = `rules:
  - name: r429
    match: {user: "fault-429"}
    reply: {error: {kind: rate_limit, retry_after: 30s}}
  - name: r529
    match: {user: "fault-529"}
    reply: {error: {kind: overloaded}}
  - name: r500
    match: {user: "fault-500"}
    reply: {error: {kind: server}}
  - name: cut-midway
    match: {user: "fault-cut"}
    reply: {text: "one two three four five six seven eight nine ten", error: {kind: cut, after: 4}}
  - name: overloaded-midway
    match: {user: "fault-overloaded"}
    reply: {text: "one two three four five six seven eight nine ten", error: {kind: overloaded, after: 4}}
  - name: slow
    match: {user: "^call [0-9]+$"}
    reply: {text: "fine", delay: 20ms}
  - name: answer
    reply: {text: "fine"}
`

func TestFaultMatrix(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	t.Parallel()
	fx := newFaultFixtures(t)
	for _, tier := range []sandbox.Tier{sandbox.Standard, sandbox.None} {
		t.Run(string(tier), func(t *testing.T) {
			if err := sandbox.Check(tier); err != nil {
				t.Skipf("tier %s: %v", tier, err)
			}
			d := fx.startDev(t, tier)
			d.warmUp(t)
			base := d.snapshot(t)
			rssBefore := d.rss(t)
			for _, f := range faults {
				if tier == sandbox.None && !f.none {
					continue
				}
				t.Run(f.name, func(t *testing.T) {
					if f.python && !fx.python {
						t.Skip("needs python3")
					}
					d.runFault(t, f)
					d.mustSucceed(t, "ok", "hello")
					d.settle(t, base)
				})
			}
			rssAfter := d.rss(t)
			t.Logf("tier %s: RSS %d MiB before the matrix, %d MiB after", tier, rssBefore>>20, rssAfter>>20)
			if rssAfter > rssBefore+maxRSSGrowth {
				t.Errorf("the dev server's RSS grew from %d MiB to %d MiB over the matrix (bound: %d MiB)", rssBefore>>20, rssAfter>>20, maxRSSGrowth>>20)
			}
			d.stop(t)
		})
	}
}

// maxRSSGrowth bounds what the matrix may add to the dev server's resident memory: what the
// Go runtime keeps of its heap after a 9 MiB line and a 1 GiB stderr flood, not the flood.
const maxRSSGrowth = 32 << 20

// faultFixtures are what both tiers' servers use: the plugins, the hooks file, the upstream.
type faultFixtures struct {
	bin, root       string
	plugins         []string
	hooks, upstream string
	python          bool
}

func newFaultFixtures(t *testing.T) *faultFixtures {
	bin, err := exec.LookPath("oz0") // the test binary as oz0 (TestMain), as the scripts run it
	if err != nil {
		t.Fatal(err)
	}
	// Readable by all: sessions of a node run as root run as nobody.
	root, err := os.MkdirTemp("", "oz0-faults-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	fx := &faultFixtures{bin: bin, root: root}
	harness := testbin.Build(t, testbin.TestHarness)

	manifest := "apiVersion: oz0/v1\nname: faults\nversion: 0.1.0\nruntime: binary\nagents: [agents/]\nharnesses:\n"
	files := map[string]string{"prompts/p.md": "Sort the support ticket.\n", "bad.sh": "#!/usr/bin/nosuchinterp\necho hello\n"}
	agent := func(name, extra string) {
		files["agents/"+name+".yaml"] = fmt.Sprintf("name: %s\nruntime: harness:%s\ninstructions: prompts/p.md\n%s", name, name, extra)
	}
	for _, h := range faultHarnesses {
		argv := []string{harness, h.mode}
		if h.arg != "" {
			argv = append(argv, h.arg)
		}
		cmd, _ := json.Marshal(argv)
		manifest += fmt.Sprintf("  - name: %s\n    command: %s\n    permissions: true\n    tools: [notify_team]\n    formats: [anthropic-messages]\n", h.name, cmd)
		agent(h.name, h.agentExtra)
	}
	manifest += "  - name: badcmd\n    command: [nosuchprogram9]\n    formats: [anthropic-messages]\n" +
		"  - name: badinterp\n    command: [./bad.sh]\n    formats: [anthropic-messages]\n"
	agent("badcmd", "")
	agent("badinterp", "")
	files["oz0-plugin.yaml"] = manifest
	testbin.WriteFiles(t, filepath.Join(root, "faults"), files)
	fx.plugins = append(fx.plugins, filepath.Join(root, "faults"))

	// The Python rows run the byo-agent template's harness, with an agent that streams when its
	// input says so.
	if _, err := exec.LookPath("python3"); err == nil {
		fx.python = true
		if _, err := scaffold.Create(scaffold.Options{Name: "modelfaults", Template: "byo-agent", Description: "Fails as its model does", Parent: root}); err != nil {
			t.Fatal(err)
		}
		testbin.WriteFiles(t, filepath.Join(root, "modelfaults"), map[string]string{"src/modelfaults/agent.py": `from .harness import Session


def run(session: Session) -> str:
    if session.text.startswith("stream"):
        return session.complete(session.text, say=True)
    return session.complete(session.text)
`})
		fx.plugins = append(fx.plugins, filepath.Join(root, "modelfaults"))
	}

	fx.hooks = filepath.Join(root, "hooks.yaml")
	testbin.WriteFiles(t, root, map[string]string{
		"hooks.yaml":  fmt.Sprintf("hooks:\n  - name: crashy\n    match: hookcrash.notify_team\n    plugin: %s\n", testbin.Build(t, testbin.CrashHook)),
		"faults.yaml": faultsScript,
	})
	fx.upstream = startProcess(t, filepath.Join(root, "upstream.url"), filepath.Join(root, "upstream.log"), bin,
		"fake-model", "serve", "--script", filepath.Join(root, "faults.yaml"), "--ready-file", filepath.Join(root, "upstream.url")).ready
	return fx
}

// proc is a server process the test started: it is stopped with SIGINT at the end.
type proc struct {
	cmd   *exec.Cmd
	ready string // what it wrote to its ready file
	log   string
	done  chan struct{}
}

// startProcess starts a server that writes its ready file, and waits for it.
func startProcess(t *testing.T, readyFile, logFile string, name string, args ...string) *proc {
	t.Helper()
	out, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: exec.Command(name, args...), log: logFile, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	return p.start(t, readyFile, out)
}

func (p *proc) start(t *testing.T, readyFile string, out *os.File) *proc {
	t.Helper()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); out.Close(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(time.Minute):
			p.cmd.Process.Kill()
		}
	})
	deadline := time.Now().Add(time.Minute)
	for {
		if b, err := os.ReadFile(readyFile); err == nil && len(b) > 0 {
			p.ready = strings.TrimSpace(string(b))
			return p
		}
		select {
		case <-p.done:
			b, _ := os.ReadFile(p.log)
			t.Fatalf("%s exited before it was ready:\n%s", p.cmd.Path, b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready within a minute", p.cmd.Path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// faultDev is an `oz0 dev` under test.
type faultDev struct {
	fx    *faultFixtures
	p     *proc
	ctx   apiv1.Context
	tmp   string // the sessions' TMPDIR
	state string
	http  *http.Client
}

func (fx *faultFixtures) startDev(t *testing.T, tier sandbox.Tier) *faultDev {
	t.Helper()
	return fx.startDevIn(t, tier, filepath.Join(fx.root, string(tier)), "dev.log")
}

// startDevIn starts `oz0 dev` on dir/state, its sessions in dir/tmp, its log in dir/logName.
func (fx *faultFixtures) startDevIn(t *testing.T, tier sandbox.Tier, dir, logName string) *faultDev {
	t.Helper()
	d := &faultDev{fx: fx, tmp: filepath.Join(dir, "tmp"), state: filepath.Join(dir, "state"),
		http: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	if err := os.MkdirAll(d.tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(dir, "ctx")
	os.Remove(ready) // a stale one, from the server before
	// --cold: what each job leaves behind is what the matrix checks, and a session made ahead
	// waiting for the next job is the node's, not the job's (dev_warm and supervisor/ahead's
	// tests cover those).
	args := []string{"dev", "--state-dir", d.state, "--sandbox", string(tier), "--hooks", fx.hooks, "--ready-file", ready, "--cold"}
	for _, p := range fx.plugins {
		args = append(args, "--plugin", p)
	}
	out, err := os.Create(filepath.Join(dir, logName))
	if err != nil {
		t.Fatal(err)
	}
	d.p = &proc{cmd: exec.Command(fx.bin, args...), log: out.Name(), done: make(chan struct{})}
	d.p.cmd.Stdout, d.p.cmd.Stderr = out, out
	d.p.cmd.Env = append(os.Environ(), "TMPDIR="+d.tmp)
	d.p.start(t, ready, out)
	if d.ctx, err = apiv1.ParseContext(d.p.ready); err != nil {
		t.Fatal(err)
	}
	// The tenant's key, with the upstream that fails as the script says as its base URL.
	if code, _, stderr := d.oz0(t, "sk-ant-faults-not-a-real-key\n", "secret", "set", "ANTHROPIC_API_KEY", "--base-url", fx.upstream); code != 0 {
		t.Fatalf("oz0 secret set: exit %d: %s", code, stderr)
	}
	return d
}

// oz0 runs the oz0 command with the server's OZ0_CONTEXT.
func (d *faultDev) oz0(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	r := d.start(t, stdin, args...)
	return r.wait(t), r.stdout(), r.stderr()
}

// cliRun is an oz0 command running.
type cliRun struct {
	cmd      *exec.Cmd
	mu       sync.Mutex
	out, err bytes.Buffer
	copied   sync.WaitGroup
}

func (d *faultDev) start(t *testing.T, stdin string, args ...string) *cliRun {
	t.Helper()
	r := &cliRun{cmd: exec.Command(d.fx.bin, args...)}
	r.cmd.Env = append(os.Environ(), apiv1.ContextEnv+"="+d.ctx.String())
	r.cmd.Stdin = strings.NewReader(stdin)
	outPipe, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		from io.Reader
		to   *bytes.Buffer
	}{{outPipe, &r.out}, {errPipe, &r.err}} {
		r.copied.Add(1)
		go func() {
			defer r.copied.Done()
			buf := make([]byte, 32<<10)
			for {
				n, err := c.from.Read(buf)
				r.mu.Lock()
				c.to.Write(buf[:n])
				r.mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	return r
}

func (r *cliRun) stdout() string { r.mu.Lock(); defer r.mu.Unlock(); return r.out.String() }
func (r *cliRun) stderr() string { r.mu.Lock(); defer r.mu.Unlock(); return r.err.String() }

// waitFor waits until a line of the command's stdout or stderr matches re, and returns the
// submatches of the first that does.
func (r *cliRun) waitFor(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		for _, s := range []string{r.stdout(), r.stderr()} {
			if m := re.FindStringSubmatch(s); m != nil {
				return m
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("oz0 %v printed no line matching %q within a minute:\n%s\n%s", r.cmd.Args[1:], re, r.stdout(), r.stderr())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// wait waits for the command to exit (for at most two minutes) and returns its exit code.
func (r *cliRun) wait(t *testing.T) int {
	t.Helper()
	exited := make(chan error, 1)
	go func() { r.copied.Wait(); exited <- r.cmd.Wait() }()
	var err error
	select {
	case err = <-exited:
	case <-time.After(2 * time.Minute):
		r.cmd.Process.Kill()
		t.Fatalf("oz0 %v did not exit within two minutes:\n%s\n%s", r.cmd.Args[1:], r.stdout(), r.stderr())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

var jobLine = regexp.MustCompile(`(?m)^oz0: job (job_[a-z2-7]+): `)

// runFault runs a row's job with `oz0 run` (cancelling it with `oz0 job cancel` where the row
// says), and checks what oz0 run printed, how the job ended and its trace.
func (d *faultDev) runFault(t *testing.T, f fault) {
	t.Helper()
	input := f.input
	if input == "" {
		input = "I was charged twice for my order"
	}
	r := d.start(t, "", "run", f.agent, input)
	if f.cancelAt != "" {
		r.waitFor(t, regexp.MustCompile("(?m)"+f.cancelAt))
		id := r.waitFor(t, jobLine)[1]
		if code, _, stderr := d.oz0(t, "", "job", "cancel", id); code != 0 {
			t.Errorf("oz0 job cancel: exit %d: %s", code, stderr)
		}
	}
	code := r.wait(t)
	stdout, stderr := r.stdout(), r.stderr()
	m := jobLine.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("oz0 run printed no job (exit %d):\n%s\n%s", code, stdout, stderr)
	}
	id := m[1]
	code2, show, showErr := d.oz0(t, "", "job", "show", id, "--json")
	var j apiv1.Job
	if code2 != 0 || json.Unmarshal([]byte(show), &j) != nil {
		t.Fatalf("oz0 job show: exit %d: %s%s", code2, show, showErr)
	}
	// What a person reads: oz0 run's last line on stderr, its exit code, and the job's record.
	t.Logf("%s → %s %q; oz0 run exit %d, stderr:\n%s", f.name, j.Status, j.Reason, code, stderr)
	wantCode := 1
	if f.status == apiv1.StatusSucceeded {
		wantCode = 0
	}
	if j.Status != f.status || code != wantCode {
		t.Errorf("job %s ended %s (%s), oz0 run exit %d; want %s, exit %d", id, j.Status, j.Reason, code, f.status, wantCode)
	}
	if f.reason != "" && !regexp.MustCompile(`^(?:`+f.reason+`)$`).MatchString(j.Reason) {
		t.Errorf("job %s's reason:\n%s\nwant it to match:\n%s", id, j.Reason, f.reason)
	}
	if f.reason == "" && j.Reason != "" {
		t.Errorf("job %s has a reason: %q", id, j.Reason)
	}
	if f.status != apiv1.StatusSucceeded {
		// oz0 run's last word is the job's, once: the status and the reason as the record has them.
		want := fmt.Sprintf("oz0: job %s %s: %s\n", id, strings.ReplaceAll(string(f.status), "_", " "), strings.Join(strings.Fields(j.Reason), " "))
		last := stderr[strings.LastIndex(stderr, "oz0: job "+id+" "):]
		// What follows it, indented, is the traceback's last frames and where the whole one is.
		if frames := regexp.MustCompile(`\n  \S+:\d+, in `).FindStringIndex(last); frames != nil {
			last = last[:frames[0]]
		}
		if got := strings.Join(strings.Fields(last), " ") + "\n"; got != want {
			t.Errorf("oz0 run's last line:\n%swant\n%s", got, want)
		}
	}
	if f.out != "" && !regexp.MustCompile("(?m)"+f.out).MatchString(stdout) {
		t.Errorf("oz0 run's stdout:\n%s\nwant it to match:\n%s", stdout, f.out)
	}
	if f.trace != nil {
		code, trace, stderr := d.oz0(t, "", "job", "trace", id)
		if code != 0 {
			t.Fatalf("oz0 job trace: exit %d: %s", code, stderr)
		}
		_, evs, err := store.LoadTrace(strings.NewReader(trace))
		if err != nil {
			t.Fatalf("the trace does not load: %v", err)
		}
		f.trace(t, evs)
	}
	if f.after != nil {
		f.after(t, d, id)
	}
}

// approvalWithdrawn checks that the job's approval is withdrawn, saying why.
func approvalWithdrawn(t *testing.T, d *faultDev, job string) {
	t.Helper()
	code, out, stderr := d.oz0(t, "", "approval", "list", "--all", "--json")
	var list []apiv1.Approval
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
		t.Fatalf("oz0 approval list: exit %d: %s%s", code, out, stderr)
	}
	i := slices.IndexFunc(list, func(a apiv1.Approval) bool { return a.Job == job })
	if i < 0 || list[i].Status != "withdrawn" || list[i].Reason != "the job was cancelled before anyone answered" {
		t.Errorf("the job's approval: %+v", list)
	}
}

// wantEvents checks that the trace has an event (as its JSON line) matching each regexp.
func wantEvents(res ...string) func(*testing.T, []store.Event) {
	return func(t *testing.T, evs []store.Event) {
		t.Helper()
		lines := traceLines(evs)
		for _, re := range res {
			if !slices.ContainsFunc(lines, regexp.MustCompile(re).MatchString) {
				t.Errorf("no event of the trace matches %s:\n%s", re, clipLines(lines))
			}
		}
	}
}

// wantInOrder checks that events matching the regexps come in that order.
func wantInOrder(res ...string) func(*testing.T, []store.Event) {
	return func(t *testing.T, evs []store.Event) {
		t.Helper()
		lines := traceLines(evs)
		at := -1
		for _, re := range res {
			i := slices.IndexFunc(lines[at+1:], regexp.MustCompile(re).MatchString)
			if i < 0 {
				t.Errorf("no event matching %s after event %d of the trace:\n%s", re, at+1, clipLines(lines))
				return
			}
			at += 1 + i
		}
	}
}

// clipLines joins a trace's first and last lines, for a message.
func clipLines(lines []string) string {
	if len(lines) > 40 {
		lines = append(append(slices.Clone(lines[:20]), fmt.Sprintf("… %d more …", len(lines)-40)), lines[len(lines)-20:]...)
	}
	for i, l := range lines {
		if len(l) > 300 {
			lines[i] = l[:300] + "…"
		}
	}
	return strings.Join(lines, "\n")
}

func traceLines(evs []store.Event) []string {
	lines := make([]string, len(evs))
	for i, e := range evs {
		b, _ := json.Marshal(struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}{e.Type, e.Data})
		lines[i] = string(b)
	}
	return lines
}

// mustSucceed runs a job that must succeed.
func (d *faultDev) mustSucceed(t *testing.T, agent, input string) {
	t.Helper()
	if code, stdout, stderr := d.oz0(t, "", "run", agent, input); code != 0 {
		t.Fatalf("the next job, oz0 run %s: exit %d:\n%s\n%s", agent, code, stdout, stderr)
	}
}

// warmUp runs the jobs that start what stays (a sandbox's init started ahead, the upstream's
// connections), so that the snapshot after is the server at rest.
func (d *faultDev) warmUp(t *testing.T) {
	d.mustSucceed(t, "ok", "hello")
	d.mustSucceed(t, "triage", "I was charged twice") // a model call and a tool call
	if d.fx.python {
		d.mustSucceed(t, "modelfaults", "hello")
	}
	d.mustSucceed(t, "ok", "hello")
}

// restState is what the server holds at rest.
type restState struct {
	goroutines map[string]goroutineGroup // by their stack's PCs
	fds        map[string]int            // by kind: socket, pipe, anon_inode:…, or the file
}

type goroutineGroup struct {
	n     int
	stack string
}

func (d *faultDev) snapshot(t *testing.T) restState {
	t.Helper()
	s := restState{fds: map[string]int{}}
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", d.p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", d.p.cmd.Process.Pid, e.Name()))
		if err != nil {
			continue // closed while we looked
		}
		kind := target
		if i := strings.Index(target, ":["); i >= 0 && (strings.HasPrefix(target, "socket") || strings.HasPrefix(target, "pipe")) {
			kind = target[:i]
		}
		s.fds[kind]++
	}
	s.goroutines = d.goroutines(t)
	return s
}

// goroutines reads the server's goroutines (GET /api/v1/debug/goroutines), grouped by stack.
func (d *faultDev) goroutines(t *testing.T) map[string]goroutineGroup {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, d.ctx.URL+"/api/v1/debug/goroutines", nil)
	req.Header.Set("Authorization", "Bearer "+d.ctx.Token)
	resp, err := d.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("goroutines: %d %v", resp.StatusCode, err)
	}
	groups := map[string]goroutineGroup{}
	for _, g := range strings.Split(string(body), "\n\n") {
		head, stack, _ := strings.Cut(g, "\n")
		count, pcs, ok := strings.Cut(head, " @ ")
		n, err := strconv.Atoi(count)
		if !ok || err != nil {
			continue // the profile's first line
		}
		// This request's own goroutine is the one reading the profile.
		if strings.Contains(stack, "api.Goroutines") {
			n--
		}
		groups[pcs] = goroutineGroup{n, stack}
	}
	return groups
}

// total counts the goroutines but those of the gateway's idle connections to upstreams.
func total(g map[string]goroutineGroup) int {
	n := 0
	for _, grp := range g {
		n += grp.n
	}
	return n - upstreamConns(g)
}

// upstreamConns counts the goroutines of the gateway's idle connections to upstreams (two
// each), which its transport keeps for the next call: they are not leaks, and may come and go.
func upstreamConns(g map[string]goroutineGroup) int {
	n := 0
	for _, grp := range g {
		if strings.Contains(grp.stack, "net/http.(*persistConn)") {
			n += grp.n
		}
	}
	return n
}

// settle waits until the server is back at rest: no session directory, no process of a session,
// no more descendants, goroutines or file descriptors than at base (beside the upstream
// connections the gateway's transport keeps). It fails with what is left after 30 s.
func (d *faultDev) settle(t *testing.T, base restState) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := d.leftovers(t, base)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			// What a session left outside the dev server goes now, so that a failure leaves
			// nothing running.
			for _, p := range sessionOrphans(d.fx.root, descendants(d.p.cmd.Process.Pid)) {
				syscall.Kill(p.pid, syscall.SIGKILL)
			}
			t.Fatalf("after 30 s the job left:\n%s", strings.Join(left, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (d *faultDev) leftovers(t *testing.T, base restState) []string {
	var left []string
	entries, _ := os.ReadDir(d.tmp)
	for _, e := range entries {
		left = append(left, "a directory in the sessions' TMPDIR: "+e.Name())
	}
	// At rest, the dev server's only child is a sandbox's init started ahead for the next
	// session, waiting: one with no children.
	procs := descendants(d.p.cmd.Process.Pid)
	idle := 0
	for _, p := range procs {
		if p.parent == d.p.cmd.Process.Pid && p.arg0 == "oz0-sandbox-init" && !slices.ContainsFunc(procs, func(q procInfo) bool { return q.parent == p.pid }) {
			idle++
			continue
		}
		left = append(left, fmt.Sprintf("a process under the dev server: %s", p))
	}
	if idle > 1 {
		left = append(left, fmt.Sprintf("%d sandbox inits started ahead, waiting", idle))
	}
	for _, p := range sessionOrphans(d.fx.root, procs) {
		left = append(left, fmt.Sprintf("a process outside the dev server: %s in %s", p, p.cwd))
	}
	now := d.snapshot(t)
	for kind, n := range now.fds {
		// The store's connections are a pool (database/sql's), opened and closed as reads come.
		if strings.HasPrefix(kind, d.state+"/") {
			continue
		}
		allowed := base.fds[kind]
		if kind == "socket" {
			allowed += max(0, upstreamConns(now.goroutines)-upstreamConns(base.goroutines)) / 2
		}
		if n > allowed {
			left = append(left, fmt.Sprintf("%d file descriptors of %s, %d at rest", n, kind, base.fds[kind]))
		}
	}
	if n, at := total(now.goroutines), total(base.goroutines); n > at {
		var grew []string
		for pcs, g := range now.goroutines {
			if g.n > base.goroutines[pcs].n && !strings.Contains(g.stack, "net/http.(*persistConn)") {
				grew = append(grew, fmt.Sprintf("%d (%d at rest) of:\n%s", g.n, base.goroutines[pcs].n, g.stack))
			}
		}
		left = append(left, fmt.Sprintf("%d goroutines, %d at rest; these stacks have more:\n%s", n, at, strings.Join(grew, "\n")))
	}
	return left
}

// procInfo is a process as /proc shows it.
type procInfo struct {
	pid, parent     int
	start           uint64 // in clock ticks since boot: with pid, the process (pids are reused)
	arg0, comm, cwd string
}

func (p procInfo) String() string { return fmt.Sprintf("%d %s (%s)", p.pid, p.arg0, p.comm) }

// liveProcesses lists the processes that are not zombies.
func liveProcesses() []procInfo {
	var out []procInfo
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, ppid, comm, ok := procStat(pid)
		if !ok || state == "Z" || state == "X" {
			continue
		}
		start, _ := procStart(pid)
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		arg0, _, _ := strings.Cut(string(cmdline), "\x00")
		out = append(out, procInfo{pid: pid, parent: ppid, start: start, arg0: arg0, comm: comm})
	}
	return out
}

// descendants lists the live processes under pid.
func descendants(pid int) []procInfo {
	all := liveProcesses()
	parent := map[int]int{}
	for _, p := range all {
		parent[p.pid] = p.parent
	}
	var out []procInfo
	for _, p := range all {
		for q := p.parent; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// sessionOrphans lists the live processes, not among mine, whose working directory is under root
// (a session's, or the hooks file's): what a session left that left the dev server.
func sessionOrphans(root string, mine []procInfo) []procInfo {
	var out []procInfo
	for _, p := range liveProcesses() {
		if slices.ContainsFunc(mine, func(q procInfo) bool { return q.pid == p.pid }) {
			continue
		}
		if p.cwd, _ = os.Readlink(fmt.Sprintf("/proc/%d/cwd", p.pid)); strings.HasPrefix(p.cwd, root+"/") {
			out = append(out, p)
		}
	}
	return out
}

// procStart reads when a live process started, from /proc/PID/stat; false when it is gone or a
// zombie.
func procStart(pid int) (uint64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return 0, false
	}
	start, err := strconv.ParseUint(f[19], 10, 64) // field 22 of stat, the 20th after the name
	return start, err == nil
}

// procStat reads a process's state, parent and name from /proc/PID/stat.
func procStat(pid int) (state string, ppid int, comm string, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, "", false
	}
	s := string(b)
	open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || close < open {
		return "", 0, "", false
	}
	f := strings.Fields(s[close+1:])
	if len(f) < 2 {
		return "", 0, "", false
	}
	ppid, _ = strconv.Atoi(f[1])
	return f[0], ppid, s[open+1 : close], true
}

// rss is the dev server's resident memory, from /proc/PID/status.
func (d *faultDev) rss(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", d.p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// stop stops the server with SIGINT: it must stop cleanly.
func (d *faultDev) stop(t *testing.T) {
	t.Helper()
	d.p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-d.p.done:
	case <-time.After(time.Minute):
		t.Fatal("oz0 dev did not stop within a minute of SIGINT")
	}
	if code := d.p.cmd.ProcessState.ExitCode(); code != 0 {
		b, _ := os.ReadFile(d.p.log)
		t.Errorf("oz0 dev exited %d:\n%s", code, b)
	}
}
