package ahead

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/supervisor"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

// testPlugin writes a plugin whose harness (python -m plug) imports a dependency, fakedep,
// installed in the plugin's .venv (where its own package is installed editable, as uv sync
// does), and answers with what it saw: when fakedep was imported, when
// each module of the plugin's own ran (its package, its agent, a sitecustomize in its src/), its
// environment and arguments.
func testPlugin(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	// A root node's sandboxed harness runs as nobody, who must reach the plugin.
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	out, err := exec.Command("python3", "-m", "venv", "--without-pip", filepath.Join(dir, ".venv")).CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m venv: %v\n%s", err, out)
	}
	sites, _ := filepath.Glob(filepath.Join(dir, ".venv", "lib", "python*", "site-packages"))
	if len(sites) != 1 {
		t.Fatalf("no site-packages in the .venv: %v", sites)
	}
	mark := func(name string) string {
		return fmt.Sprintf("import builtins, time\nbuiltins.__dict__.setdefault('oz0_test_ran', {}).setdefault(%q, time.time())\n", name) // its first run
	}
	files := map[string]string{
		// As uv sync installs the plugin's own package: editable, its src/ on the .venv's path.
		filepath.Join(sites[0], "_editable_impl_plug.pth"): filepath.Join(dir, "src") + "\n",
		filepath.Join(sites[0], "fakedep", "__init__.py"):  "import time\nIMPORTED_AT = time.time()\n",
		filepath.Join(dir, "src", "plug", "__init__.py"):   mark("package"),
		filepath.Join(dir, "src", "sitecustomize.py"):      mark("sitecustomize"),
		filepath.Join(dir, "src", "plug", "agent.py"):      mark("agent") + "import fakedep\n",
		filepath.Join(dir, "src", "plug", "__main__.py"): `import builtins, json, os, sys
request = json.loads(sys.stdin.readline())
from . import agent
import fakedep
out = {"dep_at": fakedep.IMPORTED_AT, "ran": builtins.__dict__.get("oz0_test_ran", {}), "job": os.environ.get("OZ0_JOB"),
       "key": os.environ.get("ANTHROPIC_API_KEY"), "pythonpath": os.environ.get("PYTHONPATH"), "argv": sys.argv[1:],
       "request_job": request.get("job"), "cwd": os.getcwd(), "home": os.environ.get("HOME"), "name": __name__,
       "found": sorted(os.listdir(os.getcwd()) + os.listdir(os.environ["HOME"])),
       "warm_up_dirs": [n for n in os.listdir("/tmp") if n.startswith("oz0-warm-up-")]}
print(json.dumps({"type": "result", "output": out}), flush=True)
`,
	}
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func jobSpec(dir, job string) supervisor.Spec {
	return supervisor.Spec{
		Command:   []string{"python", "-m", "plug", "an-arg"},
		PluginDir: dir,
		Request:   harnesskit.SessionRequest{Job: job, Agent: "a", Harness: "plug"},
		Env:       supervisor.Env{AnthropicBaseURL: "http://127.0.0.1:9/anthropic", AnthropicAPIKey: "key-of-" + job},
		Limits:    supervisor.Limits{Timeout: time.Minute},
	}
}

type seen struct {
	DepAt      float64            `json:"dep_at"`
	Ran        map[string]float64 `json:"ran"`
	Job        string             `json:"job"`
	Key        string             `json:"key"`
	PythonPath string             `json:"pythonpath"`
	Argv       []string           `json:"argv"`
	RequestJob string             `json:"request_job"`
	Cwd        string             `json:"cwd"`
	Home       string             `json:"home"`
	Name       string             `json:"name"`
	Found      []string           `json:"found"`        // in its working and state directories
	WarmUpDirs []string           `json:"warm_up_dirs"` // warm-ups' scratch directories in its /tmp
}

func result(t *testing.T, s *supervisor.Session) seen {
	t.Helper()
	end := s.Wait()
	if end.Status != harnesskit.Completed {
		t.Fatalf("the session ended %s: %s\n%s", end.Status, end.Reason, end.StderrTail)
	}
	var got seen
	if err := json.Unmarshal(end.Output, &got); err != nil {
		t.Fatal(err)
	}
	return got
}

// A session made ahead has its dependencies loaded and nothing of the plugin's run before its job
// binds it; bound, it runs the harness as `python -m plug` would, with the job's environment; in
// every tier.
func TestMadeAheadLoadsDependenciesAndRunsNothingOfThePlugin(t *testing.T) {
	for _, tier := range []sandbox.Tier{sandbox.None, sandbox.Standard, sandbox.Strict} {
		t.Run(string(tier), func(t *testing.T) {
			if err := sandbox.Check(tier); err != nil {
				t.Fatalf("tier %s does not work on this machine: %v", tier, err)
			}
			dir := testPlugin(t)
			spec := func(job string) supervisor.Spec {
				sp := jobSpec(dir, job)
				sp.Sandbox = supervisor.Sandbox{Tier: tier, Gateway: http.NotFoundHandler()}
				return sp
			}
			pool := New(Policy{Mode: Warm, PerHarness: 1}, nil)
			defer pool.Close()
			pool.Prepare(spec(""))
			e := waitMade(t, pool)
			var report struct {
				Modules int      `json:"modules"`
				Failed  []string `json:"failed"`
				At      float64  `json:"at"`
			}
			if err := json.Unmarshal(e.m.Report(), &report); err != nil || report.Modules != 1 || len(report.Failed) != 0 {
				t.Fatalf("the loader said %s (%v); want fakedep loaded", e.m.Report(), err)
			}

			s, how, err := pool.Start(context.Background(), spec("job_one"))
			if err != nil {
				t.Fatal(err)
			}
			if how.Start != StartMadeAhead {
				t.Errorf("the job's session started %q (%s); want made ahead", how.Start, how.Why)
			}
			got := result(t, s)
			if got.DepAt >= report.At {
				t.Error("fakedep was imported after the loader said it was ready: nothing was loaded ahead")
			}
			for _, name := range []string{"package", "agent", "sitecustomize"} {
				at, ok := got.Ran[name]
				switch {
				case !ok:
					t.Errorf("the plugin's %s never ran; a session started at its job runs it", name)
				case at <= report.At:
					t.Errorf("the plugin's %s ran before its job bound the session", name)
				}
			}
			if got.Job != "job_one" || got.RequestJob != "job_one" || got.Key != "key-of-job_one" {
				t.Errorf("the harness saw job %q (request %q), key %q; want the job's", got.Job, got.RequestJob, got.Key)
			}
			if got.PythonPath != filepath.Join(dir, "src") {
				t.Errorf("PYTHONPATH is %q; want the plugin's src/", got.PythonPath)
			}
			if strings.Join(got.Argv, " ") != "an-arg" || got.Name != "__main__" {
				t.Errorf("the harness ran as %q with arguments %q; want __main__ with an-arg", got.Name, got.Argv)
			}
			if got.Cwd != s.Workdir() || got.Home != s.StateDir() {
				t.Errorf("the harness ran in %s with HOME %s; want its session's %s and %s", got.Cwd, got.Home, s.Workdir(), s.StateDir())
			}
		})
	}
}

// waitForkedAhead waits until the pool's fork servers have n sessions forked ahead, ready.
func waitForkedAhead(t *testing.T, pool *Pool, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		ready := 0
		pool.mu.Lock()
		for _, srv := range pool.servers {
			_, r := srv.waiting()
			ready += r
		}
		pool.mu.Unlock()
		if ready >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("fewer than %d sessions were forked ahead within a minute", n)
}

func waitMade(t *testing.T, pool *Pool) *entry {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		pool.mu.Lock()
		for _, list := range pool.made {
			for _, e := range list {
				if e.m.Ready() {
					pool.mu.Unlock()
					return e
				}
			}
		}
		pool.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no session was made ahead within a minute")
	return nil
}

// A session forked from its harness's fork server, at its job (the first: no session was forked
// ahead yet) and ahead of it (the second): its dependencies loaded before, nothing of the
// plugin's run before its job, its job's environment; in every tier.
func TestForkedLoadsDependenciesAndRunsNothingOfThePlugin(t *testing.T) {
	for _, tier := range []sandbox.Tier{sandbox.None, sandbox.Standard, sandbox.Strict} {
		t.Run(string(tier), func(t *testing.T) {
			dir := testPlugin(t)
			spec := func(job string) supervisor.Spec {
				sp := jobSpec(dir, job)
				sp.Sandbox = supervisor.Sandbox{Tier: tier, Gateway: http.NotFoundHandler()}
				return sp
			}
			pool := New(Policy{Mode: Warm, Fork: true}, slog.New(slog.NewTextHandler(os.Stderr, nil)))
			defer pool.Close()
			for i, job := range []string{"job_one", "job_two"} {
				want := StartForked
				if i > 0 {
					waitForkedAhead(t, pool, 1)
					want = StartForkedAhead
				}
				s, how, err := pool.Start(context.Background(), spec(job))
				if err != nil {
					t.Fatal(err)
				}
				if how.Start != want {
					t.Fatalf("the job's session started %q (%s); want %s", how.Start, how.Why, want)
				}
				var report struct {
					At float64 `json:"at"`
				}
				if err := json.Unmarshal(how.Loaded, &report); err != nil {
					t.Fatal(err)
				}
				got := result(t, s)
				if got.DepAt >= report.At {
					t.Error("fakedep was imported after the fork server said it was ready")
				}
				for _, name := range []string{"package", "agent", "sitecustomize"} {
					if at, ok := got.Ran[name]; !ok || at <= report.At {
						t.Errorf("the plugin's %s ran at %v (the server was ready at %v); want once the job came", name, at, report.At)
					}
				}
				if got.Job != job || got.RequestJob != job || got.Key != "key-of-"+job {
					t.Errorf("the harness saw job %q (request %q), key %q; want %s's", got.Job, got.RequestJob, got.Key, job)
				}
				if got.Cwd != s.Workdir() || got.Home != s.StateDir() || strings.Join(got.Argv, " ") != "an-arg" || got.Name != "__main__" {
					t.Errorf("the harness ran in %s (HOME %s) as %s %q; want its session's %s and %s, __main__ with an-arg", got.Cwd, got.Home, got.Name, got.Argv, s.Workdir(), s.StateDir())
				}
				if strings.Join(got.Found, " ") != "tmp" {
					t.Errorf("the session's directories held %q as its job began; want only the state directory's tmp/", got.Found)
				}
				// Tier none shows the machine's /tmp, where other sessions warm up.
				if tier != sandbox.None && len(got.WarmUpDirs) > 0 {
					t.Errorf("the warm-ups left %q in the session's /tmp", got.WarmUpDirs)
				}
			}
		})
	}
}

// A harness whose dependencies leave a thread running (CrewAI's do: a fork would copy only the
// thread that forks) is not forked: once its fork server has said so, its sessions are made ahead
// one at a time, the next job's included, rather than made cold at each job; a change of the
// plugin's environment tries a fork server again.
func TestThreadedDependenciesAreMadeAheadNotForked(t *testing.T) {
	dir := testPlugin(t)
	sites, _ := filepath.Glob(filepath.Join(dir, ".venv", "lib", "python*", "site-packages"))
	threaded := "import threading, time\nIMPORTED_AT = time.time()\nthreading.Thread(target=threading.Event().wait, daemon=True).start()\n"
	if err := os.WriteFile(filepath.Join(sites[0], "fakedep", "__init__.py"), []byte(threaded), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := func(job string) supervisor.Spec {
		sp := jobSpec(dir, job)
		sp.Sandbox = supervisor.Sandbox{Tier: sandbox.Standard}
		return sp
	}
	pool := New(Policy{Mode: Warm, Fork: true, PerHarness: 1}, nil)
	defer pool.Close()
	pool.Prepare(spec(""))
	waitMade(t, pool) // the fork server said it forks nothing: a session is made ahead instead
	for _, job := range []string{"job_one", "job_two"} {
		if job == "job_two" {
			waitMade(t, pool)
		}
		s, how, err := pool.Start(context.Background(), spec(job))
		if err != nil {
			t.Fatal(err)
		}
		if how.Start != StartMadeAhead {
			t.Errorf("%s's session started %q (%s); want made ahead", job, how.Start, how.Why)
		}
		if got := result(t, s); got.Job != job {
			t.Errorf("the harness saw job %q; want %s", got.Job, job)
		}
	}

	// uv add, uv remove: the environment changed, the harness may fork now.
	if err := os.WriteFile(filepath.Join(sites[0], "fakedep", "__init__.py"), []byte("import time\nIMPORTED_AT = time.time()\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(sites[0], "another"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, how, err := pool.Start(context.Background(), spec("job_three"))
	if err != nil {
		t.Fatal(err)
	}
	result(t, s)
	if how.Start != StartForked {
		t.Errorf("after the environment changed, the session started %q (%s); want forked", how.Start, how.Why)
	}
}

// A dependency's fork hook that starts a thread in each forked process (OpenTelemetry's
// TracerProvider does, to detect the new process's resource) does not keep the session from its
// sandbox, however long the thread lives: a new user namespace needs a single-threaded process,
// and the hooks run only in the session's own processes, inside the namespaces.
func TestForkHookThreadsDoNotBreakTheSandbox(t *testing.T) {
	dir := testPlugin(t)
	sites, _ := filepath.Glob(filepath.Join(dir, ".venv", "lib", "python*", "site-packages"))
	hooked := `import os, threading, time
IMPORTED_AT = time.time()
os.register_at_fork(after_in_child=lambda: threading.Thread(target=time.sleep, args=(1000,), daemon=True).start())
`
	if err := os.WriteFile(filepath.Join(sites[0], "fakedep", "__init__.py"), []byte(hooked), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tier := range []sandbox.Tier{sandbox.Standard, sandbox.Strict} {
		t.Run(string(tier), func(t *testing.T) {
			pool := New(Policy{Mode: Warm, Fork: true}, nil)
			defer pool.Close()
			sp := jobSpec(dir, "job_one")
			sp.Sandbox = supervisor.Sandbox{Tier: tier, Gateway: http.NotFoundHandler()}
			s, how, err := pool.Start(context.Background(), sp)
			if err != nil {
				t.Fatal(err)
			}
			if how.Start != StartForked {
				t.Errorf("the session started %q (%s); want forked", how.Start, how.Why)
			}
			if got := result(t, s); got.Job != "job_one" {
				t.Errorf("the harness saw job %q; want job_one", got.Job)
			}
		})
	}
}

// A Node harness's session made ahead: its packages imported before its job (Node cannot fork),
// nothing of the plugin's run before, then its file run as node runs it, in the session's working
// directory with its job's environment; in every tier.
func TestNodeMadeAheadLoadsPackages(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is needed: the Node templates' harnesses run on it")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	files := map[string]string{
		"node_modules/fakepkg/package.json": `{"name": "fakepkg", "type": "module", "exports": {"import": "./index.mjs"}}`,
		"node_modules/fakepkg/index.mjs":    "export const importedAt = Date.now() / 1000;\n",
		"src/own.mjs":                       "globalThis.ownRanAt = Date.now() / 1000;\nexport const v = 1;\n",
		"src/main.mjs": `import { createInterface } from "node:readline";
import { importedAt } from "fakepkg";
import { v } from "./own.mjs";
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  const request = JSON.parse(line);
  const out = { dep_at: importedAt, ran: { own: globalThis.ownRanAt }, job: process.env.OZ0_JOB, key: process.env.ANTHROPIC_API_KEY,
    request_job: request.job, argv: process.argv.slice(2), cwd: process.cwd(), home: process.env.HOME, name: "__main__", v };
  process.stdout.write(JSON.stringify({ type: "result", output: out }) + "\n");
  break;
}
`,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tier := range []sandbox.Tier{sandbox.None, sandbox.Standard, sandbox.Strict} {
		t.Run(string(tier), func(t *testing.T) {
			spec := func(job string) supervisor.Spec {
				sp := jobSpec(dir, job)
				sp.Command = []string{"node", "src/main.mjs", "an-arg"}
				sp.Sandbox = supervisor.Sandbox{Tier: tier, Gateway: http.NotFoundHandler()}
				return sp
			}
			pool := New(Policy{Mode: Warm, PerHarness: 1, Fork: true}, nil)
			defer pool.Close()
			pool.Prepare(spec(""))
			e := waitMade(t, pool)
			var report struct {
				Modules int     `json:"modules"`
				At      float64 `json:"at"`
			}
			if err := json.Unmarshal(e.m.Report(), &report); err != nil || report.Modules != 1 {
				t.Fatalf("the loader said %s (%v); want fakepkg loaded", e.m.Report(), err)
			}
			s, how, err := pool.Start(context.Background(), spec("job_one"))
			if err != nil {
				t.Fatal(err)
			}
			if how.Start != StartMadeAhead {
				t.Errorf("the job's session started %q (%s); want made ahead", how.Start, how.Why)
			}
			got := result(t, s)
			if got.DepAt > report.At { // Node's clock is in milliseconds: equal is before
				t.Error("fakepkg was imported after the loader said it was ready")
			}
			if at := got.Ran["own"]; at < report.At {
				t.Errorf("the plugin's own module ran at %v, before its job (the loader was ready at %v)", at, report.At)
			}
			if got.Job != "job_one" || got.RequestJob != "job_one" || got.Key != "key-of-job_one" {
				t.Errorf("the harness saw job %q (request %q), key %q; want the job's", got.Job, got.RequestJob, got.Key)
			}
			if got.Cwd != s.Workdir() || got.Home != s.StateDir() || strings.Join(got.Argv, " ") != "an-arg" {
				t.Errorf("the harness ran in %s (HOME %s) with arguments %q; want its session's %s and %s, an-arg", got.Cwd, got.Home, got.Argv, s.Workdir(), s.StateDir())
			}
		})
	}
}
