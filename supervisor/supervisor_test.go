package supervisor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/internal/testbin"
	"github.com/orchestrator-zero/oz0/supervisor"
)

func TestSessionCompletes(t *testing.T) {
	end, events := run(t, spec(t, "ok"))
	wantStatus(t, end, harnesskit.Completed)
	if got := outputString(t, end); got != "done" {
		t.Errorf("output %q", got)
	}
	if end.ExitCode != 0 || end.Killed || end.Reason != "" {
		t.Errorf("end %+v", end)
	}
	says := ofKind(events, harnesskit.EventSay)
	if len(says) != 1 || says[0].Message.(harnesskit.Say).Text != "hello " || says[0].Line != 1 {
		t.Errorf("says %+v", says)
	}
	if logs := ofKind(events, harnesskit.EventLog); len(logs) != 1 || logs[0].Message != (harnesskit.Log{Level: "debug", Message: "about to answer"}) {
		t.Errorf("logs %+v", logs)
	}
	if r := ofKind(events, harnesskit.EventResult); len(r) != 1 || r[0].Line != 3 || string(r[0].Raw) != `{"type":"result","output":"done"}` {
		t.Errorf("result events %+v", r)
	}
}

func TestSessionRequestAsSent(t *testing.T) {
	sp := spec(t, "echo")
	sp.Request.Options = json.RawMessage(`{"depth":2}`)
	sp.Limits.Timeout = 90 * time.Second
	var s *supervisor.Session
	end, _, s := runSession(t, context.Background(), sp, nil)
	wantStatus(t, end, harnesskit.Completed)
	var got struct {
		Text, Job, Agent, Harness, Instructions, Workdir, Cwd string
		StateDir                                              string `json:"state_dir"`
		Input, Options                                        json.RawMessage
		Tools                                                 []string
		Limits                                                harnesskit.RequestLimits
		Model                                                 harnesskit.Model
	}
	if err := json.Unmarshal(end.Output, &got); err != nil {
		t.Fatal(err)
	}
	if got.Text != ticket || string(got.Input) != strconv.Quote(ticket) || got.Job != "job_test_1" ||
		got.Agent != "acme-triage" || got.Harness != "acme-triage" || string(got.Options) != `{"depth":2}` ||
		!slices.Equal(got.Tools, []string{"notify_team"}) || got.Limits.MaxSteps != 10 || got.Limits.TimeoutS != 90 ||
		got.Model.Record != "fake" || got.Instructions == "" {
		t.Errorf("the harness saw %+v", got)
	}
	if got.Workdir != s.Workdir() || got.Cwd != s.Workdir() || got.StateDir != s.StateDir() {
		t.Errorf("workdir %s cwd %s state_dir %s; want %s and %s", got.Workdir, got.Cwd, got.StateDir, s.Workdir(), s.StateDir())
	}
	if !strings.HasPrefix(s.Workdir(), sp.TempDir) {
		t.Errorf("workdir %s is not in TempDir %s", s.Workdir(), sp.TempDir)
	}
}

func TestSessionDirectoriesArePrivateAndFresh(t *testing.T) {
	sp := spec(t, "hang")
	var infos []os.FileInfo
	var entries int
	sp.Sink = func(e harnesskit.Event) {}
	end, _, _ := runSession(t, context.Background(), sp, func(s *supervisor.Session) {
		for _, d := range []string{s.Workdir(), s.StateDir(), filepath.Join(s.StateDir(), "tmp")} {
			info, err := os.Stat(d)
			if err != nil {
				t.Fatal(err)
			}
			infos = append(infos, info)
		}
		e, _ := os.ReadDir(s.Workdir())
		entries = len(e)
		s.Cancel()
	})
	wantStatus(t, end, harnesskit.Cancelled)
	for _, info := range infos {
		if info.Mode().Perm() != 0o700 || !info.IsDir() {
			t.Errorf("%s: mode %v, want a 0700 directory", info.Name(), info.Mode())
		}
	}
	if entries != 0 {
		t.Errorf("the working directory has %d entries at the start", entries)
	}
}

// The fault matrix: misbehaving harnesses, each ending with the right status and a reason a
// person understands, none leaking a process, goroutine or directory (run checks).

func TestFaultCrash(t *testing.T) {
	end, events := run(t, spec(t, "crash"))
	wantStatus(t, end, harnesskit.Failed, "exited with status 2 without a result or an error (rule 2)", "the end of its stderr:", "goroutine")
	if !strings.Contains(end.StderrTail, "panic: assignment to entry in nil map") {
		t.Errorf("stderr tail %q", end.StderrTail)
	}
	if len(ofKind(events, harnesskit.EventSay)) != 1 || len(ofKind(events, harnesskit.EventStderr)) == 0 {
		t.Errorf("events %v", kindsOf(events))
	}
}

func TestFaultKilledBySignal(t *testing.T) {
	end, _ := run(t, spec(t, "sigkill"))
	wantStatus(t, end, harnesskit.Failed, "killed by SIGKILL without a result or an error", "going down")
	if end.ExitCode != -1 || end.Signal != "SIGKILL" {
		t.Errorf("exit %d signal %q", end.ExitCode, end.Signal)
	}
}

func TestFaultHangTimesOut(t *testing.T) {
	sp := spec(t, "hang")
	sp.Limits.Timeout = 300 * time.Millisecond
	end, events := run(t, sp)
	wantStatus(t, end, harnesskit.TimedOut, "limits.timeout of 300ms")
	if end.Killed || end.Signal != "SIGTERM" {
		t.Errorf("killed %v signal %q: SIGTERM should have ended it", end.Killed, end.Signal)
	}
	if len(ofKind(events, harnesskit.EventSay)) != 1 {
		t.Errorf("events %v", kindsOf(events))
	}
}

func TestFaultHangCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	sp := spec(t, "hang")
	sp.Sink = func(e harnesskit.Event) {
		if e.Kind == harnesskit.EventSay {
			cancel()
		}
	}
	end, _, _ := runSession(t, ctx, sp, nil)
	wantStatus(t, end, harnesskit.Cancelled, "the session was cancelled: context canceled")
}

func TestFaultNonJSON(t *testing.T) {
	end, events := run(t, spec(t, "nonjson"))
	wantStatus(t, end, harnesskit.Completed)
	strays := ofKind(events, harnesskit.EventStray)
	if len(strays) != 2 || strays[0].Text != "hello, this is not JSON" || strays[0].Note != "not JSON" ||
		strays[1].Text != "[1,2,3]" || strays[1].Note != "not a JSON object" || strays[0].Line != 1 {
		t.Errorf("strays %+v", strays)
	}
	ignored := ofKind(events, harnesskit.EventIgnored)
	var notes []string
	for _, e := range ignored {
		notes = append(notes, e.Note)
	}
	want := []string{`unknown type "mystery" (rule 3)`, `an object without a string "type" (rule 3)`, "a say message that is not valid: text is number, not a string"}
	if !slices.Equal(notes, want) {
		t.Errorf("ignored notes\n got %q\nwant %q", notes, want)
	}
	if says := ofKind(events, harnesskit.EventSay); len(says) != 1 || says[0].Line != 8 {
		t.Errorf("says %+v (blank lines count as lines, and are not strays)", says)
	}
}

func TestFaultLineOver8MiB(t *testing.T) {
	end, events := run(t, spec(t, "longline"))
	wantStatus(t, end, harnesskit.ProtocolViolation, "protocol violation (rule 3): line 2 of stdout: a line of 9437209 bytes is over the protocol's limit of 8 MiB (8388608 bytes)")
	if end.Rule != harnesskit.RuleLineTooLong {
		t.Errorf("rule %q", end.Rule)
	}
	// The result after the long line is ignored, if the harness wrote it before SIGTERM.
	for _, e := range ofKind(events, harnesskit.EventIgnored) {
		if !strings.Contains(e.Note, "after the session's last line") || e.Line != 3 {
			t.Errorf("the result after the long line: %+v", e)
		}
	}
	if len(ofKind(events, harnesskit.EventResult)) != 0 {
		t.Error("a result after the violation was taken")
	}
}

func TestFaultExit0WithoutResult(t *testing.T) {
	end, _ := run(t, spec(t, "exit0"))
	wantStatus(t, end, harnesskit.Failed, "the harness exited with status 0 without a result or an error (rule 2); its stderr is empty")
}

func TestFaultExitNonZeroWithoutResult(t *testing.T) {
	end, events := run(t, spec(t, "exit3"))
	wantStatus(t, end, harnesskit.Failed, "the harness exited with status 3 without a result or an error (rule 2); the end of its stderr:\n",
		"Traceback (most recent call last):", "ValueError: the ticket is empty")
	if strings.Contains(end.Reason, "noise line 20") {
		t.Errorf("the reason has more than the last 10 lines of stderr: %q", end.Reason)
	}
	if end.ExitCode != 3 {
		t.Errorf("exit code %d", end.ExitCode)
	}
	if n := len(ofKind(events, harnesskit.EventStderr)); n != 33 {
		t.Errorf("%d stderr events, want 33", n)
	}
}

func TestFaultLinesAfterResult(t *testing.T) {
	end, events := run(t, spec(t, "after"))
	wantStatus(t, end, harnesskit.Completed)
	if got := outputString(t, end); got != "first" {
		t.Errorf("output %q", got)
	}
	ignored := ofKind(events, harnesskit.EventIgnored)
	if len(ignored) != 3 {
		t.Fatalf("ignored %+v", ignored)
	}
	for _, e := range ignored {
		if !strings.HasPrefix(e.Note, "after the session's last line (rule 2)") {
			t.Errorf("note %q", e.Note)
		}
	}
	if len(ofKind(events, harnesskit.EventError)) != 0 || len(ofKind(events, harnesskit.EventSay)) != 0 {
		t.Errorf("events %v", kindsOf(events))
	}
}

func TestFaultIgnoresSIGTERM(t *testing.T) {
	sp := spec(t, "ignoreterm")
	sp.Limits.Timeout = 200 * time.Millisecond
	end, _ := run(t, sp)
	wantStatus(t, end, harnesskit.TimedOut, "limits.timeout", "; it did not exit within 300ms of SIGTERM and its process group was killed")
	if !end.Killed || end.Signal != "SIGKILL" {
		t.Errorf("killed %v signal %q", end.Killed, end.Signal)
	}
}

// Kill ends a session at once, without its grace period: a harness that ignores SIGTERM under
// an hour's grace would otherwise hold its node's stop for an hour (a second Ctrl-C on oz0 dev).
func TestKillSkipsTheGrace(t *testing.T) {
	sp := spec(t, "ignoreterm")
	sp.Limits.Grace = time.Hour     // a Kill that waited for it would hang the test, not pass it
	ignoring := make(chan struct{}) // its say comes once it ignores SIGTERM
	var once sync.Once
	sp.Sink = func(e harnesskit.Event) {
		if e.Kind == harnesskit.EventSay {
			once.Do(func() { close(ignoring) })
		}
	}
	end, _, _ := runSession(t, context.Background(), sp, func(s *supervisor.Session) {
		<-ignoring
		s.Cancel()
		s.Kill()
		s.Kill() // a second is nothing more
	})
	wantStatus(t, end, harnesskit.Cancelled, "the session was cancelled; its process group was killed at once")
	if !end.Killed || end.Signal != "SIGKILL" {
		t.Errorf("killed %v signal %q", end.Killed, end.Signal)
	}
}

func TestFaultGrandchildHoldsStdout(t *testing.T) {
	sp := spec(t, "grandchild")
	sp.Limits.Grace = time.Hour // a supervisor that waited for it would hang the test, not pass it
	end, _ := run(t, sp)
	wantStatus(t, end, harnesskit.Completed)
	pid := grandchildPID(t, end)
	if processAlive(pid) {
		t.Errorf("the grandchild %d is alive", pid)
		syscall.Kill(pid, syscall.SIGKILL)
	}
	// The group is killed as soon as the harness exits: with an hour's grace, waiting for it would
	// hang the test.
}

func TestFaultGrandchildLeavesTheGroup(t *testing.T) {
	sp := spec(t, "grandchild", "setsid")
	var pid int
	t.Cleanup(func() {
		if pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	sp.Limits.Grace = time.Hour // a supervisor that waited for it would hang the test, not pass it
	end, _ := run(t, sp)
	wantStatus(t, end, harnesskit.Completed)
	pid = grandchildPID(t, end)
	// It escaped the group, but it holds stdout: the supervisor finds it by its pipe and kills
	// it, and does not wait for it.
	deadline := time.Now().Add(10 * time.Second)
	for processAlive(pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if processAlive(pid) {
		t.Errorf("the grandchild %d, which holds the session's stdout, is alive", pid)
	}
}

func grandchildPID(t *testing.T, end harnesskit.End) int {
	t.Helper()
	var pid int
	if _, err := fmt.Sscanf(end.StderrTail, "grandchild %d", &pid); err != nil || pid <= 0 {
		t.Fatalf("no grandchild pid in stderr %q", end.StderrTail)
	}
	return pid
}

func TestFaultStderrFlood(t *testing.T) {
	const flood = 200 << 20
	var stderrBytes, stderrEvents int64
	var notes []string
	sp := spec(t, "stderrflood", strconv.Itoa(flood))
	sp.Limits.Timeout = 2 * time.Minute
	sp.Sink = func(e harnesskit.Event) {
		if e.Kind == harnesskit.EventStderr {
			stderrEvents++
			stderrBytes += int64(len(e.Text))
			if e.Note != "" {
				notes = append(notes, e.Note)
			}
		}
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	end, _ := run(t, sp)
	runtime.ReadMemStats(&after)
	wantStatus(t, end, harnesskit.Completed)
	if end.StderrBytes < flood {
		t.Errorf("stderr bytes %d, want at least %d", end.StderrBytes, flood)
	}
	if n := len(end.StderrTail); n > supervisor.StderrTailSize || n < supervisor.StderrTailSize-200 {
		t.Errorf("the tail is %d bytes, want about %d", n, supervisor.StderrTailSize)
	}
	if !strings.HasSuffix(end.StderrTail, "the last line of stderr\n") {
		t.Errorf("the tail ends %q", end.StderrTail[max(0, len(end.StderrTail)-100):])
	}
	budget := float64(supervisor.StderrBurst) + end.Elapsed.Seconds()*supervisor.StderrRate
	if float64(stderrBytes) > budget {
		t.Errorf("%d bytes of stderr went to the sink, over the budget of %.0f", stderrBytes, budget)
	}
	if end.StderrDropped == 0 || len(notes) == 0 || !strings.Contains(notes[len(notes)-1], "lines of stderr") {
		t.Errorf("dropped %d, notes %q", end.StderrDropped, notes)
	}
	// Memory: what the supervisor allocated while 200 MB went through is bounded, far below
	// what keeping stderr would take.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Errorf("the session allocated %d MiB for %d MiB of stderr", alloc>>20, flood>>20)
	}
	t.Logf("%d MiB of stderr in %s: %d events (%d KiB) to the sink, %d lines left out, %d KiB allocated",
		end.StderrBytes>>20, end.Elapsed.Round(time.Millisecond), stderrEvents, stderrBytes>>10, end.StderrDropped, (after.TotalAlloc-before.TotalAlloc)>>10)
}

func TestFaultUnlistedTool(t *testing.T) {
	var asked atomic.Int32
	sp := spec(t, "unlisted")
	sp.Decider = supervisor.DeciderFunc(func(context.Context, *supervisor.Ask) supervisor.Decision {
		asked.Add(1)
		return supervisor.Allow(nil)
	})
	end, events := run(t, sp)
	wantStatus(t, end, harnesskit.Completed)
	want := "refused: tool `rm_rf` is not in the agent's harness.tools (it lists notify_team)"
	if got := outputString(t, end); got != want {
		t.Errorf("output %q, want %q", got, want)
	}
	if asked.Load() != 0 {
		t.Error("the decider saw a tool the agent does not list")
	}
	answers := ofKind(events, harnesskit.EventPermission)
	if len(answers) != 1 || answers[0].By != harnesskit.BySupervisor || answers[0].Message.(harnesskit.Permission).Allow {
		t.Errorf("answers %+v", answers)
	}
}

func TestFaultReusedPermissionID(t *testing.T) {
	end, events := run(t, spec(t, "reuseid"))
	wantStatus(t, end, harnesskit.ProtocolViolation, `protocol violation (ids): line 2 of stdout is a permission_request with the id "p1", which this session has already used; ids are unique per session`)
	if end.Rule != harnesskit.RuleIDs {
		t.Errorf("rule %q", end.Rule)
	}
	if n := len(ofKind(events, harnesskit.EventPermission)); n != 1 {
		t.Errorf("%d answers, want 1 (exactly one per id)", n)
	}
}

func TestFaultInvalidUTF8(t *testing.T) {
	end, events := run(t, spec(t, "badutf8"))
	wantStatus(t, end, harnesskit.Completed)
	strays := ofKind(events, harnesskit.EventStray)
	if len(strays) != 2 {
		t.Fatalf("strays %+v", strays)
	}
	for _, e := range strays {
		if e.Note != "not valid UTF-8" || !strings.Contains(e.Text, "\uFFFD") {
			t.Errorf("stray %+v", e)
		}
	}
}

func TestFaultSpeaksProtocol2(t *testing.T) {
	end, _ := run(t, spec(t, "protocol2"))
	wantStatus(t, end, harnesskit.Failed, "the harness failed: the session asks for protocol 1: this harness speaks protocol 2")
	if end.Message != "the session asks for protocol 1: this harness speaks protocol 2" || end.ExitCode != 1 {
		t.Errorf("end %+v", end)
	}
}

func TestSDKRefusesProtocol2(t *testing.T) {
	sp := spec(t, "ok")
	sp.Request.Protocol = 2
	end, _ := run(t, sp)
	wantStatus(t, end, harnesskit.Failed, "the session asks for protocol 2: this harness speaks protocol 1")
}

func TestFaultResultWithoutOutput(t *testing.T) {
	end, _ := run(t, spec(t, "badresult"))
	wantStatus(t, end, harnesskit.ProtocolViolation, "protocol violation (messages): line 1 of stdout is a result message that is not valid: no output")
}

func TestFaultClosesStdout(t *testing.T) {
	end, _ := run(t, spec(t, "closestdout"))
	wantStatus(t, end, harnesskit.Failed, "the harness closed its stdout without a result or an error (rule 2) and did not exit within 300ms")
}

func TestFaultDoesNotExitAfterResult(t *testing.T) {
	end, _ := run(t, spec(t, "slowexit"))
	wantStatus(t, end, harnesskit.Completed)
	if !end.Killed || end.Signal != "SIGKILL" || outputString(t, end) != "answered" {
		t.Errorf("end %+v", end)
	}
}

func TestHarnessError(t *testing.T) {
	end, events := run(t, spec(t, "fail"))
	wantStatus(t, end, harnesskit.Failed, "the harness failed: the ticket system is down")
	if end.ExitCode != 1 {
		t.Errorf("exit code %d", end.ExitCode)
	}
	lines := ofKind(events, harnesskit.EventStderr)
	if len(lines) == 0 || lines[0].Text != "this print goes to stderr" {
		t.Errorf("stderr events %+v (fmt.Println in a harness goes to stderr)", lines)
	}
}

func TestStartErrors(t *testing.T) {
	sp := spec(t, "ok")
	for name, mod := range map[string]func(*supervisor.Spec){
		"no command":      func(s *supervisor.Spec) { s.Command = nil },
		"not on PATH":     func(s *supervisor.Spec) { s.Command = []string{"oz0-no-such-harness"} },
		"relative":        func(s *supervisor.Spec) { s.Command = []string{"bin/harness"} },
		"request too big": func(s *supervisor.Spec) { s.Request.Text = strings.Repeat("x", harnesskit.MaxLine) },
		"not a program": func(s *supervisor.Spec) {
			os.WriteFile(filepath.Join(s.PluginDir, "garbage"), []byte("\x00\x01 not a program"), 0o755)
			s.Command = []string{"./garbage"}
		},
	} {
		s := sp
		mod(&s)
		if _, err := supervisor.Start(context.Background(), s); err == nil {
			t.Errorf("%s: no error", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
		if entries, _ := os.ReadDir(s.TempDir); len(entries) > 0 {
			t.Errorf("%s: left %d entries in TempDir", name, len(entries))
		}
	}
}

func TestRelativeCommandResolvesAgainstPluginDir(t *testing.T) {
	sp := spec(t, "ok")
	if err := os.MkdirAll(filepath.Join(sp.PluginDir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(harnessBinary(t), filepath.Join(sp.PluginDir, "bin", "harness")); err != nil {
		t.Fatal(err)
	}
	sp.Command = []string{"bin/harness", "ok"}
	end, _ := run(t, sp)
	wantStatus(t, end, harnesskit.Completed)
}

// ---- the environment ----------------------------------------------------------------------------

func TestSessionEnvironmentIsMinimal(t *testing.T) {
	t.Setenv("OZ0_TEST_TENANT_KEY", "sk-ant-tenant-secret")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-node-secret")
	t.Setenv("PYTHONPATH", "/node/python/path")
	sp := spec(t, "env")
	sp.Env = supervisor.Env{
		AnthropicBaseURL: "http://127.0.0.1:9/gateway/anthropic", AnthropicAPIKey: "oz0s_session_key",
		OpenAIBaseURL: "http://127.0.0.1:9/gateway/openai/v1", OpenAIAPIKey: "oz0s_session_key",
	}
	end, _, s := runSession(t, context.Background(), sp, nil)
	wantStatus(t, end, harnesskit.Completed)
	var env map[string]string
	if err := json.Unmarshal(end.Output, &env); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": s.StateDir(), "LANG": "C.UTF-8",
		"TMPDIR": filepath.Join(s.StateDir(), "tmp"), "PYTHONUNBUFFERED": "1",
		"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/gateway/anthropic", "ANTHROPIC_API_KEY": "oz0s_session_key",
		"OPENAI_BASE_URL": "http://127.0.0.1:9/gateway/openai/v1", "OPENAI_API_KEY": "oz0s_session_key",
		"OZ0_JOB": "job_test_1", "OZ0_AGENT": "acme-triage",
		// Anthropic's and OpenAI's SDKs add these headers to every call.
		"ANTHROPIC_CUSTOM_HEADERS": "Oz0-Job: job_test_1\nOz0-Agent: acme-triage",
		"OPENAI_CUSTOM_HEADERS":    "Oz0-Job: job_test_1\nOz0-Agent: acme-triage",
	}
	if fmt.Sprint(env) != fmt.Sprint(want) {
		t.Errorf("the harness's environment\n got %v\nwant %v", env, want)
	}
	for k, v := range env {
		if strings.Contains(v, "secret") || strings.Contains(v, "/node/") {
			t.Errorf("%s=%s leaks the node's environment", k, v)
		}
	}
}

func TestPythonEnvironment(t *testing.T) {
	python := testbin.Python(t)
	dump := "import json, os, sys; print(json.dumps({'type': 'result', 'output': {'env': dict(os.environ), 'exe': sys.executable}}))"

	t.Run("src on PYTHONPATH", func(t *testing.T) {
		sp := spec(t, "")
		os.Mkdir(filepath.Join(sp.PluginDir, "src"), 0o755)
		sp.Command = []string{"python", "-c", dump}
		sp.Env.PATH = filepath.Dir(python) + ":" + os.Getenv("PATH") // the interpreter, not a pyenv shim
		end, _, s := runSession(t, context.Background(), sp, nil)
		wantStatus(t, end, harnesskit.Completed)
		env, _ := pythonDump(t, end)
		if env["PYTHONPATH"] != filepath.Join(sp.PluginDir, "src") || env["HOME"] != s.StateDir() {
			t.Errorf("env %v", env)
		}
		checkNames(t, env)
	})
	// A python3 that is a wrapper script (as pyenv's shim is, which costs each session ~150 ms):
	// the session runs the interpreter it runs, in tier none as in the sandboxed tiers.
	t.Run("a wrapper on PATH, tier none", func(t *testing.T) {
		sp := spec(t, "")
		wrappers := t.TempDir()
		wrapper := "#!/bin/sh\nOZ0_TEST_VIA_WRAPPER=1 exec " + python + " \"$@\"\n"
		if err := os.WriteFile(filepath.Join(wrappers, "python3"), []byte(wrapper), 0o755); err != nil {
			t.Fatal(err)
		}
		sp.Command = []string{"python3", "-c", dump}
		sp.Env.PATH = wrappers + ":" + os.Getenv("PATH")
		end, _, _ := runSession(t, context.Background(), sp, nil)
		wantStatus(t, end, harnesskit.Completed)
		env, exe := pythonDump(t, end)
		if _, ok := env["OZ0_TEST_VIA_WRAPPER"]; ok || exe != python {
			t.Errorf("the session ran through the wrapper (exe %s, env %v); want %s itself", exe, env, python)
		}
	})
	t.Run("the plugin's venv", func(t *testing.T) {
		sp := spec(t, "")
		bin := filepath.Join(sp.PluginDir, ".venv", "bin")
		os.MkdirAll(bin, 0o755)
		if err := os.Symlink(python, filepath.Join(bin, "python")); err != nil {
			t.Fatal(err)
		}
		sp.Command = []string{"python3", "-c", dump}
		end, _, _ := runSession(t, context.Background(), sp, nil)
		wantStatus(t, end, harnesskit.Completed)
		env, exe := pythonDump(t, end)
		if exe != filepath.Join(bin, "python") || !strings.HasPrefix(env["PATH"], bin+":") {
			t.Errorf("exe %s, PATH %s", exe, env["PATH"])
		}
		if _, ok := env["PYTHONPATH"]; ok {
			t.Errorf("PYTHONPATH %q without src/", env["PYTHONPATH"])
		}
		checkNames(t, env)
	})
}

func checkNames(t *testing.T, env map[string]string) {
	t.Helper()
	for k := range env {
		// CPython may add LC_CTYPE itself (PEP 538, C locale coercion).
		if !slices.Contains(supervisor.AllowedEnv, k) && k != "LC_CTYPE" {
			t.Errorf("the session's environment has %s", k)
		}
	}
}

func pythonDump(t *testing.T, end harnesskit.End) (map[string]string, string) {
	t.Helper()
	var out struct {
		Env map[string]string
		Exe string
	}
	if err := json.Unmarshal(end.Output, &out); err != nil {
		t.Fatal(err)
	}
	return out.Env, out.Exe
}

// ---- permissions --------------------------------------------------------------------------------

func toolsSpec(t *testing.T, calls ...string) supervisor.Spec {
	sp := spec(t, "tools")
	var cs []map[string]any
	for i, tool := range calls {
		cs = append(cs, map[string]any{"tool": tool, "arguments": map[string]any{"n": i}})
	}
	sp.Request.Options, _ = json.Marshal(map[string]any{"calls": cs})
	sp.Request.Tools = []string{"notify_team", "lookup_order", "refund"}
	return sp
}

func TestDeciderChangesArguments(t *testing.T) {
	sp := toolsSpec(t, "notify_team")
	sp.Decider = supervisor.DeciderFunc(func(_ context.Context, a *supervisor.Ask) supervisor.Decision {
		if a.Tool != "notify_team" || string(a.Arguments) != `{"n":0}` || a.Harness != "acme-triage" || a.Job != "job_test_1" {
			t.Errorf("ask %+v", a)
		}
		return supervisor.Allow(json.RawMessage(`{"n": 42, "team": "account"}`))
	})
	end, events := run(t, sp)
	wantStatus(t, end, harnesskit.Completed)
	if string(end.Output) != `[{"allowed":{"n":42,"team":"account"}}]` {
		t.Errorf("output %s", end.Output)
	}
	kinds := kindsOf(events)
	want := []harnesskit.EventKind{harnesskit.EventPermissionRequest, harnesskit.EventPermission, harnesskit.EventToolResult, harnesskit.EventResult, harnesskit.EventEnd}
	if !slices.Equal(kinds, want) {
		t.Errorf("events %v, want %v", kinds, want)
	}
	if tr := ofKind(events, harnesskit.EventToolResult); len(tr) == 1 {
		if m := tr[0].Message.(harnesskit.ToolResult); m.ID != "p1" || string(m.Result) != `"ran notify_team"` {
			t.Errorf("tool result %+v", m)
		}
	}
}

func TestSeveralPermissionRequestsOpenAtOnce(t *testing.T) {
	sp := toolsSpec(t, "notify_team", "lookup_order", "refund")
	var mu sync.Mutex
	arrived := map[string]bool{}
	all := make(chan struct{})
	sp.Decider = supervisor.DeciderFunc(func(ctx context.Context, a *supervisor.Ask) supervisor.Decision {
		mu.Lock()
		arrived[a.ID] = true
		if len(arrived) == 3 {
			close(all)
		}
		mu.Unlock()
		select { // every request is open before any is answered
		case <-all:
		case <-ctx.Done():
			return supervisor.Deny("session ended")
		}
		if a.Tool == "refund" {
			return supervisor.Deny("refunds need a person")
		}
		return supervisor.Allow(nil)
	})
	end, _ := run(t, sp)
	wantStatus(t, end, harnesskit.Completed)
	var out []map[string]any
	json.Unmarshal(end.Output, &out)
	if len(out) != 3 || out[2]["refused"] != "refunds need a person" || out[0]["allowed"] == nil || out[1]["allowed"] == nil {
		t.Errorf("output %s", end.Output)
	}
}

func TestHoldStopsTheTimeout(t *testing.T) {
	for _, hold := range []bool{true, false} {
		t.Run(fmt.Sprintf("hold=%v", hold), func(t *testing.T) {
			sp := toolsSpec(t, "notify_team")
			sp.Limits.Timeout = 400 * time.Millisecond
			sp.Decider = supervisor.DeciderFunc(func(ctx context.Context, a *supervisor.Ask) supervisor.Decision {
				if hold {
					defer a.Hold()() // waiting for a person
				}
				select {
				case <-time.After(time.Second):
					return supervisor.Allow(nil)
				case <-ctx.Done():
					return supervisor.Deny("the session ended")
				}
			})
			end, _ := run(t, sp)
			if hold {
				wantStatus(t, end, harnesskit.Completed)
				if end.Held < time.Second || end.Elapsed < time.Second {
					t.Errorf("held %s of %s", end.Held, end.Elapsed)
				}
			} else {
				wantStatus(t, end, harnesskit.TimedOut)
			}
		})
	}
}

func TestDeciderAbandonedWhenTheSessionEnds(t *testing.T) {
	sp := toolsSpec(t, "notify_team")
	var abandoned atomic.Bool
	sp.Decider = supervisor.DeciderFunc(func(ctx context.Context, a *supervisor.Ask) supervisor.Decision {
		<-ctx.Done() // a person who never comes
		abandoned.Store(true)
		return supervisor.Allow(nil)
	})
	end, events, _ := runSession(t, context.Background(), sp, func(s *supervisor.Session) {
		time.AfterFunc(200*time.Millisecond, s.Cancel)
	})
	wantStatus(t, end, harnesskit.Cancelled)
	if !abandoned.Load() {
		t.Error("Wait returned before Decide did")
	}
	if n := len(ofKind(events, harnesskit.EventPermission)); n != 0 {
		t.Errorf("%d answers after the end", n)
	}
}

func TestDeciderFailures(t *testing.T) {
	for name, tc := range map[string]struct {
		decider supervisor.Decider
		reason  string
	}{
		"panic": {supervisor.DeciderFunc(func(context.Context, *supervisor.Ask) supervisor.Decision { panic("hook crashed") }),
			"the node failed to decide on `notify_team`"},
		"bad arguments": {supervisor.DeciderFunc(func(context.Context, *supervisor.Ask) supervisor.Decision {
			return supervisor.Allow(json.RawMessage(`[1]`))
		}),
			"the node could not send its decision on `notify_team`: the allowed arguments are not a JSON object"},
		"nil": {nil, "this node has no decider: it allows no tool calls"},
		"deny without reason": {supervisor.DeciderFunc(func(context.Context, *supervisor.Ask) supervisor.Decision { return supervisor.Deny("") }),
			"the job denied `notify_team`"},
	} {
		t.Run(name, func(t *testing.T) {
			sp := toolsSpec(t, "notify_team")
			sp.Decider = tc.decider
			end, _ := run(t, sp)
			wantStatus(t, end, harnesskit.Completed)
			if want := `[{"refused":` + strconv.Quote(tc.reason) + `}]`; string(end.Output) != want {
				t.Errorf("output %s, want %s", end.Output, want)
			}
		})
	}
}

func TestEventsMarshal(t *testing.T) {
	end, events := run(t, toolsSpec(t, "notify_team"))
	wantStatus(t, end, harnesskit.Completed)
	var lines []string
	for _, e := range events {
		data, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(data))
	}
	all := strings.Join(lines, "\n")
	for _, want := range []string{`"kind":"permission","message":{"type":"permission","id":"p1","decision":"allow","arguments":{"n":0}},"by":"decider"`, `"kind":"end"`, `"status":"completed"`} {
		if !strings.Contains(all, want) {
			t.Errorf("no %s in\n%s", want, all)
		}
	}
}

func kindsOf(events []harnesskit.Event) []harnesskit.EventKind {
	var out []harnesskit.EventKind
	for _, e := range events {
		out = append(out, e.Kind)
	}
	return out
}

// TestDuplicateKeyRefused: a permission request whose arguments have a key twice is refused by the
// node before any decider reads it: hooks decided on the last "team" and sent the text as it came,
// and a tool whose parser takes the first value ran with "exec". A nested one and an escaped
// spelling of the key count too; the session goes on.
func TestDuplicateKeyRefused(t *testing.T) {
	script := filepath.Join(t.TempDir(), "lines")
	lines := `{"type":"permission_request","id":"p1","tool":"notify_team","arguments":{"team":"exec","summary":"x","te\u0061m":"billing"}}
{"type":"permission_request","id":"p2","tool":"notify_team","arguments":{"to":[{"team":"a","team":"b"}]}}
{"type":"permission_request","id":"p3","tool":"notify_team","arguments":{"team":"billing","to":[{"team":"a"}]}}
{"type":"result","output":"done"}
`
	if err := os.WriteFile(script, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	var asked []string
	var mu sync.Mutex
	sp := spec(t, "lines", script)
	sp.Decider = supervisor.DeciderFunc(func(_ context.Context, a *supervisor.Ask) supervisor.Decision {
		mu.Lock()
		asked = append(asked, a.ID)
		mu.Unlock()
		return supervisor.Allow(nil)
	})
	end, events := run(t, sp)
	wantStatus(t, end, harnesskit.Completed)
	if len(asked) != 1 || asked[0] != "p3" {
		t.Errorf("the decider was asked about %v, want only p3", asked)
	}
	want := map[string]string{
		"p1": "the call of `notify_team` is refused: arguments has the key \"team\" twice, and a tool's JSON parser may take either value; send each key once",
		"p2": "the call of `notify_team` is refused: arguments.to[0] has the key \"team\" twice, and a tool's JSON parser may take either value; send each key once",
	}
	for _, e := range ofKind(events, harnesskit.EventPermission) {
		p := e.Message.(harnesskit.Permission)
		if w, ok := want[p.ID]; ok {
			if p.Allow || p.Reason != w || e.By != harnesskit.BySupervisor {
				t.Errorf("%s: %+v by %s, want refused by the node: %s", p.ID, p, e.By, w)
			}
			delete(want, p.ID)
		} else if !p.Allow {
			t.Errorf("%s refused: %s", p.ID, p.Reason)
		}
	}
	if len(want) > 0 {
		t.Errorf("no answer to %v", want)
	}
}
