package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/lint"
	"github.com/orchestrator-zero/oz0/lint/evalfile"
)

func testOutcome(output string) *outcome {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := apiv1.Job{Status: apiv1.StatusSucceeded, Output: json.RawMessage(output), StartedAt: start, EndedAt: start.Add(1500 * time.Millisecond),
		Usage: apiv1.Usage{ModelCalls: 2, InputTokens: 100, OutputTokens: 20, CostUSD: 0.002}}
	ev := func(typ, data string) apiv1.Event { return apiv1.Event{Type: typ, Data: json.RawMessage(data)} }
	return newOutcome(job, []apiv1.Event{
		ev(apiv1.EventPermissionRequest, `{"id":"p1","tool":"notify_team","arguments":{"team":"billing","meta":{"urgent":true,"n":1}}}`),
		ev(apiv1.EventPermissionDecision, `{"id":"p1","tool":"notify_team","decision":"allow","by":"policy"}`),
		ev(apiv1.EventPermissionRequest, `{"id":"p2","tool":"delete_account","arguments":{}}`),
		ev(apiv1.EventPermissionDecision, `{"id":"p2","tool":"delete_account","decision":"deny","by":"node","reason":"not listed"}`),
	})
}

// Each kind of assertion, on one outcome: a value that holds and one that does not.
func TestChecks(t *testing.T) {
	o := testOutcome(`"{\"team\": \"billing\", \"labels\": [\"urgent\"]}"`)
	cases := []struct {
		kind     string
		pass     any
		fail     any
		failWhy  string
		yamlFail bool
	}{
		{"status", "succeeded", "failed", "the job succeeded, not failed", false},
		{"equals", map[string]any{"labels": []any{"urgent"}, "team": "billing"}, map[string]any{"team": "account"}, "not {\"team\":\"account\"}", false},
		{"contains", `"team": "billing"`, "account", `does not contain "account"`, false},
		{"not_contains", "account", "billing", `contains "billing"`, false},
		{"matches", `"team": "\w+"`, `^account`, `does not match "^account"`, false},
		{"schema", map[string]any{"type": "object", "required": []any{"team"}}, map[string]any{"type": "array"}, "does not validate against the schema", false},
		{"path", map[string]any{"team": "billing", "labels[0]": "urgent"}, "customer.id", "nothing at customer.id", false},
		{"called", map[string]any{"name": "notify_team", "arguments": map[string]any{"meta": map[string]any{"n": 1}}}, map[string]any{"name": "notify_team", "arguments": map[string]any{"meta": map[string]any{"n": 2}}}, "notify_team was called with", false},
		{"not_called", "refund", "delete_account", "delete_account was called", false},
		{"refused", "delete_account", "notify_team", "notify_team was called and allowed", false},
		{"max_model_calls", 2, 1, "2 model calls, over 1", false},
		{"max_tokens", 120, 119, "120 tokens, over 119", false},
		{"max_cost", 0.002, 0.001, "the cost is $0.002, over $0.001", false},
		{"max_duration", "2s", "1s", "it took 1.5s, over 1s", false},
	}
	for _, c := range cases {
		for i, v := range []any{c.pass, c.fail} {
			ch, err := newCheck(evalfile.Assertion{Kind: c.kind, Value: v}, t.TempDir())
			if err != nil {
				t.Fatalf("%s: %v", c.kind, err)
			}
			ok, why := ch.check(o)
			if ok != (i == 0) {
				t.Errorf("%s %v: ok %v, why %q", c.kind, v, ok, why)
			}
			if i == 1 && !strings.Contains(why, c.failWhy) {
				t.Errorf("%s %v: %q, want it to say %q", c.kind, v, why, c.failWhy)
			}
		}
	}
}

func TestCompare(t *testing.T) {
	base := &Report{Results: []Result{
		{File: "e.yaml", Case: "a", Status: Passed, Tokens: 100, CostUSD: 0.01, DurationMS: 1000},
		{File: "e.yaml", Case: "b", Status: Failed, Tokens: 50},
	}}
	now := &Report{Results: []Result{
		{File: "e.yaml", Case: "a", Status: Failed, Tokens: 130, CostUSD: 0.02, DurationMS: 900},
		{File: "e.yaml", Case: "b", Status: Failed, Tokens: 40},
		{File: "e.yaml", Case: "c", Status: Failed, Tokens: 10},
	}}
	c := Compare(base, now)
	if strings.Join(c.NowFailing, ",") != "e.yaml a,e.yaml c" {
		t.Errorf("now failing %v", c.NowFailing)
	}
	if c.Cases[0].Tokens != 30 || c.Cases[0].DurationMS != -100 || c.Cases[1].Tokens != -10 || c.Cases[2].Was != "" || c.Total.Tokens != 20 {
		t.Errorf("deltas %+v", c)
	}
	var b bytes.Buffer
	if err := WriteComparison(&b, c); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"e.yaml a  passed  failed  +30     +$0.01  -0.1s", "e.yaml c  (new)", "total     -       -       +20"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("comparison lacks %q:\n%s", want, b.String())
		}
	}
}

func TestJUnitAndGitHub(t *testing.T) {
	r := &Report{Results: []Result{
		{File: "evals/a.yaml", Case: "ok", Status: Passed, DurationMS: 1200},
		{File: "evals/a.yaml", Case: "bad", Status: Failed, Failures: []Failure{{Kind: "contains", Line: 7, Col: 9, Message: "the output does not contain \"x\"\x01: it is \"y, z\"\nmore"}}},
		{File: "evals/b.yaml", Case: "later", Status: Skipped, Notes: []string{"it runs on the live model only"}},
	}}
	var b bytes.Buffer
	if err := WriteJUnit(&b, r); err != nil {
		t.Fatal(err)
	}
	var back junitSuites
	if err := xml.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if back.Tests != 3 || back.Failures != 1 || back.Skipped != 1 || len(back.Suites) != 2 || back.Suites[0].Time != "1.200" {
		t.Errorf("suites %+v", back)
	}
	if f := back.Suites[0].Cases[1].Failure; f == nil || f.Type != "contains" || !strings.HasPrefix(f.Text, "evals/a.yaml:7:9: contains: ") || strings.Contains(f.Text, "\x01") {
		t.Errorf("failure %+v", f)
	}
	b.Reset()
	if err := WriteGitHub(&b, r, nil); err != nil {
		t.Fatal(err)
	}
	want := "::error file=evals/a.yaml,line=7,col=9,title=oz0 eval%3A bad%3A contains::the output does not contain \"x\"\x01: it is \"y, z\"%0Amore\n1 passed, 1 failed, 1 skipped\n"
	if b.String() != want {
		t.Errorf("github:\n%q\nwant:\n%q", b.String(), want)
	}
}

func TestParseVerdict(t *testing.T) {
	v, err := parseVerdict("Sure.\n```json\n{\"answer\": \"Yes\", \"reason\": \"It apologises.\"}\n```")
	if err != nil || v.Answer != "yes" || v.Reason != "It apologises." {
		t.Errorf("%+v %v", v, err)
	}
	for _, bad := range []string{"yes", `{"answer": "maybe"}`, `{"answer": 1}`} {
		if _, err := parseVerdict(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The judge's plugin is one oz0 runs: it lints clean, its harness oz0 itself within it.
func TestJudgePlugin(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(t.TempDir(), "oz0")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := JudgePlugin(dir, exe); err != nil {
		t.Fatal(err)
	}
	p, rep, err := lint.Load(dir)
	if err != nil {
		t.Fatalf("%v %v", err, rep.Diagnostics)
	}
	if a := p.Agent(JudgeAgent); a == nil || p.Harness(JudgeAgent).Command[0] != "./bin/oz0" {
		t.Errorf("agent %v", a)
	}
	if st, err := os.Stat(filepath.Join(dir, "bin", "oz0")); err != nil || st.Mode()&0o111 == 0 {
		t.Errorf("the program: %v %v", st, err)
	}
}

// fakeServer runs no job: each stays running until the run is interrupted.
type fakeServer struct {
	mu        sync.Mutex
	cancelled []string
	created   chan string
}

func (s *fakeServer) CreateJob(_ context.Context, r apiv1.JobRequest) (apiv1.Job, error) {
	id := "job_" + r.Input
	s.created <- id
	return apiv1.Job{ID: id, Status: apiv1.StatusRunning}, nil
}
func (s *fakeServer) Job(context.Context, string) (apiv1.Job, error)     { return apiv1.Job{}, nil }
func (s *fakeServer) Calls(context.Context, string) (apiv1.Calls, error) { return apiv1.Calls{}, nil }
func (s *fakeServer) Events(ctx context.Context, _ string, _ int64, _ func(apiv1.Event) error, _ func(error)) error {
	<-ctx.Done()
	return ctx.Err()
}
func (s *fakeServer) Cancel(ctx context.Context, id string) (apiv1.Job, error) {
	if ctx.Err() != nil {
		return apiv1.Job{}, ctx.Err()
	}
	s.mu.Lock()
	s.cancelled = append(s.cancelled, id)
	s.mu.Unlock()
	return apiv1.Job{ID: id, Status: apiv1.StatusCancelled}, nil
}

// An interrupted run cancels the jobs it started (they would go on in oz0 dev).
func TestInterruptCancelsJobs(t *testing.T) {
	dir := t.TempDir()
	ef, ds := evalfile.Parse("e.yaml", []byte("agent: a\ncases:\n  - {name: one, input: one, live: true}\n  - {name: two, input: two, live: true}\n"))
	if len(ds) > 0 {
		t.Fatal(ds)
	}
	srv := &fakeServer{created: make(chan string, 2)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-srv.created
		<-srv.created
		cancel()
	}()
	// One line says it, not each case's error joined (`case one of e.yaml: job job_one: context
	// canceled` and so on), and what had ended; the report has a line a case, those stopped
	// marked so, with their jobs.
	rep, err := Run(ctx, srv, []*File{{File: ef, Path: filepath.Join(dir, "e.yaml"), Dir: dir}}, Options{Mode: Live})
	var interrupted *InterruptedError
	if !errors.As(err, &interrupted) || err.Error() != "interrupted: 0 of 2 cases had ended; the others were stopped (the report says which)" {
		t.Fatalf("err %v", err)
	}
	if rep == nil || len(rep.Results) != 2 || rep.Results[0].Status != Interrupted || rep.Results[1].Job != "job_two" || rep.Summary() != "0 passed, 0 failed, 2 interrupted" {
		t.Fatalf("report %+v", rep)
	}
	// --json's totals count them as interrupted, not skipped.
	if b, err := json.Marshal(JSONReport{Report: rep}); err != nil || !strings.Contains(string(b), `"totals":{"passed":0,"failed":0,"skipped":0,"interrupted":2,`) {
		t.Errorf("--json: %s %v", b, err)
	}
	slices.Sort(srv.cancelled)
	if strings.Join(srv.cancelled, ",") != "job_one,job_two" {
		t.Errorf("cancelled %v", srv.cancelled)
	}
}

func (s *fakeServer) Approvals(context.Context, bool) ([]apiv1.Approval, error) { return nil, nil }
func (s *fakeServer) Approve(context.Context, string, string) (apiv1.Approval, *apiv1.Rule, error) {
	return apiv1.Approval{}, nil, nil
}
func (s *fakeServer) Deny(context.Context, string, string) (apiv1.Approval, error) {
	return apiv1.Approval{}, nil
}

// approvingServer runs one job that asks for two approvals at once (parallel tool calls): its
// status says it waits once, for the first; the second is in the inbox only by the time the first
// has been answered. The job ends once both are.
type approvingServer struct {
	mu       sync.Mutex
	lists    int
	answered []string
}

func (s *approvingServer) CreateJob(context.Context, apiv1.JobRequest) (apiv1.Job, error) {
	return apiv1.Job{ID: "job_a", Status: apiv1.StatusRunning}, nil
}
func (s *approvingServer) Job(context.Context, string) (apiv1.Job, error) {
	return apiv1.Job{ID: "job_a", Status: apiv1.StatusSucceeded}, nil
}
func (s *approvingServer) Calls(context.Context, string) (apiv1.Calls, error) {
	return apiv1.Calls{}, nil
}
func (s *approvingServer) Cancel(context.Context, string) (apiv1.Job, error) {
	return apiv1.Job{}, errors.New("not cancelled here")
}
func (s *approvingServer) Events(ctx context.Context, job string, _ int64, fn func(apiv1.Event) error, _ func(error)) error {
	status := func(st apiv1.Status) apiv1.Event {
		data, _ := json.Marshal(apiv1.StatusData{Status: st})
		return apiv1.Event{Type: apiv1.EventStatus, Data: data}
	}
	if err := fn(status(apiv1.StatusWaitingForApproval)); err != nil {
		return err
	}
	s.mu.Lock()
	both := len(s.answered) == 2
	s.mu.Unlock()
	if !both {
		return fmt.Errorf("the job still waits: answered %v", s.answered)
	}
	return fn(status(apiv1.StatusSucceeded))
}
func (s *approvingServer) Approvals(context.Context, bool) ([]apiv1.Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	var pending []apiv1.Approval
	for _, id := range []string{"apr_1", "apr_2"} {
		if slices.Contains(s.answered, id) || (id == "apr_2" && s.lists == 1) {
			continue // the second comes after the first list
		}
		pending = append(pending, apiv1.Approval{ID: id, Job: "job_a", Harness: "h", Tool: "t", Arguments: json.RawMessage(`{}`)})
	}
	return pending, nil
}
func (s *approvingServer) Approve(_ context.Context, id, _ string) (apiv1.Approval, *apiv1.Rule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answered = append(s.answered, id)
	return apiv1.Approval{}, nil, nil
}
func (s *approvingServer) Deny(context.Context, string, string) (apiv1.Approval, error) {
	return apiv1.Approval{}, errors.New("not denied here")
}

// A case that approves answers every approval its job asks for, the one asked while the first
// was answered too (its job says it waits only once).
func TestApprovalsAskedTogetherAreAllAnswered(t *testing.T) {
	dir := t.TempDir()
	ef, ds := evalfile.Parse("e.yaml", []byte("agent: a\ncases:\n  - {name: both, input: x, live: true, approvals: approve}\n"))
	if len(ds) > 0 {
		t.Fatal(ds)
	}
	srv := &approvingServer{}
	rep, err := Run(context.Background(), srv, []*File{{File: ef, Path: filepath.Join(dir, "e.yaml"), Dir: dir}}, Options{Mode: Live})
	if err != nil {
		t.Fatal(err)
	}
	if n := rep.Counts(); n.Passed != 1 || n.Failed != 0 || strings.Join(srv.answered, ",") != "apr_1,apr_2" {
		t.Errorf("passed %d failed %d, answered %v: %+v", n.Passed, n.Failed, srv.answered, rep)
	}
}

// cancellingServer runs one job that never ends by itself: it asks a person to approve a call of
// notify_team when ask is set, and ends cancelled once Cancel is called.
type cancellingServer struct {
	ask       bool
	once      sync.Once
	cancelled chan struct{}
}

func (s *cancellingServer) CreateJob(context.Context, apiv1.JobRequest) (apiv1.Job, error) {
	return apiv1.Job{ID: "job_c", Status: apiv1.StatusRunning}, nil
}
func (s *cancellingServer) Job(context.Context, string) (apiv1.Job, error) {
	select {
	case <-s.cancelled:
		return apiv1.Job{ID: "job_c", Status: apiv1.StatusCancelled, Reason: "stopped on request"}, nil
	default:
		return apiv1.Job{ID: "job_c", Status: apiv1.StatusRunning}, nil
	}
}
func (s *cancellingServer) Calls(context.Context, string) (apiv1.Calls, error) {
	return apiv1.Calls{}, nil
}
func (s *cancellingServer) Cancel(context.Context, string) (apiv1.Job, error) {
	s.once.Do(func() { close(s.cancelled) })
	return apiv1.Job{ID: "job_c", Status: apiv1.StatusCancelled}, nil
}
func (s *cancellingServer) Events(ctx context.Context, _ string, after int64, fn func(apiv1.Event) error, _ func(error)) error {
	status := func(seq int64, st apiv1.Status) apiv1.Event {
		data, _ := json.Marshal(apiv1.StatusData{Status: st})
		return apiv1.Event{Seq: seq, Type: apiv1.EventStatus, Data: data}
	}
	if s.ask && after < 1 {
		if err := fn(status(1, apiv1.StatusWaitingForApproval)); err != nil {
			return err
		}
	}
	select {
	case <-s.cancelled:
		return fn(status(2, apiv1.StatusCancelled))
	case <-ctx.Done():
		return ctx.Err()
	}
}
func (s *cancellingServer) Approvals(context.Context, bool) ([]apiv1.Approval, error) {
	return []apiv1.Approval{{ID: "apr_1", Job: "job_c", Harness: "h", Tool: "notify_team", Arguments: json.RawMessage(`{"team":"billing"}`), Why: "requires_approval lists notify_team"}}, nil
}
func (s *cancellingServer) Approve(context.Context, string, string) (apiv1.Approval, *apiv1.Rule, error) {
	return apiv1.Approval{}, nil, errors.New("not approved here")
}
func (s *cancellingServer) Deny(context.Context, string, string) (apiv1.Approval, error) {
	return apiv1.Approval{}, errors.New("not denied here")
}

func runOne(t *testing.T, srv Server, file string) Result {
	t.Helper()
	dir := t.TempDir()
	ef, ds := evalfile.Parse("e.yaml", []byte(file))
	if len(ds) > 0 {
		t.Fatal(ds)
	}
	rep, err := Run(context.Background(), srv, []*File{{File: ef, Path: filepath.Join(dir, "e.yaml"), Dir: dir}}, Options{Mode: Live})
	if err != nil || len(rep.Results) != 1 {
		t.Fatal(rep, err)
	}
	return rep.Results[0]
}

// A case past its timeout (the file's, for its cases) has its job cancelled and fails, saying so
// at the timeout's line.
func TestCaseTimeout(t *testing.T) {
	srv := &cancellingServer{cancelled: make(chan struct{})}
	r := runOne(t, srv, "agent: a\ntimeout: 50ms\ncases:\n  - {name: hangs, input: x, live: true}\n")
	if r.Status != Failed || r.JobStatus != string(apiv1.StatusCancelled) || len(r.Failures) != 1 {
		t.Fatalf("result %+v", r)
	}
	if f := r.Failures[0]; f.Kind != "timeout" || f.Line != 2 || f.Col != 1 || f.Message != "the case did not end within its timeout of 50ms: its job was cancelled" {
		t.Errorf("failure %+v", f)
	}
}

// Approvals by tool: a call of a tool the mapping does not answer fails the case at once, at the
// mapping's line, naming the tool and how to answer it.
func TestApprovalsByToolUnanswered(t *testing.T) {
	srv := &cancellingServer{ask: true, cancelled: make(chan struct{})}
	r := runOne(t, srv, "agent: a\ncases:\n  - name: asks\n    input: x\n    live: true\n    approvals: {refund: approve}\n")
	if r.Status != Failed || len(r.Failures) == 0 {
		t.Fatalf("result %+v", r)
	}
	f := r.Failures[0]
	want := "its job asked a person to approve h.notify_team {\"team\":\"billing\"} (requires_approval lists notify_team), which approvals: {refund: approve} does not answer, and oz0 eval has nobody to ask: say how the case answers (approvals: approve, approvals: deny, or by tool: approvals: {notify_team: approve})"
	if f.Kind != "approvals" || f.Line != 6 || f.Col != 5 || !strings.HasPrefix(f.Message, want) {
		t.Errorf("failure %+v", f)
	}
	select {
	case <-srv.cancelled:
	default:
		t.Error("the job was not cancelled")
	}
}
