package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/devserver/secrets"
	"github.com/orchestrator-zero/oz0/internal/testbin"
)

// The security properties that hold end to end, through the real binary: a real `oz0 dev`, `oz0
// secret set`, `oz0 run` and `oz0 job`, a harness that looks for the tenant's key everywhere a
// session can, and an upstream that echoes the key it gets back in its answers and errors.

// securityLiveness bounds waits for what must happen; no test asserts a time.
const securityLiveness = 2 * time.Minute

// oz0Cmd runs this test binary as oz0 (TestMain dispatches on the name), with OZ0_CONTEXT.
type oz0Cmd struct {
	t      *testing.T
	bin    string
	ctx    string
	stdout []*bytes.Buffer // of every command run, for the checks at the end
	mu     sync.Mutex
}

func newOz0Cmd(t *testing.T) *oz0Cmd {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "oz0")
	if err := os.Link(self, bin); err != nil {
		if err := copyFile(self, bin); err != nil {
			t.Fatal(err)
		}
	}
	return &oz0Cmd{t: t, bin: bin}
}

func (o *oz0Cmd) command(stdin string, args ...string) *exec.Cmd {
	cmd := exec.Command(o.bin, args...)
	cmd.Env = append(os.Environ(), apiv1.ContextEnv+"="+o.ctx)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	return cmd
}

// run runs oz0 with args to its end and returns its stdout and stderr together; want is the exit
// code it must have.
func (o *oz0Cmd) run(want int, stdin string, args ...string) string {
	o.t.Helper()
	cmd := o.command(stdin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != want {
		o.t.Fatalf("oz0 %s: exit %d (%v), want %d:\n%s", strings.Join(args, " "), code, err, want, out.String())
	}
	o.keep(&out)
	return out.String()
}

func (o *oz0Cmd) keep(b *bytes.Buffer) {
	o.mu.Lock()
	o.stdout = append(o.stdout, b)
	o.mu.Unlock()
}

// waitForFile polls path until match finds what it wants in it.
func waitForFile(t *testing.T, path string, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.Now().Add(securityLiveness)
	for {
		data, _ := os.ReadFile(path)
		if m := re.FindStringSubmatch(string(data)); m != nil {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has no %s after %s:\n%s", path, re, securityLiveness, data)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// keyEchoingUpstream is a provider that takes only the planted key and puts the key it gets into
// its answers: its first answer's text and a header, and the error of every later call.
type keyEchoingUpstream struct {
	key  string
	mu   sync.Mutex
	seen []string // the x-api-key of each call
}

func (u *keyEchoingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	got := r.Header.Get("X-Api-Key")
	u.mu.Lock()
	u.seen = append(u.seen, got)
	n := len(u.seen)
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Seen-Key", got)
	if got != u.key || n > 1 {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key %s"}}`, got)
		return
	}
	fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"upstream saw x-api-key %s"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":5}}`, got)
}

// TestTenantKeyStaysInTheGateway plants a tenant key (oz0 secret set ANTHROPIC_API_KEY, the
// provider pointed at a local upstream that echoes the key back) and a second secret a harness
// echoes, runs jobs through a real oz0 dev and oz0 run, and looks for them everywhere: the tenant
// key is nowhere but the secrets file (not in a session's environment or /proc/self/environ,
// /proc/*/cmdline and /proc/*/environ of every process, what oz0 prints, oz0 dev's logs, traces,
// recordings, errors); the echoed secret is masked in the live stream, the trace, the UI's feed
// and the logs, said whole or split across says; a session's key stops working the moment its
// job has ended.
func TestTenantKeyStaysInTheGateway(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("looks at every process through /proc")
	}
	const (
		tenantKey = "sk-ant-api03-PLANTEDCANARY7f3c9e1b5d20a4"
		echoed    = "tok-ECHOCANARY-4b8d2f6a9c13e7"
	)
	o := newOz0Cmd(t)
	harness := testbin.Build(t, testbin.TestHarness)
	upstream := &keyEchoingUpstream{key: tenantKey}
	upSrv := httptest.NewServer(upstream)
	t.Cleanup(upSrv.Close)

	work := t.TempDir()
	dir := filepath.Join(work, "plugin")
	files := map[string]string{
		"oz0-plugin.yaml": fmt.Sprintf("apiVersion: oz0/v1\nname: exposure\nversion: 0.1.0\nruntime: binary\nharnesses:\n"+
			"  - name: planted\n    command: [%q, planted, \"2\"]\n    formats: [anthropic-messages]\n"+
			"  - name: echo\n    command: [%q, echosecret, %q]\n    formats: [anthropic-messages]\nagents: [agents/]\n", harness, harness, echoed),
		"agents/planted.yaml": "name: planted\nruntime: harness:planted\ninstructions: prompts/p.md\n",
		"agents/echo.yaml":    "name: echo\nruntime: harness:echo\ninstructions: prompts/p.md\n",
		"prompts/p.md":        "Look around.\n",
	}
	for p, data := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// oz0 dev, logging everything it logs (-v), keeping every model call (as it does by default).
	state := filepath.Join(work, "state")
	ready := filepath.Join(work, "ctx")
	devOut := filepath.Join(work, "dev.out")
	devLog, err := os.Create(devOut)
	if err != nil {
		t.Fatal(err)
	}
	dev := o.command("", "dev", "--plugin", dir, "--state-dir", state, "--ready-file", ready, "-v")
	dev.Stdout, dev.Stderr = devLog, devLog
	if err := dev.Start(); err != nil {
		t.Fatal(err)
	}
	devStopped := false
	stopDev := func() {
		if !devStopped {
			devStopped = true
			dev.Process.Signal(os.Interrupt)
			dev.Wait()
			devLog.Close()
		}
	}
	t.Cleanup(stopDev)
	o.ctx = waitForFile(t, ready, regexp.MustCompile(`^\S+`))[0]
	devCtx, err := apiv1.ParseContext(o.ctx)
	if err != nil {
		t.Fatal(err)
	}

	o.run(0, tenantKey, "secret", "set", "ANTHROPIC_API_KEY", "--base-url", upSrv.URL)
	o.run(0, echoed, "secret", "set", "SUPPORT_TOKEN")
	waitForFile(t, devOut, regexp.MustCompile(`agent +planted → model record anthropic`))

	// The planted job: it says what it sees, calls the model twice, and waits.
	runOut := filepath.Join(work, "run.out")
	runLog, err := os.Create(runOut)
	if err != nil {
		t.Fatal(err)
	}
	run := o.command("", "run", "planted", "look around")
	run.Stdout, run.Stderr = runLog, runLog
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	waitForFile(t, runOut, regexp.MustCompile(`ready`))

	// Every process, while the session lives: its command line and environment.
	var procs int
	for _, p := range must(filepath.Glob("/proc/[0-9]*")) {
		for _, f := range []string{"cmdline", "environ"} {
			data, err := os.ReadFile(filepath.Join(p, f))
			if err != nil {
				continue // gone, or not ours to read
			}
			procs++
			if bytes.Contains(data, []byte(tenantKey)) {
				t.Errorf("the tenant key is in %s/%s: %q", p, f, data)
			}
		}
	}
	if procs < 4 {
		t.Errorf("read only %d files of /proc", procs)
	}

	var jobs []apiv1.Job
	if err := json.Unmarshal([]byte(o.run(0, "", "job", "list", "--json")), &jobs); err != nil || len(jobs) != 1 {
		t.Fatalf("oz0 job list --json: %v %v", jobs, err)
	}
	planted := jobs[0].ID
	// A model call that names the echoed secret as its model (a harness sends what it likes):
	// oz0 dev logs the model asked for, masked as every secret of the tenant is.
	live := regexp.MustCompile(`ANTHROPIC_API_KEY=(oz0s_[0-9A-Za-z]+)`).FindStringSubmatch(o.run(0, "", "job", "trace", planted))
	if live == nil {
		t.Fatal("the planted job's trace has no session key in its environment")
	}
	named, _ := http.NewRequest("POST", devCtx.URL+"/gateway/anthropic/v1/messages",
		strings.NewReader(`{"model":"M1-`+echoed+`","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`))
	named.Header.Set("x-api-key", live[1])
	named.Header.Set("anthropic-version", "2023-06-01")
	if resp, err := http.DefaultClient.Do(named); err != nil {
		t.Fatal(err)
	} else {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	o.run(0, "", "job", "cancel", planted)
	if err := run.Wait(); err == nil {
		t.Error("oz0 run of a cancelled job exited 0")
	}
	runLog.Close()
	plantedTrace := o.run(0, "", "job", "trace", planted)

	// The session's key, as its environment showed it, stopped working when its job ended.
	m := regexp.MustCompile(`ANTHROPIC_API_KEY=(oz0s_[0-9A-Za-z]+)`).FindStringSubmatch(plantedTrace)
	if m == nil {
		t.Fatalf("the planted job's trace has no session key in its environment:\n%s", plantedTrace)
	}
	req, _ := http.NewRequest("POST", devCtx.URL+"/gateway/anthropic/v1/messages", strings.NewReader(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("x-api-key", m[1])
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.Contains(string(body), "invalid session key") {
		t.Errorf("the session key after its job ended: %d %s", resp.StatusCode, body)
	}

	// The echo job, followed live by oz0 run, then as the UI's feed shows it.
	echoRun := o.run(0, "", "run", "echo", "echo it")
	if err := json.Unmarshal([]byte(o.run(0, "", "job", "list", "--json", "--agent", "echo")), &jobs); err != nil || len(jobs) != 1 {
		t.Fatalf("oz0 job list --json --agent echo: %v %v", jobs, err)
	}
	echoJob := jobs[0].ID
	echoTrace := o.run(0, "", "job", "trace", echoJob)
	feedOfJob := readFeed(t, devCtx.URL, devCtx.Token, echoJob)
	stopDev()

	// What each place got.
	seen := map[string]string{
		"oz0 run of the planted job": readFile(t, runOut),
		"the planted job's trace":    plantedTrace,
		"oz0 run of the echo job":    echoRun,
		"the echo job's trace":       echoTrace,
		"the UI's feed of the job":   feedOfJob,
		"oz0 dev's output and logs":  readFile(t, devOut),
	}
	for i, b := range o.stdout {
		seen[fmt.Sprintf("oz0 command %d's output", i+1)] = b.String()
	}
	for where, text := range seen {
		if strings.Contains(text, tenantKey) {
			t.Errorf("the tenant key is in %s:\n%s", where, text)
		}
		if strings.Contains(text, echoed) {
			t.Errorf("the echoed secret is in %s:\n%s", where, text)
		}
	}
	// What the checks rest on: the key reached the upstream, the harness saw its environment and
	// the upstream's echoes, and said the secret, whole and split.
	upstream.mu.Lock()
	if len(upstream.seen) != 3 || upstream.seen[0] != tenantKey {
		t.Errorf("the upstream got x-api-key %q", upstream.seen)
	}
	upstream.mu.Unlock()
	for _, want := range []string{"ANTHROPIC_API_KEY=oz0s_", "/proc/self/environ: ", "model answer: upstream saw x-api-key ***", "model error: ", "invalid x-api-key ***"} {
		if !strings.Contains(plantedTrace, want) {
			t.Errorf("the planted job's trace has no %q:\n%s", want, plantedTrace)
		}
	}
	if !strings.Contains(echoRun, "the token is ***") || !strings.Contains(echoTrace, "between the halves") {
		t.Errorf("the echo job did not say its secret:\n%s\n%s", echoRun, echoTrace)
	}
	// The trace never lets a reader rebuild the secret from consecutive says.
	var said strings.Builder
	for _, line := range strings.Split(echoTrace, "\n") {
		var ev struct {
			Type string
			Data struct{ Text string }
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == apiv1.EventSay {
			said.WriteString(ev.Data.Text)
		}
	}
	if strings.Contains(said.String(), echoed) {
		t.Errorf("the echo job's says, joined, give the secret: %q", said.String())
	}

	// The state directory: the key in the secrets file, and in no other file.
	var holders []string
	filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if data, err := os.ReadFile(path); err == nil && (bytes.Contains(data, []byte(tenantKey)) || bytes.Contains(data, []byte(echoed))) {
			holders = append(holders, filepath.Base(path))
		}
		return nil
	})
	if strings.Join(holders, " ") != secrets.FileName {
		t.Errorf("the files of the state directory holding a secret: %v, want only %s", holders, secrets.FileName)
	}
}

// readFeed follows the feed of job, as the dev UI does, until the job's last event, and returns
// what it carried.
func readFeed(t *testing.T, url, token, job string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", url+"/api/v1/feed?job="+job, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var all strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line := sc.Text()
		all.WriteString(line + "\n")
		var d apiv1.FeedEventData
		if data, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(data), &d) == nil && d.Event.Type == apiv1.EventStatus {
			var st apiv1.StatusData
			if json.Unmarshal(d.Event.Data, &st) == nil && st.Status.Terminal() {
				return all.String()
			}
		}
	}
	t.Fatalf("the feed ended before the job's last event: %v\n%s", sc.Err(), all.String())
	return ""
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
