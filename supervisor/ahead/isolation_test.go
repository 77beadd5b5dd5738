package ahead

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/supervisor"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

// siblingHarness: asked with "hold", it leaves a mark in every place a session may write (its
// working and state directories, /tmp, /dev/shm), says where they are and what it holds (its key,
// its trace context), and waits on a permission request until the test lets it end. Asked with a
// sibling's marks (JSON), it looks for each of them and for the sibling's processes, and answers
// with what it found.
const siblingHarness = `import json, os, signal, sys
import fakedep
request = json.loads(sys.stdin.readline())
def put(m):
    print(json.dumps(m), flush=True)
if request["text"] == "hold":
    places = [os.getcwd(), os.environ["HOME"], "/tmp", "/dev/shm"]
    marks = []
    for d in places:
        p = os.path.join(d, "sibling-mark-" + request["job"])
        with open(p, "w") as f:
            f.write("secret of " + request["job"])
        marks.append(p)
    put({"type": "say", "text": json.dumps({"marks": marks, "key": os.environ.get("ANTHROPIC_API_KEY"),
         "traceparent": os.environ.get("TRACEPARENT"), "pid": os.getpid(), "root": os.path.dirname(os.getcwd())})})
    put({"type": "permission_request", "id": "p1", "tool": "wait", "arguments": {}})
    sys.stdin.readline()
    put({"type": "result", "output": "held"})
else:
    sib = json.loads(request["text"])
    found = []
    for p in sib["marks"] + [sib["root"]]:
        if os.path.exists(p):
            found.append(p)
    parent = os.path.dirname(os.path.dirname(os.getcwd()))
    try:
        siblings_dirs = [n for n in os.listdir(parent) if n.startswith("oz0-") and os.path.join(parent, n) != os.path.dirname(os.getcwd())]
    except OSError:
        siblings_dirs = []
    pids = sorted(int(n) for n in os.listdir("/proc") if n.isdigit())
    signalled = []
    for pid in pids:
        if pid in (os.getpid(), 1):
            continue
        try:
            os.kill(pid, 0)
            signalled.append(pid)
        except OSError:
            pass
    secrets = []
    for pid in pids:
        try:
            with open("/proc/%d/environ" % pid, "rb") as f:
                env = f.read()
        except OSError:
            continue
        if sib["key"] and sib["key"].encode() in env:
            secrets.append(pid)
    put({"type": "result", "output": {"found": found, "dirs": siblings_dirs, "pids": pids, "signalled": signalled,
         "key_seen_in": secrets, "own_key": os.environ.get("ANTHROPIC_API_KEY"), "traceparent": os.environ.get("TRACEPARENT"),
         "root": os.path.basename(os.path.dirname(os.getcwd())), "hooks": getattr(fakedep, "SEEN", [])}})
`

// hookedDep is a dependency whose fork hooks (the ones a library registers) note, wherever they
// run, the process's capabilities and the fork servers' sessions it can see.
const hookedDep = `import glob, os, time
IMPORTED_AT = time.time()
SEEN = []
def _look(hook):
    with open("/proc/self/status") as f:
        cap = [line.split()[1] for line in f if line.startswith("CapEff:")][0]
    SEEN.append({"hook": hook, "pid": os.getpid(), "cap": cap,
                 "roots": sorted(os.path.basename(p) for p in glob.glob("/tmp/oz0-fork-*/*"))})
os.register_at_fork(before=lambda: _look("before"), after_in_parent=lambda: _look("parent"),
                    after_in_child=lambda: _look("child"))
`

// TestSiblingsSeeNothingOfEachOther runs two sessions of one harness at once, made each way a
// node makes them (cold, made ahead, forked at the job, forked ahead of it), in each sandboxed
// tier: the second cannot see the
// first's files (in its directories, /tmp or /dev/shm), nor its directories, processes, key or
// trace context, nor signal it; and its dependencies' fork hooks run only where it runs, with no
// capability and nothing of the first in view. (Tier none hides nothing, cold or not:
// docs/sandbox.md.)
func TestSiblingsSeeNothingOfEachOther(t *testing.T) {
	dir := testPlugin(t)
	if err := os.WriteFile(filepath.Join(dir, "src", "plug", "__main__.py"), []byte(siblingHarness), 0o644); err != nil {
		t.Fatal(err)
	}
	sites, _ := filepath.Glob(filepath.Join(dir, ".venv", "lib", "python*", "site-packages"))
	if err := os.WriteFile(filepath.Join(sites[0], "fakedep", "__init__.py"), []byte(hookedDep), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tier := range []sandbox.Tier{sandbox.Standard, sandbox.Strict} {
		for _, policy := range []Policy{{Mode: Cold}, {Mode: Warm, PerHarness: 2}, {Mode: Warm, Fork: true}, {Mode: Warm, Fork: true, PerHarness: 2}} {
			// Fork, one ahead: the first job comes before any is forked ahead (forked at its
			// job); two ahead: both jobs take one forked ahead.
			ahead := policy.Fork && policy.PerHarness == 2
			name := string(tier) + "/" + string(policy.Mode)
			if policy.Fork {
				name += "-fork"
			}
			if ahead {
				name += "-ahead"
			}
			t.Run(name, func(t *testing.T) {
				pool := New(policy, nil)
				defer pool.Close()
				spec := func(job, text string) supervisor.Spec {
					sp := jobSpec(dir, job)
					sp.Request.Text = text
					if job != "" {
						sp.Env.Traceparent = "00-" + strings.Repeat(job[len(job)-1:], 32) + "-" + strings.Repeat("b", 16) + "-01"
					} else {
						sp.Env.AnthropicAPIKey = ""
					}
					sp.Sandbox = supervisor.Sandbox{Tier: tier, Gateway: http.NotFoundHandler()}
					sp.Env.OTLPEndpoint = "http://127.0.0.1:9/otlp"
					return sp
				}
				if !policy.Fork {
					pool.Prepare(spec("", ""))
				}
				if ahead {
					pool.Prepare(spec("", ""))
					waitForkedAhead(t, pool, 2)
				}
				// The first holds its marks until the second has looked.
				release := make(chan struct{})
				said := make(chan string, 1)
				first := spec("job_1", "hold")
				first.Decider = supervisor.DeciderFunc(func(ctx context.Context, ask *supervisor.Ask) supervisor.Decision {
					<-release
					return supervisor.Allow(nil)
				})
				first.Sink = func(ev harnesskit.Event) {
					if m, ok := ev.Message.(harnesskit.Say); ok {
						said <- m.Text
					}
				}
				a, how, err := pool.Start(context.Background(), first)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("the first session: %s %s", how.Start, how.Why)
				if policy.Fork && how.Start != map[bool]string{true: StartForkedAhead, false: StartForked}[ahead] {
					close(release)
					t.Fatalf("the first session started %s (%s)", how.Start, how.Why)
				}
				var marks string
				select {
				case marks = <-said:
				case <-time.After(time.Minute):
					close(release)
					t.Fatalf("the first session said nothing: %+v", a.Wait())
				}
				b, how, err := pool.Start(context.Background(), spec("job_2", marks))
				if err != nil {
					close(release)
					t.Fatal(err)
				}
				t.Logf("the second session: %s %s", how.Start, how.Why)
				if ahead && how.Start != StartForkedAhead {
					close(release)
					t.Fatalf("the second session started %s (%s); want forked ahead", how.Start, how.Why)
				}
				end := b.Wait()
				close(release)
				if end := a.Wait(); end.Status != harnesskit.Completed {
					t.Errorf("the first session ended %s: %s\n%s", end.Status, end.Reason, end.StderrTail)
				}
				if end.Status != harnesskit.Completed {
					t.Fatalf("the second session ended %s: %s\n%s", end.Status, end.Reason, end.StderrTail)
				}
				var got struct {
					Found       []string `json:"found"`
					Dirs        []string `json:"dirs"`
					Pids        []int    `json:"pids"`
					Signalled   []int    `json:"signalled"`
					KeySeenIn   []int    `json:"key_seen_in"`
					OwnKey      string   `json:"own_key"`
					Traceparent string   `json:"traceparent"`
					Root        string   `json:"root"`
					Hooks       []struct {
						Hook  string   `json:"hook"`
						Pid   int      `json:"pid"`
						Cap   string   `json:"cap"`
						Roots []string `json:"roots"`
					} `json:"hooks"`
				}
				if err := json.Unmarshal(end.Output, &got); err != nil {
					t.Fatal(err)
				}
				if len(got.Found) > 0 {
					t.Errorf("the second session saw the first's files: %v", got.Found)
				}
				if len(got.Dirs) > 0 {
					t.Errorf("the second session saw other sessions' directories beside its own: %v", got.Dirs)
				}
				if len(got.Signalled) > 0 || len(got.KeySeenIn) > 0 {
					t.Errorf("the second session could signal %v and read the first's key in the environment of %v (of the processes %v)", got.Signalled, got.KeySeenIn, got.Pids)
				}
				if got.OwnKey != "key-of-job_2" || !strings.HasPrefix(got.Traceparent, "00-2222") {
					t.Errorf("the second session has key %q and trace context %q: not its own", got.OwnKey, got.Traceparent)
				}
				if policy.Fork && len(got.Hooks) == 0 {
					t.Error("the dependency's fork hooks did not run in the forked session")
				}
				for _, h := range got.Hooks {
					if strings.Trim(h.Cap, "0") != "" || slices.ContainsFunc(h.Roots, func(r string) bool { return r != got.Root }) {
						t.Errorf("a dependency's %s fork hook ran in process %d with capabilities %s, seeing the sessions %v (its own: %s)", h.Hook, h.Pid, h.Cap, h.Roots, got.Root)
					}
				}
			})
		}
	}
}

// faultHarness: "stubborn" ignores SIGTERM and leaves a grandchild in a session of its own that
// holds stdout, then hangs; "sigkill" kills itself; "exit3" exits 3 without a result.
const faultHarness = `import json, os, signal, subprocess, sys, time
request = json.loads(sys.stdin.readline())
mode = request["text"]
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    subprocess.Popen(["sleep", "1000"], start_new_session=True)
    print(json.dumps({"type": "say", "text": "holding"}), flush=True)
    time.sleep(1000)
elif mode == "sigkill":
    os.kill(os.getpid(), signal.SIGKILL)
elif mode == "exit4":
    child = os.fork()
    if child == 0:
        os._exit(5)  # a process the harness forks exits as it likes: that ends no session
    os.waitpid(child, 0)
    subprocess.Popen(["sleep", "1000"], start_new_session=True)
    print(json.dumps({"type": "result", "output": "done"}), flush=True)
    os._exit(4)
else:
    sys.exit(3)
`

// A forked session ends as a session started at its job does: a cancelled one that ignores
// SIGTERM is killed after the grace period with everything it started, and how the harness
// exited is said (its status, or the signal that killed it; os._exit's code, which it tells its
// PID 1 before the kernel has unmapped it, not a child's); in each sandboxed tier.
func TestForkedSessionsEndAsColdOnesDo(t *testing.T) {
	dir := testPlugin(t)
	if err := os.WriteFile(filepath.Join(dir, "src", "plug", "__main__.py"), []byte(faultHarness), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tier := range []sandbox.Tier{sandbox.Standard, sandbox.Strict} {
		t.Run(string(tier), func(t *testing.T) {
			pool := New(Policy{Mode: Warm, Fork: true}, nil)
			defer pool.Close()
			spec := func(job, text string) supervisor.Spec {
				sp := jobSpec(dir, job)
				sp.Request.Text = text
				sp.Limits.Grace = time.Second
				sp.Sandbox = supervisor.Sandbox{Tier: tier, Gateway: http.NotFoundHandler()}
				return sp
			}
			said := make(chan struct{}, 1)
			stubborn := spec("job_stubborn", "stubborn")
			stubborn.Sink = func(ev harnesskit.Event) {
				if ev.Kind == harnesskit.EventSay {
					said <- struct{}{}
				}
			}
			s, how, err := pool.Start(context.Background(), stubborn)
			if err != nil || how.Start != StartForked {
				t.Fatalf("start: %v (%s %s)", err, how.Start, how.Why)
			}
			select {
			case <-said:
			case <-time.After(time.Minute):
				t.Fatal("the stubborn harness never said it holds")
			}
			s.Cancel()
			end := s.Wait()
			if end.Status != harnesskit.Cancelled || !end.Killed {
				t.Errorf("the stubborn session ended %s (killed %v): %s", end.Status, end.Killed, end.Reason)
			}
			if left := processesOf(t, s.Workdir()); len(left) > 0 {
				t.Errorf("processes of the cancelled session are left: %v", left)
			}
			for text, want := range map[string]string{"sigkill": "killed by SIGKILL", "exit3": "exited with status 3"} {
				s, _, err := pool.Start(context.Background(), spec("job_"+text, text))
				if err != nil {
					t.Fatal(err)
				}
				if end := s.Wait(); end.Status != harnesskit.Failed || !strings.Contains(end.Reason, want) {
					t.Errorf("%s: the session ended %s: %s; want failed, %s", text, end.Status, end.Reason, want)
				}
			}
			// os._exit, as the harness kit exits: the session ends when the harness says so, with
			// its status, and what it left (a process in a session of its own) is gone.
			waitForkedAhead(t, pool, 1)
			s, how, err = pool.Start(context.Background(), spec("job_exit4", "exit4"))
			if err != nil || how.Start != StartForkedAhead {
				t.Fatalf("start: %v (%s %s)", err, how.Start, how.Why)
			}
			if end := s.Wait(); end.Status != harnesskit.Completed || end.ExitCode != 4 || end.Signal != "" {
				t.Errorf("exit4: the session ended %s with status %d (signal %q): %s; want completed, 4", end.Status, end.ExitCode, end.Signal, end.Reason)
			}
			if left := processesOf(t, s.Workdir()); len(left) > 0 {
				t.Errorf("processes of the session that exited are left: %v", left)
			}
		})
	}
}

// processesOf lists the live processes (not zombies) whose working directory is dir.
func processesOf(t *testing.T, dir string) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left []string
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
			if err != nil || cwd != dir {
				continue
			}
			if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && !strings.Contains(string(stat), ") Z ") {
				cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
				left = append(left, e.Name()+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}
