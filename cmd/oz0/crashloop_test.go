package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/devserver/store"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

// crashRounds is how many times the crash loop kills `oz0 dev`.
const crashRounds = 20

// TestCrashLoop kills `oz0 dev` with SIGKILL at random moments, crashRounds times, and restarts it
// on the same state directory each time: while two chatty jobs stream, a job waits for a person
// and another makes model calls one after another, each followed by `oz0 run --json`. After each
// restart: the store opens (oz0 dev starts), every event a client printed is in the job's record
// as it was printed, the jobs that were live are interrupted with that reason and their approvals
// too, and nothing of the sessions is left (processes, session directories). The moments come from
// a seed, printed: OZ0_CRASH_SEED=N replays a run. docs/reliability.md has the figures.
func TestCrashLoop(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	t.Parallel()
	seed := time.Now().UnixNano()
	if s := os.Getenv("OZ0_CRASH_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("OZ0_CRASH_SEED: %v", err)
		}
	}
	t.Logf("seed %d: OZ0_CRASH_SEED=%d go test ./cmd/oz0 -run TestCrashLoop replays it", seed, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(seed>>32)))

	fx := newFaultFixtures(t)
	tiers := []sandbox.Tier{sandbox.None}
	if sandbox.Check(sandbox.Standard) == nil {
		tiers = append(tiers, sandbox.Standard)
	}
	dir := filepath.Join(fx.root, "crash")
	began := time.Now()
	var total crashFigures
	var last *crashRound
	for round := 0; ; round++ {
		tier := tiers[rng.IntN(len(tiers))]
		d := fx.startDevIn(t, tier, dir, fmt.Sprintf("dev-%d.log", round))
		if last != nil {
			total.add(last.check(t, d))
		}
		if round == crashRounds {
			d.stop(t)
			break
		}
		last = crash(t, d, rng, tier)
	}
	t.Logf("%d rounds in %s: %d jobs, %d events printed by clients found in the record as printed, %d jobs interrupted, %d approvals interrupted, %d processes of sessions gone",
		crashRounds, time.Since(began).Round(100*time.Millisecond), total.jobs, total.events, total.interrupted, total.approvals, total.procs)
	if total.events == 0 || total.interrupted == 0 {
		t.Errorf("the loop checked nothing: %+v", total)
	}
}

// crashRound is what a round left for the next to check: what each client printed, by job.
type crashRound struct {
	tier   sandbox.Tier
	dev    int                      // the killed server's pid
	procs  []procInfo               // its descendants as it was killed
	events map[string][]apiv1.Event // by job
	agents map[string]string        // job → agent
}

type crashFigures struct{ jobs, events, interrupted, approvals, procs int }

func (f *crashFigures) add(g crashFigures) {
	f.jobs, f.events, f.interrupted, f.approvals, f.procs = f.jobs+g.jobs, f.events+g.events, f.interrupted+g.interrupted, f.approvals+g.approvals, f.procs+g.procs
}

// crash starts the jobs, each followed by `oz0 run --json`, waits until the chatty ones have
// printed a random number of events (or have ended), and kills the server with SIGKILL, then the
// clients.
func crash(t *testing.T, d *faultDev, rng *rand.Rand, tier sandbox.Tier) *crashRound {
	t.Helper()
	agents := []string{"chatty", "chatty", "approval", "caller"}
	var runs []*cliRun
	for _, a := range agents {
		runs = append(runs, d.start(t, "", "run", "--json", a, "I was charged twice for my order"))
	}
	// A moment: after this many events of the chatty jobs (0: at once; past what they make: after
	// they have ended), most often once the approval waits for a person and the caller has made
	// a few model calls (one is in flight nearly always: the upstream takes 20 ms an answer).
	at := rng.IntN(4000)
	waiting := rng.IntN(4) > 0
	calls := 0
	if rng.IntN(4) > 0 {
		calls = 1 + rng.IntN(20)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		n, ended := 0, 0
		for _, r := range runs[:2] {
			out := r.stdout()
			n += strings.Count(out, "\n")
			if strings.Contains(out, `"status":"succeeded"`) {
				ended++
			}
		}
		if (n >= at || ended == 2) &&
			(!waiting || strings.Contains(runs[2].stdout(), `"status":"waiting_for_approval"`)) &&
			strings.Count(runs[3].stdout(), `"type":"model_call"`) >= calls {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not there in a minute: %d events of the chatty jobs (want %d), the approval waiting: %v (want %v), %d model calls (want %d)",
				n, at, strings.Contains(runs[2].stdout(), `"status":"waiting_for_approval"`), waiting, strings.Count(runs[3].stdout(), `"type":"model_call"`), calls)
		}
		time.Sleep(time.Millisecond)
	}
	pid := d.p.cmd.Process.Pid
	procs := descendants(pid) // the sessions' processes, and a sandbox's init started ahead
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-d.p.done
	// The clients would retry a server that is gone: what they printed is all they will print.
	round := &crashRound{tier: tier, dev: pid, procs: procs, events: map[string][]apiv1.Event{}, agents: map[string]string{}}
	for i, r := range runs {
		r.cmd.Process.Kill()
		r.wait(t)
		sc := bufio.NewScanner(strings.NewReader(r.stdout()))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var ev apiv1.Event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				continue // a line cut by the kill
			}
			round.events[ev.Job] = append(round.events[ev.Job], ev)
			round.agents[ev.Job] = agents[i]
		}
	}
	return round
}

// interruptedReason is the reason of a job that was live when oz0 dev stopped or crashed.
const interruptedReason = "oz0 dev stopped (or crashed) while the job was live"

// check checks, on the restarted server d, what the round before it left.
func (r *crashRound) check(t *testing.T, d *faultDev) (fig crashFigures) {
	t.Helper()
	// Nothing of the killed server's sessions is left: its session directories went as the new
	// server started; its processes die with it (in a sandbox) or are killed then (tier none).
	entries, _ := os.ReadDir(d.tmp)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), fmt.Sprintf("oz0-session-%d-", r.dev)) {
			t.Errorf("a session directory of the killed server (tier %s) is left: %s", r.tier, e.Name())
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := sessionOrphans(d.fx.root, descendants(d.p.cmd.Process.Pid))
		for _, p := range r.procs {
			if start, ok := procStart(p.pid); ok && start == p.start {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			fig.procs = len(r.procs)
			break
		}
		if time.Now().After(deadline) {
			for _, p := range left {
				syscall.Kill(p.pid, syscall.SIGKILL)
			}
			t.Fatalf("processes of the killed server's sessions (tier %s) are left: %v", r.tier, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Every event a client printed is in the record, as printed; a job whose end no client saw
	// has ended: interrupted, or as it did just before the kill.
	for job, seen := range r.events {
		fig.jobs++
		code, trace, stderr := d.oz0(t, "", "job", "trace", job)
		if code != 0 {
			t.Fatalf("oz0 job trace %s: exit %d: %s", job, code, stderr)
		}
		j, evs, err := store.LoadTrace(strings.NewReader(trace))
		if err != nil {
			t.Fatalf("the trace of %s does not load: %v", job, err)
		}
		for _, ev := range seen {
			i := slices.IndexFunc(evs, func(e store.Event) bool { return e.Seq == ev.Seq })
			if i < 0 || evs[i].Type != ev.Type || !sameJSONValue(evs[i].Data, ev.Data) || !evs[i].Time.Equal(ev.Time) {
				t.Errorf("job %s (%s): the client printed event %d %s %s, the record has %v", job, r.agents[job], ev.Seq, ev.Type, ev.Data, evs[min(max(i, 0), len(evs)-1):max(i+1, 0)])
				continue
			}
			fig.events++
		}
		switch {
		case !j.Status.Terminal():
			t.Errorf("job %s (%s) is %s after the restart", job, r.agents[job], j.Status)
		case j.Status == store.StatusInterrupted:
			fig.interrupted++
			if j.Reason != interruptedReason {
				t.Errorf("job %s (%s) is interrupted: %q, want %q", job, r.agents[job], j.Reason, interruptedReason)
			}
		case r.agents[job] == "approval" || r.agents[job] == "caller":
			// These never end by themselves: they wait for a person, they call the model on.
			t.Errorf("job %s (%s) ended %s (%s), want interrupted", job, r.agents[job], j.Status, j.Reason)
		}
	}
	// No approval is left waiting: those of the killed server are interrupted.
	code, out, stderr := d.oz0(t, "", "approval", "list", "--all", "--json")
	var list []apiv1.Approval
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
		t.Fatalf("oz0 approval list: exit %d: %s%s", code, out, stderr)
	}
	for _, a := range list {
		switch {
		case a.Status == "pending":
			t.Errorf("approval %s of job %s is still pending after the restart", a.ID, a.Job)
		case r.events[a.Job] != nil && a.Status == "interrupted":
			fig.approvals++
			if a.Reason != "oz0 dev stopped while it waited; its job was interrupted" {
				t.Errorf("approval %s is interrupted: %q", a.ID, a.Reason)
			}
		}
	}
	return fig
}

// sameJSONValue reports whether two JSON texts hold the same value.
func sameJSONValue(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
