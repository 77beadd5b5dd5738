//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
)

// BenchmarkPeers runs a tiny agent (one notify_team tool, two model calls) through a real `oz0
// dev` beside the development server its framework ships, serving the same agent on the same
// fake model (one `oz0 fake-model serve` process, which every server reaches over HTTP), each
// figure taken in turn from oz0 and the peer in one run, so that their ratio is of figures taken
// under the same load:
//
//   - adk: the adk template (`oz0 plugin new`, `uv lock && uv sync` as its author runs them)
//     against `adk web --reload_agents` (google-adk, pinned by scripts/peers/adk-web) serving
//     the agent an ADK author writes for it (testdata/peers/adk-web: LlmAgent, AnthropicLlm on an
//     AsyncAnthropic client on the fake model, the same tool and instructions), called as its UI
//     calls it (a session, then POST /run_sse);
//   - langgraph: the byo-agent template with the guide's LangGraph snippet (testdata/peers/
//     byo-langgraph, on the langgraph and langchain-anthropic pinned by scripts/peers/
//     langgraph-dev) against `langgraph dev` (langgraph-cli[inmem]) serving the same
//     create_react_agent (testdata/peers/langgraph-dev), called through its API (a thread, then
//     a run waited for).
//
// Its figures, each for oz0, the peer and their ratio (oz0/peer):
//
//   - start: process start to the first 200 (oz0: GET /api/v1/info; adk web: /list-apps;
//     langgraph dev: /ok), the median of peerStarts, each server stopped after;
//   - run: one run, submit to answer, the median of peerRuns (after one that is not a figure);
//   - burst: peerBurst runs submitted at once, the first submit to the last answer (the median of
//     peerBursts), and mem: the peak, during another such burst, of the proportional set size
//     (PSS) of all the server's processes (pages shared among them counted once), sampled every
//     ~20 ms (a sampled burst's time is not the figure: see burst);
//   - edit: notify_team's returned string changed in the agent's source (written in place, as an
//     editor saves), then a run at once, again until the answer shows the new string: the time
//     from the write to that answer (the median of peerEdits); the runs that answered with the
//     old code are counted (stale);
//   - failures: runs that failed or answered something else, in all the figures.
//
// Both sides' answers are checked: the agent answers with what notify_team returned. The peers are
// installed once by scripts/peers-env.sh (make bench-peers runs it, then this); without them
// this fails saying so. OZ0_BENCH_BIN names the oz0 to time (bench_test.go), and
// OZ0_BENCH_DEV_FLAGS adds flags to each `oz0 dev` (`--sandbox none`, say), for a before and after
// of the same figures.
func BenchmarkPeers(b *testing.B) {
	bin := oz0Binary(b)
	uv := peersUV(b)
	tmp := b.TempDir()
	fmURL := startReady(b, nil, filepath.Join(tmp, "fm.url"), bin, "fake-model", "serve",
		"--script", filepath.Join("testdata", "peers", "fake-model.yaml"), "--ready-file", filepath.Join(tmp, "fm.url"))
	for _, p := range []peerPair{adkPair, langgraphPair} {
		b.Run(p.name, func(b *testing.B) { benchPair(b, p, bin, uv, fmURL) })
	}
}

const (
	peerStarts = 5  // start→first 200, each side, alternated
	peerRuns   = 10 // one run at a time, each side, alternated
	peerBursts = 3  // bursts, each side, alternated
	peerBurst  = 20 // runs at once in a burst
	peerEdits  = 5  // edits, each side, alternated

	peerInput = "I was charged twice for my order"
	peerKey   = "sk-ant-peers-benchmark-0123456789" // the fake model checks no key; both sides send this one
	// notifyReturn is what notify_team returns in every agent's source (after its team), which
	// the fake model's last answer repeats; the edit figure puts a mark before its colon.
	notifyReturn = "told the {team} team: "
	notifyAnswer = "told the billing team"
)

// peerPair is a template of oz0's and the peer that serves the same agent.
type peerPair struct {
	name     string
	template string
	agentPy  string   // testdata/peers/ file that replaces the plugin's agent.py; "": the template's
	add      []string // what the plugin's author adds with uv add: the framework, at the peer's pins
	// the peer: its environment (scripts/peers/ENV), the project its author writes
	// (testdata/peers/FILES), where in it the agent's instructions go (the plugin's, copied) and
	// the file that holds notify_team.
	env, files, instructions, source string
	command                          func(venvBin string, port int) []string
	readyPath                        string // the GET that answers 200 once the peer serves
	run                              func(ctx context.Context, base string) (string, error)
	goals                            map[string]float64 // figure → the most oz0/peer may be
}

var adkPair = peerPair{
	name: "adk", template: "adk",
	env: "adk-web", files: "adk-web", instructions: "acme_triage/instructions.md", source: "acme_triage/agent.py",
	command: func(venvBin string, port int) []string {
		// --reload_agents: ADK's live reload of an edited agent (without it adk web keeps the
		// agent it loaded first).
		return []string{filepath.Join(venvBin, "adk"), "web", "--port", strconv.Itoa(port), "--reload_agents", "."}
	},
	readyPath: "/list-apps",
	run:       adkWebRun,
	goals:     map[string]float64{"run": 1.5, "burst": 2, "mem": 3, "edit": 2},
}

var langgraphPair = peerPair{
	name: "langgraph", template: "byo-agent", agentPy: "byo-langgraph/agent.py", add: []string{"langgraph", "langchain-anthropic"},
	env: "langgraph-dev", files: "langgraph-dev", instructions: "instructions.md", source: "graph.py",
	command: func(venvBin string, port int) []string {
		return []string{filepath.Join(venvBin, "langgraph"), "dev", "--port", strconv.Itoa(port), "--host", "127.0.0.1", "--no-browser"}
	},
	readyPath: "/ok",
	run:       langgraphDevRun,
	goals:     map[string]float64{"start": 1, "run": 1, "burst": 1, "mem": 1, "edit": 1},
}

// peerSide is one server of a pair, running: a run on it, its process (the root of its tree)
// and the agent's source file the edit figure changes.
type peerSide struct {
	name   string
	pid    int
	source string
	run    func(ctx context.Context) (string, error)

	mu       sync.Mutex // a burst's runs count their failures at once
	failures int
	failure  string // the first
}

// do is one run: its answer, checked to hold want; a run that fails or answers something else
// is counted.
func (s *peerSide) do(want string) (d time.Duration, answer string, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	answer, err := s.run(ctx)
	d = time.Since(start)
	if err == nil && !strings.Contains(answer, want) {
		err = fmt.Errorf("the answer does not hold %q: %q", want, answer)
	}
	if err != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.failures == 0 {
			s.failure = err.Error()
		}
		s.failures++
		return d, answer, false
	}
	return d, answer, true
}

// peerFigure is one row of a pair's table.
type peerFigure struct {
	name, what, unit string
	oz0, peer        float64
}

// ratio says whether the figure has a ratio: a time or a size, the peer's not 0 (counts have none).
func (f peerFigure) ratio() bool { return (f.unit == "ms" || f.unit == "MB") && f.peer != 0 }

func benchPair(b *testing.B, p peerPair, bin string, uv peerUV, fmURL string) {
	venvBin := peerEnv(b, p.env)
	plugin := peerPlugin(b, p, bin, uv)
	project := peerProject(b, p, plugin)
	peerEnviron := append(os.Environ(), "ANTHROPIC_BASE_URL="+fmURL, "ANTHROPIC_API_KEY="+peerKey,
		"LANGGRAPH_CLI_NO_ANALYTICS=1") // langgraph dev reports its use to LangChain by default
	devFlags := strings.Fields(os.Getenv("OZ0_BENCH_DEV_FLAGS"))
	loadBefore := loadAverage()

	oz0 := startPeerOz0(b, bin, plugin, devFlags, fmURL)
	peer := startPeer(b, p, venvBin, project, peerEnviron)
	sides := []*peerSide{oz0, peer}
	var figures []peerFigure
	report := func(b *testing.B, f peerFigure) {
		figures = append(figures, f)
		// A sub-benchmark reports several figures: each its own units.
		b.ReportMetric(f.oz0, f.name+"-oz0-"+f.unit)
		b.ReportMetric(f.peer, f.name+"-peer-"+f.unit)
		if f.ratio() {
			b.ReportMetric(f.oz0/f.peer, f.name+"-oz0/peer")
		}
	}
	failed := func(b *testing.B, from []int) {
		b.ReportMetric(float64(oz0.failures-from[0]), "oz0-failures")
		b.ReportMetric(float64(peer.failures-from[1]), "peer-failures")
	}
	counts := func() []int { return []int{oz0.failures, peer.failures} }
	// One run each first, not a figure: adk web loads the agent at its first run, and the first
	// session reads the interpreter's and the framework's files from disk.
	for _, s := range sides {
		s.do(notifyAnswer)
	}

	b.Run("start", func(b *testing.B) {
		stateDir := b.TempDir()
		ready := filepath.Join(b.TempDir(), "ctx")
		args := append([]string{"dev", "--addr", "127.0.0.1:0", "--state-dir", stateDir, "--ready-file", ready}, devFlags...)
		devFirst200(b, bin, plugin, args, os.Environ(), ready) // makes the state, as a user's second start finds it
		startProject := peerProject(b, p, plugin)
		var oz0s, peers []time.Duration
		for b.Loop() {
			for range peerStarts {
				oz0s = append(oz0s, devFirst200(b, bin, plugin, args, os.Environ(), ready))
				port := freePort(b)
				cmd := peerCommand(p, venvBin, startProject, peerEnviron, port)
				peers = append(peers, first200(b, cmd, func() *http.Request {
					req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+p.readyPath, nil)
					return req
				}))
			}
		}
		report(b, peerFigure{"start", fmt.Sprintf("start → first 200 (median of %d)", len(oz0s)), "ms", ms(medianOf(oz0s)), ms(medianOf(peers))})
	})

	b.Run("run", func(b *testing.B) {
		from := counts()
		times := make([][]time.Duration, 2)
		n := 0
		for b.Loop() {
			for range peerRuns {
				n++
				for i, s := range sides {
					if d, _, ok := s.do(notifyAnswer); ok {
						times[i] = append(times[i], d)
					}
				}
			}
		}
		report(b, peerFigure{"run", fmt.Sprintf("one run (median of %d)", n), "ms", msMedian(b, times[0]), msMedian(b, times[1])})
		failed(b, from)
	})

	b.Run("burst", func(b *testing.B) {
		from := counts()
		done := make([][]time.Duration, 2)
		peaks, rests := make([][]float64, 2), make([][]float64, 2)
		for b.Loop() {
			for range peerBursts {
				for i, s := range sides {
					d, _ := burst(s, false)
					done[i] = append(done[i], d)
				}
				for i, s := range sides {
					rest, _ := treePSS(s.pid)
					_, peak := burst(s, true)
					peaks[i] = append(peaks[i], mib(peak))
					rests[i] = append(rests[i], mib(rest))
				}
			}
		}
		report(b, peerFigure{"burst", fmt.Sprintf("%d runs at once, all done (median of %d)", peerBurst, len(done[0])), "ms", ms(medianOf(done[0])), ms(medianOf(done[1]))})
		report(b, peerFigure{"mem", fmt.Sprintf("peak PSS of all processes during the burst (median of %d)", len(peaks[0])), "MB", medianOf(peaks[0]), medianOf(peaks[1])})
		report(b, peerFigure{"mem-rest", "PSS of all processes at rest, before a burst (median)", "MB", medianOf(rests[0]), medianOf(rests[1])})
		failed(b, from)
	})

	b.Run("edit", func(b *testing.B) {
		from := counts()
		times := make([][]time.Duration, 2)
		stale := []int{0, 0}
		n := 0
		for b.Loop() {
			for range peerEdits {
				n++
				for i, s := range sides {
					d, st := editToResult(b, s, n)
					times[i] = append(times[i], d)
					stale[i] += st
				}
			}
		}
		report(b, peerFigure{"edit", fmt.Sprintf("edit → first result of the new code (median of %d)", n), "ms", ms(medianOf(times[0])), ms(medianOf(times[1]))})
		report(b, peerFigure{"stale", fmt.Sprintf("stale runs after the %d edits (answered by the old code)", n), "runs", float64(stale[0]), float64(stale[1])})
		failed(b, from)
	})

	figures = append(figures, peerFigure{"failures", "failures, all figures", "runs", float64(oz0.failures), float64(peer.failures)})
	for _, s := range sides {
		if s.failures > 0 {
			fmt.Printf("%s: %d runs failed; the first: %s\n", s.name, s.failures, s.failure)
		}
	}
	// On stdout: a benchmark's log is shown only when it has no sub-benchmarks.
	fmt.Printf("\n%s: %s against %s, %s, load average %s before, %s after\n\n%s\n", b.Name(),
		strings.Join(append([]string{bin, "dev"}, devFlags...), " "), peer.name, time.Now().UTC().Format(time.DateOnly),
		loadBefore, loadAverage(), peerTable(p, peer.name, figures))
}

// peerTable is a pair's figures as a Markdown table, each ratio against its goal.
func peerTable(p peerPair, peerName string, figures []peerFigure) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "| figure | oz0 dev | %s | oz0/peer | goal |\n|---|---|---|---|---|\n", peerName)
	for _, f := range figures {
		goal := "—"
		if g, ok := p.goals[f.name]; ok {
			met := "met"
			if !f.ratio() || f.oz0/f.peer > g {
				met = "**not met**"
			}
			goal = fmt.Sprintf("≤ %gx: %s", g, met)
		} else if f.name == "failures" {
			goal = "0: met"
			if f.oz0 > 0 {
				goal = "0: **not met**"
			}
		}
		ratio := "—"
		if f.ratio() {
			ratio = fmt.Sprintf("%.2fx", f.oz0/f.peer)
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s |\n", f.what, peerValue(f.oz0, f.unit), peerValue(f.peer, f.unit), ratio, goal)
	}
	return sb.String()
}

func peerValue(v float64, unit string) string {
	switch unit {
	case "ms":
		if v >= 1000 {
			return fmt.Sprintf("%.2f s", v/1000)
		}
		return fmt.Sprintf("%.0f ms", v)
	case "MB":
		return fmt.Sprintf("%.0f MB", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// burst submits peerBurst runs at once to s and returns the time from the first submit to the
// last answer and, when sample, the peak PSS of s's processes meanwhile, in bytes. The time of a
// sampled burst is not a figure: reading every process's smaps_rollup every 20 ms takes CPU and
// each process's memory lock from the processes it reads, more from a server of many processes
// (oz0 dev's sessions) than from one of one (both peers): in the same run, 20 LangGraph jobs took
// oz0 dev 1.9-2.0 s sampled and 1.0-1.2 s not, langgraph dev 1.36-1.49 s and 1.1-1.4 s.
func burst(s *peerSide, sample bool) (time.Duration, int64) {
	stop := make(chan struct{})
	peak := make(chan int64, 1)
	if sample {
		go func() { peak <- samplePSS(s.pid, stop) }()
	} else {
		peak <- 0
	}
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for range peerBurst {
		wg.Go(func() {
			<-gate
			s.do(notifyAnswer)
		})
	}
	start := time.Now()
	close(gate)
	wg.Wait()
	d := time.Since(start)
	close(stop)
	return d, <-peak
}

// editToResult changes notify_team's returned string in s's source to mark n, written in place
// as an editor saves, then runs s at once, again until an answer shows the mark. It returns the
// time from the write to that answer and how many answers came from the code before.
func editToResult(b *testing.B, s *peerSide, n int) (time.Duration, int) {
	b.Helper()
	data, err := os.ReadFile(s.source)
	if err != nil {
		b.Fatal(err)
	}
	old := regexp.MustCompile(`told the \{team\} team( \(edit \d+\))?: `).FindStringSubmatch(string(data))
	if old == nil {
		b.Fatalf("%s: no %q to edit", s.source, notifyReturn)
	}
	mark := fmt.Sprintf(" (edit %d)", n)
	edited := strings.Replace(string(data), old[0], "told the {team} team"+mark+": ", 1)
	oldAnswer, newAnswer := notifyAnswer+old[1]+":", notifyAnswer+mark+":"
	start := time.Now()
	if err := os.WriteFile(s.source, []byte(edited), 0o644); err != nil {
		b.Fatal(err)
	}
	stale := 0
	for time.Since(start) < 5*time.Minute {
		_, answer, ok := s.do(notifyAnswer)
		if !ok {
			continue // counted; a server that restarts on an edit refuses meanwhile
		}
		if strings.Contains(answer, newAnswer) {
			return time.Since(start), stale
		}
		if !strings.Contains(answer, oldAnswer) {
			b.Fatalf("%s: an answer of neither the old code nor the new: %q", s.name, answer)
		}
		stale++
	}
	b.Fatalf("%s: no answer of the edited code in 5 minutes (%d stale)", s.name, stale)
	return 0, 0
}

// startPeerOz0 starts `oz0 dev` on the plugin, its state in a directory of its own, with the
// tenant's Anthropic key set and the fake model as its upstream (`oz0 secret set
// ANTHROPIC_API_KEY --base-url`), so that its sessions' calls go through the gateway to the fake
// model over HTTP, as a provider's would.
func startPeerOz0(b *testing.B, bin, plugin string, devFlags []string, fmURL string) *peerSide {
	b.Helper()
	c, cmd := startTemplateDev(b, bin, plugin, devFlags)
	if _, err := c.SetSecret(context.Background(), "ANTHROPIC_API_KEY", peerKey, fmURL); err != nil {
		b.Fatal(err)
	}
	return &peerSide{name: "oz0 dev", pid: cmd.Process.Pid, source: filepath.Join(plugin, "src", "acme_triage", "agent.py"),
		run: func(ctx context.Context) (string, error) { return oz0Run(ctx, c) }}
}

// oz0Run submits a job and follows its stream to its end, as `oz0 run` does, and returns its
// answer.
func oz0Run(ctx context.Context, c *client.Client) (string, error) {
	j, err := c.CreateJob(ctx, apiv1.JobRequest{Agent: "acme-triage", Input: peerInput})
	if err != nil {
		return "", err
	}
	if err := c.Events(ctx, j.ID, 0, func(apiv1.Event) error { return nil }, nil); err != nil {
		return "", err
	}
	final, err := c.Job(ctx, j.ID)
	if err != nil {
		return "", err
	}
	if final.Status != apiv1.StatusSucceeded {
		return "", fmt.Errorf("job %s %s: %s", j.ID, final.Status, final.Reason)
	}
	var answer string
	if err := json.Unmarshal(final.Output, &answer); err != nil {
		return "", fmt.Errorf("job %s: output %s: %v", j.ID, final.Output, err)
	}
	return answer, nil
}

// startPeer starts the pair's peer on the project and waits for its first 200.
func startPeer(b *testing.B, p peerPair, venvBin, project string, env []string) *peerSide {
	b.Helper()
	port := freePort(b)
	cmd := peerCommand(p, venvBin, project, env, port)
	startLogged(b, cmd)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(base + p.readyPath)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: no 200 from %s in 2 minutes", strings.Join(cmd.Args, " "), p.readyPath)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &peerSide{name: filepath.Base(cmd.Args[0]) + " " + cmd.Args[1], pid: cmd.Process.Pid, source: filepath.Join(project, p.source),
		run: func(ctx context.Context) (string, error) { return p.run(ctx, base) }}
}

// peerCommand is the peer's server on port, in a session of its own (so that what it starts
// is found, and stopped, with it).
func peerCommand(p peerPair, venvBin, project string, env []string, port int) *exec.Cmd {
	args := p.command(venvBin, port)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = project
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd
}

// adkWebRun is a run as adk web's UI makes one: a session, then the message to /run_sse, whose
// events are read to the end; the answer is the last event's text.
func adkWebRun(ctx context.Context, base string) (string, error) {
	var session struct {
		ID string `json:"id"`
	}
	if err := peerPost(ctx, base+"/apps/acme_triage/users/bench/sessions", map[string]any{}, &session); err != nil {
		return "", err
	}
	body := map[string]any{
		"appName": "acme_triage", "userId": "bench", "sessionId": session.ID, "streaming": false,
		"newMessage": map[string]any{"role": "user", "parts": []map[string]string{{"text": peerInput}}},
	}
	resp, err := peerRequest(ctx, base+"/run_sse", body)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	answer := ""
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 8<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Error   string `json:"error"`
			Content struct {
				Parts []struct {
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"content"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return "", fmt.Errorf("/run_sse: %v: %q", err, data)
		}
		if ev.Error != "" {
			return "", fmt.Errorf("/run_sse: %s", ev.Error)
		}
		var text strings.Builder
		for _, p := range ev.Content.Parts {
			text.WriteString(p.Text)
		}
		if text.Len() > 0 {
			answer = text.String()
		}
	}
	return answer, sc.Err()
}

// langgraphDevRun is a run through LangGraph's API: a thread, then a run on it waited for; the
// answer is the last message's text.
func langgraphDevRun(ctx context.Context, base string) (string, error) {
	var thread struct {
		ID string `json:"thread_id"`
	}
	if err := peerPost(ctx, base+"/threads", map[string]any{}, &thread); err != nil {
		return "", err
	}
	var state struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Error json.RawMessage `json:"__error__"`
	}
	body := map[string]any{"assistant_id": "agent", "input": map[string]any{"messages": []map[string]string{{"role": "user", "content": peerInput}}}}
	if err := peerPost(ctx, base+"/threads/"+thread.ID+"/runs/wait", body, &state); err != nil {
		return "", err
	}
	if len(state.Error) > 0 || len(state.Messages) == 0 {
		return "", fmt.Errorf("runs/wait: no messages: error %s", state.Error)
	}
	last := state.Messages[len(state.Messages)-1].Content
	var text string
	if json.Unmarshal(last, &text) == nil {
		return text, nil
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(last, &blocks); err != nil {
		return "", fmt.Errorf("runs/wait: the last message's content %s: %v", last, err)
	}
	var sb strings.Builder
	for _, bl := range blocks {
		sb.WriteString(bl.Text)
	}
	return sb.String(), nil
}

// peerRequest POSTs body as JSON and returns a 200's response.
func peerRequest(ctx context.Context, url string, body any) (*http.Response, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, fmt.Errorf("POST %s: %s: %s", url, resp.Status, msg)
	}
	return resp, nil
}

// peerPost POSTs body as JSON and decodes the answer into out.
func peerPost(ctx context.Context, url string, body, out any) error {
	resp, err := peerRequest(ctx, url, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(out); err != nil {
		return fmt.Errorf("POST %s: %v", url, err)
	}
	return nil
}

// peerPlugin makes the pair's oz0 plugin as its author does: `oz0 plugin new`, the agent's
// source when the pair has its own (the guide's snippet), `uv add` of the framework at the peer's
// pins, then `uv lock && uv sync`. The adk template pins its framework itself: it must be the
// version the peer runs.
func peerPlugin(b *testing.B, p peerPair, bin string, uv peerUV) string {
	b.Helper()
	parent := b.TempDir()
	runBin(b, bin, parent, "plugin", "new", "acme-triage", "--template", p.template, "--description", "Sorts support tickets")
	dir := filepath.Join(parent, "acme-triage")
	pins := peerPins(b, filepath.Join("..", "..", "scripts", "peers", p.env, "pyproject.toml"))
	if p.agentPy != "" {
		if err := copyFile(filepath.Join("testdata", "peers", p.agentPy), filepath.Join(dir, "src", "acme_triage", "agent.py")); err != nil {
			b.Fatal(err)
		}
	}
	if len(p.add) > 0 {
		args := []string{"add", "--no-sync"}
		for _, name := range p.add {
			args = append(args, name+"=="+pins[name])
		}
		uv.run(b, dir, args...)
	}
	for name, version := range peerPins(b, filepath.Join(dir, "pyproject.toml")) {
		if v, ok := pins[name]; ok && v != version {
			b.Fatalf("the %s template pins %s==%s, the peer (scripts/peers/%s) %s==%s: make them one version", p.template, name, version, p.env, name, v)
		}
	}
	uv.run(b, dir, "lock")
	uv.run(b, dir, "sync")
	return dir
}

// peerProject writes the peer's project as its author writes it (testdata/peers/FILES), with
// the plugin's instructions, into a new directory.
func peerProject(b *testing.B, p peerPair, plugin string) string {
	b.Helper()
	dir := b.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "peers", p.files))); err != nil {
		b.Fatal(err)
	}
	if err := copyFile(filepath.Join(plugin, "prompts", "acme-triage.md"), filepath.Join(dir, p.instructions)); err != nil {
		b.Fatal(err)
	}
	return dir
}

// peerPins are the name==version pins of a pyproject.toml (extras dropped).
func peerPins(b *testing.B, pyproject string) map[string]string {
	b.Helper()
	data, err := os.ReadFile(pyproject)
	if err != nil {
		b.Fatal(err)
	}
	pins := map[string]string{}
	for _, m := range regexp.MustCompile(`"([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==([^"]+)"`).FindAllStringSubmatch(string(data), -1) {
		pins[m[1]] = m[2]
	}
	return pins
}

// peerUV is the uv the tests run (scripts/test-deps.sh installs it) and its environment.
type peerUV struct {
	bin string
	env []string
}

// peersUV is uv as the tests run it (uv_script_test.go): the pinned uv, its shared cache, the
// fixed resolution date.
func peersUV(b *testing.B) peerUV {
	b.Helper()
	p, err := findUV()
	if err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(p.home, "bin", "uv")
	if _, err := os.Stat(bin); err != nil {
		b.Fatalf("uv is missing (no %s): run scripts/test-deps.sh", bin)
	}
	return peerUV{bin: bin, env: append(os.Environ(), p.environ()...)}
}

func (uv peerUV) run(b *testing.B, dir string, args ...string) {
	b.Helper()
	cmd := exec.Command(uv.bin, args...)
	cmd.Dir = dir
	cmd.Env = uv.env
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("uv %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// peerEnv is the bin directory of the peer's environment that scripts/peers-env.sh installed:
// PEER-KEY under the tests' cache, KEY from its pyproject.toml and scripts/uv.env, as the script
// computes it.
func peerEnv(b *testing.B, peer string) string {
	b.Helper()
	sum := sha256.New()
	for _, f := range []string{filepath.Join("..", "..", "scripts", "peers", peer, "pyproject.toml"), uvEnvFile} {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		sum.Write(data)
	}
	cache, err := testCacheDir()
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(cache, "peers", peer+"-"+hex.EncodeToString(sum.Sum(nil))[:16])
	if _, err := os.Stat(filepath.Join(dir, ".oz0-complete")); err != nil {
		b.Fatalf("the peer %s is not installed in %s: run scripts/peers-env.sh (make bench-peers runs it)", peer, dir)
	}
	return filepath.Join(dir, ".venv", "bin")
}

func freePort(b *testing.B) int {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// samplePSS samples treePSS(root) every ~20 ms until stop is closed and returns the peak. Its
// thread runs at a lower priority (nice 10), so that the sampling (smaps_rollup walks each
// process's page tables) takes little of the CPU the burst it measures needs.
func samplePSS(root int, stop <-chan struct{}) int64 {
	runtime.LockOSThread() // never unlocked: the thread, niced, ends with the goroutine
	syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), 10)
	var peak int64
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if pss, _ := treePSS(root); pss > peak {
			peak = pss
		}
		select {
		case <-stop:
			return peak
		case <-tick.C:
		}
	}
}

// treePSS is the proportional set size, in bytes, of root and every process below it: its
// descendants by parent id, and the processes of the session it leads (what they started and
// left, reparented). PSS counts a page shared by n processes as 1/n in each, so the sum counts
// it once. It also returns how many processes there were.
func treePSS(root int) (int64, int) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0
	}
	children := map[int][]int{}
	in := map[int]bool{root: true}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone
		}
		// pid (comm) state ppid pgrp session ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 4 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		sid, _ := strconv.Atoi(f[3])
		children[ppid] = append(children[ppid], pid)
		if sid == root {
			in[pid] = true
		}
	}
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if !in[c] {
				in[c] = true
				queue = append(queue, c)
			}
		}
	}
	var total int64
	n := 0
	for pid := range in {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
		if err != nil {
			continue // gone, or a kernel thread
		}
		for line := range strings.Lines(string(data)) {
			if rest, ok := strings.CutPrefix(line, "Pss:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				total += kb * 1024
				n++
				break
			}
		}
	}
	return total, n
}

// loadAverage is the machine's load average over 1, 5 and 15 minutes, as /proc/loadavg has it.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}

func mib(bytes int64) float64 { return float64(bytes) / (1 << 20) }

// msMedian is the median of ds in milliseconds; none (every run failed) fails the benchmark.
func msMedian(b *testing.B, ds []time.Duration) float64 {
	b.Helper()
	if len(ds) == 0 {
		b.Fatal("every run failed")
	}
	return ms(medianOf(ds))
}
