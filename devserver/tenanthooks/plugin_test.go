//go:build unix

package tenanthooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"
	"github.com/orchestrator-zero/oz0/harnesskit/hook"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The test binary doubles as the plugins of these tests: hooks.yaml names it, with
// OZ0_HOOKS_TEST_HELPER in its env saying which plugin to be.
const helperEnv = "OZ0_HOOKS_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "sdk":
		hook.Serve(testPolicy{})
	case "raw":
		serveRaw(hook.Handshake)
	case "version2":
		hs := hook.Handshake
		hs.ProtocolVersion = 2
		serveRaw(hs)
	case "exit-at-start":
		fmt.Fprintln(os.Stderr, "policy: cannot load the rules from /etc/policy")
		os.Exit(1)
	default:
		fmt.Fprintln(os.Stderr, "unknown helper", os.Getenv(helperEnv))
		os.Exit(2)
	}
	os.Exit(0)
}

// testPolicy is the plugin of the helper process: what it does depends on the tool.
type testPolicy struct{}

func (testPolicy) Decide(ctx context.Context, req hook.Request) (hook.Decision, error) {
	switch req.Tool {
	case "notify_team":
		var args map[string]any
		if err := req.Bind(&args); err != nil {
			return hook.Decision{}, err
		}
		if args["team"] == "exec" {
			return hook.Deny("the exec team is told by a person"), nil
		}
		if _, ok := args["summary"]; ok {
			args["summary"] = "[redacted by plugin]"
			return hook.Change(args, "redacted")
		}
		return hook.Continue(), nil
	case "pid":
		return hook.Allow("pid " + strconv.Itoa(os.Getpid())), nil
	case "env":
		return hook.Allow(fmt.Sprintf("OZ0_HOOK=%s EXTRA=%s SECRET=%s config=%s", os.Getenv("OZ0_HOOK"), os.Getenv("EXTRA"), os.Getenv("OZ0_TEST_SECRET"), req.Config)), nil
	case "crash":
		fmt.Fprintln(os.Stderr, "policy: giving up")
		os.Exit(3)
	case "hang":
		// Tell the test the call is here, then ignore ctx: only a kill ends it.
		fmt.Fprintln(os.Stderr, "policy: deciding hang")
		select {}
	case "slow":
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond)
		return hook.Allow("too late"), nil
	case "panic":
		panic("the policy is confused")
	case "error":
		return hook.Decision{}, errors.New("the policy store is down")
	}
	return hook.Continue(), nil
}

// serveRaw serves a hook service that answers garbage, written without the SDK's server (as a
// plugin in another language would be).
func serveRaw(hs plugin.HandshakeConfig) {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: hs,
		Plugins:         plugin.PluginSet{hook.PluginName: rawPlugin{}},
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}

type rawPlugin struct{ plugin.NetRPCUnsupportedPlugin }

type rawDecider interface{}

func (rawPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: hook.ServiceName,
		HandlerType: (*rawDecider)(nil),
		Methods: []grpc.MethodDesc{{MethodName: "Decide", Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.BytesValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			var req hook.Request
			_ = json.Unmarshal(in.GetValue(), &req)
			answers := map[string]string{
				"notjson":   "not json at all",
				"perhaps":   `{"decision":"perhaps"}`,
				"badchange": `{"decision":"change","arguments":"x"}`,
				"fine":      `{"decision":"allow","reason":"raw says yes"}`,
			}
			return wrapperspb.Bytes([]byte(answers[req.Tool])), nil
		}}},
	}, struct{}{})
	return nil
}

func (rawPlugin) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("host side not used")
}

// helperSet writes hooks.yaml around the plugin hooks in doc (PLUGIN stands for the test binary)
// and loads it.
func helperSet(t *testing.T, doc string, opts ...Option) *Set {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "hooks.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(doc, "PLUGIN", exe)), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var pidReason = regexp.MustCompile(`^pid (\d+)$`)

// pidOf asks the hook for its plugin's pid.
func pidOf(t *testing.T, s *Set, harness string) int {
	t.Helper()
	r := eval(s, call(harness, "pid", `{}`))
	m := pidReason.FindStringSubmatch(r.Reason)
	if r.Decision != Allow || m == nil {
		t.Fatalf("pid: %+v", r)
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func waitDead(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("plugin process %d still runs", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// children lists the test process's child processes (Linux; nil elsewhere), zombies included.
func children(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	me := strconv.Itoa(os.Getpid())
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 && f[1] == me {
			out = append(out, e.Name()+" "+f[0])
		}
	}
	return out
}

// noLeaks checks that Close left no plugin process behind, not even a zombie.
func noLeaks(t *testing.T, s *Set) {
	t.Helper()
	s.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		kids := children(t)
		if len(kids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left after Close: %v", kids)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func wantDenied(t *testing.T, r Result, by string, parts ...string) {
	t.Helper()
	if r.Decision != Deny || r.By != by {
		t.Fatalf("got %s by %s (%s), want deny by %s", r.Decision, r.By, r.Reason, by)
	}
	for _, p := range parts {
		if !strings.Contains(r.Reason, p) {
			t.Errorf("reason %q does not say %q", r.Reason, p)
		}
	}
	if n := len(r.Trail); n == 0 || r.Trail[n-1].Error == "" || r.Trail[n-1].Decision != Deny {
		t.Errorf("trail %+v", r.Trail)
	}
}

const sdkHooks = `
hooks:
  - name: redact-first
    match: "*.notify_team"
    decide: change
    arguments: {merge: {seen_by: rule}}
  - name: test-policy
    match: "*"
    plugin: PLUGIN
    env: {OZ0_HOOKS_TEST_HELPER: sdk, EXTRA: "yes", GORACE: "atexit_sleep_ms=0"}
    config: {level: 3}
    timeout: 2s
  - name: after-plugin
    match: "*.notify_team"
    when: {arguments: {summary: "by plugin"}}
    decide: ask
`

func TestPluginProcessDecides(t *testing.T) {
	t.Setenv("OZ0_TEST_SECRET", "must-not-leak")
	var logMu sync.Mutex
	var logs []string
	s := helperSet(t, sdkHooks, WithLog(func(h, line string) {
		logMu.Lock()
		logs = append(logs, h+": "+line)
		logMu.Unlock()
	}))
	if s.hooks[1].plugin.cur != nil {
		t.Fatal("the plugin started before the first call")
	}

	r := eval(s, call("acme-triage", "notify_team", `{"team":"exec"}`))
	if r.Decision != Deny || r.By != "hook:test-policy" || r.Reason != "the exec team is told by a person" || len(r.Trail) != 2 || !r.Trail[1].Plugin {
		t.Errorf("exec: %+v", r)
	}
	// The plugin sees the rule's change; the rule after it sees the plugin's.
	r = eval(s, call("acme-triage", "notify_team", `{"team":"billing","summary":"secret"}`))
	if r.Decision != Ask || r.By != "hook:after-plugin" || !r.Changed ||
		string(r.Arguments) != `{"seen_by":"rule","summary":"[redacted by plugin]","team":"billing"}` ||
		string(r.Asked) != `{"team":"billing","summary":"secret"}` {
		t.Errorf("change: %+v %s", r, r.Arguments)
	}
	if len(r.Trail) != 3 || r.Trail[1].Decision != Change || r.Trail[1].Reason != "redacted" || r.Trail[1].Elapsed <= 0 {
		t.Errorf("change trail: %+v", r.Trail)
	}
	// continue: the default decides.
	r = eval(s, call("acme-triage", "notify_team", `{"team":"billing"}`))
	if r.Decision != Allow || r.By != ByDefault || r.Trail[1].Decision != Continue {
		t.Errorf("continue: %+v", r)
	}
	// The plugin's environment is minimal plus its env; it gets its config.
	r = eval(s, call("h", "env", `{}`))
	if r.Reason != `OZ0_HOOK=test-policy EXTRA=yes SECRET= config={"level":3}` {
		t.Errorf("env: %q", r.Reason)
	}
	// Errors and panics deny, naming the hook; the process lives on.
	pid := pidOf(t, s, "h")
	wantDenied(t, eval(s, call("h", "error", `{}`)), "hook:test-policy", "hook test-policy failed: the plugin failed: the policy store is down")
	wantDenied(t, eval(s, call("h", "panic", `{}`)), "hook:test-policy", "hook test-policy failed: the plugin panicked: panic: the policy is confused")
	if p := pidOf(t, s, "h"); p != pid {
		t.Errorf("the plugin was restarted after an error: %d, then %d", pid, p)
	}
	logMu.Lock()
	joined := strings.Join(logs, "\n")
	logMu.Unlock()
	if !strings.Contains(joined, "test-policy: hook test-policy: panic: the policy is confused") {
		t.Errorf("the plugin's stderr is not logged: %s", joined)
	}

	s.Close()
	waitDead(t, pid, 5*time.Second)
	wantDenied(t, eval(s, call("h", "pid", `{}`)), "hook:test-policy", "hook test-policy failed: the hooks were closed")
}

func TestPluginReusedAcrossConcurrentCalls(t *testing.T) {
	s := helperSet(t, sdkHooks)
	var wg sync.WaitGroup
	pids := make([]int, 24)
	for i := range pids {
		wg.Go(func() {
			r := eval(s, call("h", "pid", `{}`))
			if m := pidReason.FindStringSubmatch(r.Reason); m != nil {
				pids[i], _ = strconv.Atoi(m[1])
			} else {
				t.Errorf("pid: %+v", r)
			}
		})
	}
	wg.Wait()
	for _, p := range pids {
		if p != pids[0] {
			t.Fatalf("more than one process: %v", pids)
		}
	}
	noLeaks(t, s)
}

func TestPluginCrashFailsClosedAndRestarts(t *testing.T) {
	s := helperSet(t, sdkHooks)
	pid := pidOf(t, s, "h")
	r := eval(s, call("h", "crash", `{}`))
	wantDenied(t, r, "hook:test-policy", "hook test-policy failed: the plugin exited during the call (exit status 3; its last words: policy: giving up); it is restarted on the next call")
	waitDead(t, pid, 5*time.Second)
	next := pidOf(t, s, "h")
	if next == pid {
		t.Fatalf("not restarted: pid %d", next)
	}
	noLeaks(t, s)
}

func TestPluginHangFailsClosedAndIsReplaced(t *testing.T) {
	s := helperSet(t, strings.Replace(sdkHooks, "timeout: 2s", "timeout: 1s", 1))
	pid := pidOf(t, s, "h")
	r := eval(s, call("h", "hang", `{}`))
	wantDenied(t, r, "hook:test-policy", "hook test-policy failed: the plugin did not answer within 1s (timeout); it is restarted on the next call")
	waitDead(t, pid, 5*time.Second) // the hung process is stopped
	next := pidOf(t, s, "h")
	if next == pid {
		t.Fatal("not replaced")
	}
	// A plugin that honours its context still fails closed when late, and is replaced as well.
	wantDenied(t, eval(s, call("h", "slow", `{}`)), "hook:test-policy", "did not answer within 1s")
	noLeaks(t, s)
}

func TestPluginGarbageFailsClosed(t *testing.T) {
	s := helperSet(t, `
hooks:
  - name: raw
    match: "*"
    plugin: PLUGIN
    env: {OZ0_HOOKS_TEST_HELPER: raw, GORACE: "atexit_sleep_ms=0"}
`)
	if r := eval(s, call("h", "fine", `{}`)); r.Decision != Allow || r.Reason != "raw says yes" || r.By != "hook:raw" {
		t.Fatalf("fine: %+v", r)
	}
	cases := map[string]string{
		"notjson":   "hook raw failed: the plugin answered garbage (not a decision: invalid character 'o' in literal null (expecting 'u')): not json at all",
		"perhaps":   `hook raw failed: the plugin answered garbage (decision "perhaps" is not one of allow, deny, ask, change, continue): {"decision":"perhaps"}`,
		"badchange": `hook raw failed: the plugin answered garbage (decision "change": the arguments must be a JSON object, not a string)`,
		"nothing":   "hook raw failed: the plugin answered garbage (not a decision: EOF)",
	}
	for tool, want := range cases {
		wantDenied(t, eval(s, call("h", tool, `{}`)), "hook:raw", want)
	}
}

func TestPluginThatDoesNotStart(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "not-a-plugin")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hello there\nsleep 5\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := helperSet(t, `
hooks:
  - name: not-a-plugin
    match: "*.a"
    plugin: `+script+`
  - name: version-2
    match: "*.b"
    plugin: PLUGIN
    env: {OZ0_HOOKS_TEST_HELPER: version2, GORACE: "atexit_sleep_ms=0"}
  - name: exits
    match: "*.c"
    plugin: PLUGIN
    env: {OZ0_HOOKS_TEST_HELPER: exit-at-start, GORACE: "atexit_sleep_ms=0"}
`)
	wantDenied(t, eval(s, call("h", "a", `{}`)), "hook:not-a-plugin",
		"hook not-a-plugin failed: the plugin did not start: Unrecognized remote plugin message: hello there", "calls hook.Serve")
	wantDenied(t, eval(s, call("h", "b", `{}`)), "hook:version-2",
		"hook version-2 failed: the plugin did not start: incompatible API version with plugin. Plugin version: 2, Client versions: [1]")
	wantDenied(t, eval(s, call("h", "c", `{}`)), "hook:exits",
		"hook exits failed: the plugin exited before its handshake (exit status 1; its last words: policy: cannot load the rules from /etc/policy)")
	// Each call tries again.
	wantDenied(t, eval(s, call("h", "c", `{}`)), "hook:exits", "the plugin exited before its handshake")
	noLeaks(t, s) // the script's sleep included: the process group is killed
}

func TestCloseDuringCall(t *testing.T) {
	deciding := make(chan struct{}, 1)
	s := helperSet(t, strings.Replace(sdkHooks, "timeout: 2s", "timeout: 1m", 1), WithLog(func(_, line string) {
		if strings.Contains(line, "deciding hang") {
			select {
			case deciding <- struct{}{}:
			default:
			}
		}
	}))
	pid := pidOf(t, s, "h")
	done := make(chan Result, 1)
	go func() { done <- eval(s, call("h", "hang", `{}`)) }()
	<-deciding
	// Close ends the call at once: the reason below is not the call's timeout of 1m.
	s.Close()
	if alive(pid) {
		t.Errorf("plugin process %d survives Close", pid)
	}
	select {
	case r := <-done:
		wantDenied(t, r, "hook:test-policy", "hook test-policy failed: the hooks were closed during the call")
	case <-time.After(10 * time.Second):
		t.Fatal("the call does not end after Close")
	}
	noLeaks(t, s)
}

func TestCallerCancels(t *testing.T) {
	s := helperSet(t, strings.Replace(sdkHooks, "timeout: 2s", "timeout: 1m", 1))
	pidOf(t, s, "h")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	r := s.Evaluate(ctx, call("h", "hang", `{}`))
	wantDenied(t, r, "hook:test-policy", "the call was abandoned while the plugin was deciding")
}

// TestExamplePlugin builds examples/hooks/deny-after-hours and has it decide for real.
func TestExamplePlugin(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "deny-after-hours")
	build := exec.Command(gobin, "build", "-o", bin, "../../examples/hooks/deny-after-hours")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	doc := `
hooks:
  - name: closed
    match: "acme-triage.notify_team"
    when: {arguments: {team: "^exec$"}}
    plugin: ./deny-after-hours
    config: {timezone: Europe/Paris, open: "00:00-00:00"}
  - name: bad-config
    match: "*.lookup"
    plugin: ./deny-after-hours
    config: {timezone: Mars/Olympus}
  - name: open
    match: "*"
    plugin: ./deny-after-hours
    timeout: 2s
    config: {timezone: UTC, open: "00:00-24:00", days: [mon, tue, wed, thu, fri, sat, sun]}
`
	path := filepath.Join(dir, "hooks.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := eval(s, call("acme-triage", "notify_team", `{"team":"exec","summary":"hi"}`))
	if r.Decision != Deny || r.By != "hook:closed" || !strings.HasPrefix(r.Reason, "acme-triage.notify_team is not called outside working hours (00:00-00:00 on mon tue wed thu fri, Europe/Paris); it is ") {
		t.Errorf("closed: %+v", r)
	}
	r = eval(s, call("acme-triage", "notify_team", `{"team":"billing"}`))
	if r.Decision != Allow || r.By != ByDefault || len(r.Trail) != 1 || r.Trail[0].Hook != "open" || r.Trail[0].Decision != Continue {
		t.Errorf("open: %+v", r)
	}
	wantDenied(t, eval(s, call("acme-triage", "lookup", `{}`)), "hook:bad-config",
		"hook bad-config failed: the plugin failed: config: timezone: unknown time zone Mars/Olympus")
}

// TestInProcessPlugin runs a plugin hook over go-plugin's in-process gRPC connection: the host's
// handling of decisions without a process.
func TestInProcessPlugin(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := Parse(filepath.Join(dir, "hooks.yaml"), []byte(`
hooks:
  - name: redact
    match: "*"
    decide: change
    arguments: {merge: {redacted: true}}
  - name: inproc
    match: "*"
    plugin: ./p
    timeout: 500ms
    config: [a, b]
  - name: last
    match: "*.ok"
    when: {arguments: {by: "^plugin$"}}
    decide: deny
    reason: "seen the plugin's change"
`))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var mu sync.Mutex
	var seen []hook.Request
	impl := hook.Func(func(ctx context.Context, req hook.Request) (hook.Decision, error) {
		mu.Lock()
		seen = append(seen, req)
		mu.Unlock()
		switch req.Tool {
		case "ok":
			return hook.Change(map[string]any{"by": "plugin"}, "mine now")
		case "slow":
			<-ctx.Done()
			return hook.Decision{}, ctx.Err()
		case "ask":
			return hook.Ask("a person should see this"), nil
		}
		return hook.Decision{}, fmt.Errorf("unexpected tool %s", req.Tool)
	})
	starts := 0
	s.hooks[1].plugin.launch = func(ph *pluginHook, in *instance) error {
		starts++
		client, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{hook.PluginName: &hook.Plugin{Impl: impl}})
		raw, err := client.Dispense(hook.PluginName)
		if err != nil {
			return err
		}
		in.hook = raw.(hook.Hook)
		in.stop = func() { client.Close() } // its Shutdown stops the server
		return nil
	}
	r := eval(s, call("h", "ok", `{"x":1}`))
	if r.Decision != Deny || r.By != "hook:last" || string(r.Arguments) != `{"by":"plugin"}` || !r.Changed || string(r.Asked) != `{"x":1}` {
		t.Errorf("ok: %+v %s", r, r.Arguments)
	}
	if len(seen) != 1 || string(seen[0].Arguments) != `{"redacted":true,"x":1}` || string(seen[0].Config) != `["a","b"]` ||
		seen[0].Name != "h.ok" || seen[0].Hook != "inproc" || seen[0].Job != "job_1" || seen[0].Agent != "triage" {
		t.Errorf("the plugin saw %+v", seen)
	}
	if r := eval(s, call("h", "ask", `{}`)); r.Decision != Ask || r.Reason != "a person should see this" || r.By != "hook:inproc" {
		t.Errorf("ask: %+v", r)
	}
	wantDenied(t, eval(s, call("h", "slow", `{}`)), "hook:inproc", "hook inproc failed: the plugin did not answer within 500ms")
	wantDenied(t, eval(s, call("h", "what", `{}`)), "hook:inproc", "hook inproc failed: the plugin failed: unexpected tool what")
	if starts != 2 { // the first, and a new one after the timeout
		t.Errorf("%d starts", starts)
	}
}
