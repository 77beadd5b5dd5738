package supervisor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/internal/testbin"
	"github.com/orchestrator-zero/oz0/plugin"
	"github.com/orchestrator-zero/oz0/supervisor"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// harnessBinary returns the path of harnesskit/internal/testharness, built once per test process.
func harnessBinary(t testing.TB) string { return testbin.Build(t, testbin.TestHarness) }

const (
	ticket = "I was charged twice for my order"
	reply  = "billing: Sorry about the double charge; we have refunded the second one."
)

// spec is a session of the test harness in mode, with short limits.
func spec(t testing.TB, mode string, args ...string) supervisor.Spec {
	input, _ := json.Marshal(ticket)
	return supervisor.Spec{
		Command:   append([]string{harnessBinary(t), mode}, args...),
		PluginDir: t.TempDir(),
		Request: harnesskit.SessionRequest{
			Job: "job_test_1", Agent: "acme-triage", Harness: "acme-triage",
			Text: ticket, Input: input,
			Instructions: "You sort support tickets for a customer support desk.",
			Model:        harnesskit.Model{Name: "claude-fake-1", Format: plugin.FormatAnthropicMessages, Record: "fake"},
			Tools:        []string{"notify_team"},
			Limits:       harnesskit.RequestLimits{MaxSteps: 10},
		},
		Limits:  supervisor.Limits{Timeout: 30 * time.Second, Grace: 300 * time.Millisecond},
		Decider: supervisor.AllowAll,
		TempDir: t.TempDir(),
	}
}

// recorder keeps a session's events.
type recorder struct {
	mu     sync.Mutex
	events []harnesskit.Event
}

func (r *recorder) add(e harnesskit.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) all() []harnesskit.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]harnesskit.Event(nil), r.events...)
}

// run runs a session to its end, and checks that it leaked no process, goroutine or directory and
// that its events are in order with the end last.
func run(t *testing.T, sp supervisor.Spec) (harnesskit.End, []harnesskit.Event) {
	t.Helper()
	end, events, _ := runSession(t, context.Background(), sp, nil)
	return end, events
}

func runSession(t *testing.T, ctx context.Context, sp supervisor.Spec, started func(*supervisor.Session)) (harnesskit.End, []harnesskit.Event, *supervisor.Session) {
	t.Helper()
	before := runtime.NumGoroutine()
	rec := &recorder{}
	if sp.Sink == nil {
		sp.Sink = rec.add
	} else {
		sink := sp.Sink
		sp.Sink = func(e harnesskit.Event) { rec.add(e); sink(e) }
	}
	s, err := supervisor.Start(ctx, sp)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if started != nil {
		started(s)
	}
	end := s.Wait()
	events := rec.all()
	checkEvents(t, events, end)
	checkNoLeaks(t, s, sp.TempDir, before)
	return end, events, s
}

func checkEvents(t *testing.T, events []harnesskit.Event, end harnesskit.End) {
	t.Helper()
	for i, e := range events {
		if e.Seq != int64(i+1) {
			t.Errorf("event %d has seq %d", i, e.Seq)
		}
		if (e.Kind == harnesskit.EventEnd) != (i == len(events)-1) {
			t.Errorf("event %d of %d is %s: the end must be last, once", i+1, len(events), e.Kind)
		}
	}
	if n := len(events); n == 0 || events[n-1].End == nil || events[n-1].End.Status != end.Status {
		t.Errorf("the last event is not the end %s", end.Status)
	}
}

// checkNoLeaks checks that the session's process group is gone, its directories are removed and
// its goroutines have ended.
func checkNoLeaks(t *testing.T, s *supervisor.Session, tempDir string, goroutinesBefore int) {
	t.Helper()
	if live := waitGroupGone(s.PID(), 3*time.Second); len(live) > 0 {
		t.Errorf("the process group %d still has live processes %v", s.PID(), live)
		syscall.Kill(-s.PID(), syscall.SIGKILL)
	}
	for _, d := range []string{s.Workdir(), s.StateDir(), filepath.Dir(s.Workdir())} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the session's directory %s is still there (%v)", d, err)
		}
	}
	if entries, _ := os.ReadDir(tempDir); len(entries) > 0 {
		t.Errorf("the session left %d entries in its TempDir", len(entries))
	}
	var n int
	for i := 0; i < 200; i++ {
		if n = runtime.NumGoroutine(); n <= goroutinesBefore {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	buf := make([]byte, 1<<20)
	t.Errorf("goroutines: %d before the session, %d after:\n%s", goroutinesBefore, n, buf[:runtime.Stack(buf, true)])
}

// waitGroupGone waits until no live process is in the process group pgid and returns the live
// ones left. A zombie is not live: where PID 1 does not reap orphans (as in some containers), a
// killed grandchild stays a zombie, which kill(-pgid, 0) still counts.
func waitGroupGone(pgid int, limit time.Duration) []int {
	deadline := time.Now().Add(limit)
	for {
		live := liveGroupMembers(pgid)
		if len(live) == 0 || time.Now().After(deadline) {
			return live
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func liveGroupMembers(pgid int) []int {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var live []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, group, ok := procStat(pid)
		if ok && group == pgid && state != "Z" && state != "X" {
			live = append(live, pid)
		}
	}
	return live
}

// procStat returns a process's state and process group from /proc/PID/stat.
func procStat(pid int) (state string, pgrp int, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", 0, false
	}
	f := strings.Fields(s[i+1:]) // state ppid pgrp ...
	if len(f) < 3 {
		return "", 0, false
	}
	pgrp, err = strconv.Atoi(f[2])
	return f[0], pgrp, err == nil
}

// processAlive reports whether pid is a live (not zombie) process.
func processAlive(pid int) bool {
	state, _, ok := procStat(pid)
	return ok && state != "Z" && state != "X"
}

// kinds returns the events of kind k.
func ofKind(events []harnesskit.Event, k harnesskit.EventKind) []harnesskit.Event {
	var out []harnesskit.Event
	for _, e := range events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// outputString is a completed session's output as a Go string.
func outputString(t *testing.T, end harnesskit.End) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(end.Output, &s); err != nil {
		t.Fatalf("output %s is not a string: %v", end.Output, err)
	}
	return s
}

func wantStatus(t *testing.T, end harnesskit.End, want harnesskit.Status, reasons ...string) {
	t.Helper()
	if end.Status != want {
		t.Fatalf("status %s, want %s; end: %s\nstderr: %s", end.Status, want, end, end.StderrTail)
	}
	for _, r := range reasons {
		if !strings.Contains(end.Reason, r) {
			t.Errorf("reason %q does not say %q", end.Reason, r)
		}
	}
}
