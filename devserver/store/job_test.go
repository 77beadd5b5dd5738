package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
)

func TestJobID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewJobID()
		if !ValidJobID(id) {
			t.Fatalf("%q", id)
		}
		if seen[id] {
			t.Fatalf("duplicate %s", id)
		}
		seen[id] = true
	}
	for _, bad := range []string{"", "job_", "job_ABCDEFGHIJKLMNOPQRST", "job_abcdefghijklmnopqrs1", "jab_abcdefghijklmnopqrst", "job_abcdefghijklmnopqrstu"} {
		if ValidJobID(bad) {
			t.Errorf("%q valid", bad)
		}
	}
}

func TestCreateAndGetJob(t *testing.T) {
	s := newStore(t)
	before := time.Now()
	j := newJob(t, s)
	if !ValidJobID(j.ID) || j.Status != StatusQueued || j.CreatedAt.Before(before.Add(-time.Second)) {
		t.Fatalf("%+v", j)
	}
	got, err := s.GetJob(j.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := j
	if !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("created_at %v, want %v", got.CreatedAt, want.CreatedAt)
	}
	got.CreatedAt = want.CreatedAt
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("GetJob\n got %+v\nwant %+v", got, want)
	}
	if got.Limits.Timeout != 10*time.Minute || got.Limits.MaxSteps != 10 || string(got.Input) != `"hello"` {
		t.Errorf("%+v", got)
	}
	evs, err := s.Events(j.ID, 0, 0)
	if err != nil || len(evs) != 1 || evs[0].Seq != 1 || evs[0].Type != EventStatus || string(evs[0].Data) != `{"status":"queued"}` {
		t.Fatalf("first event: %+v %v", evs, err)
	}
	if _, err := s.GetJob("job_aaaaaaaaaaaaaaaaaaaa"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown job: %v", err)
	}
	if _, err := s.CreateJob(NewJob{Agent: ""}); !errors.Is(err, ErrInvalid) {
		t.Errorf("no agent: %v", err)
	}
	if _, err := s.CreateJob(NewJob{Agent: "a", Input: json.RawMessage(`{"x":`)}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad input: %v", err)
	}
	j2, err := s.CreateJob(NewJob{Agent: "a"})
	if err != nil || string(j2.Input) != "null" {
		t.Errorf("no input: %s %v", j2.Input, err)
	}
}

func TestJobJSON(t *testing.T) {
	j := Job{ID: "job_x", Agent: "a", Input: json.RawMessage(`{"q":1}`), Status: StatusRunning,
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Limits: Limits{MaxSteps: 3, Timeout: 1500 * time.Millisecond}}
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"job_x","agent":"a","input":{"q":1},"input_text":"","status":"running","created_at":"2026-01-02T03:04:05.000000006Z","limits":{"max_steps":3,"timeout_s":1.5},"usage":{"model_calls":0,"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"cost_usd":0}}`
	if string(b) != want {
		t.Errorf("\n got %s\nwant %s", b, want)
	}
	var back Job
	if err := json.Unmarshal(b, &back); err != nil || back.Limits != j.Limits || !back.CreatedAt.Equal(j.CreatedAt) {
		t.Errorf("%+v %v", back, err)
	}
}

func TestTransitions(t *testing.T) {
	legal := map[Status][]Status{
		StatusQueued:             {StatusRunning, StatusFailed, StatusCancelled, StatusTimedOut, StatusInterrupted},
		StatusRunning:            {StatusWaitingForApproval, StatusSucceeded, StatusFailed, StatusCancelled, StatusTimedOut, StatusInterrupted},
		StatusWaitingForApproval: {StatusRunning, StatusSucceeded, StatusFailed, StatusCancelled, StatusTimedOut, StatusInterrupted},
	}
	for _, from := range apiv1.Statuses {
		for _, to := range append(slices.Clone(apiv1.Statuses), "bogus") {
			want := slices.Contains(legal[from], to)
			if got := CanTransition(from, to); got != want {
				t.Errorf("CanTransition(%s, %s) = %v", from, to, got)
			}
		}
	}
	// Through the store: walk a job to each status and try every next one.
	s := newStore(t)
	paths := map[Status][]Status{
		StatusQueued:             nil,
		StatusRunning:            {StatusRunning},
		StatusWaitingForApproval: {StatusRunning, StatusWaitingForApproval},
	}
	for _, t2 := range apiv1.Statuses {
		if t2.Terminal() {
			paths[t2] = []Status{StatusRunning, t2}
		}
	}
	for from, path := range paths {
		for _, to := range apiv1.Statuses {
			j := newJob(t, s)
			for _, st := range path {
				if err := s.SetStatus(j.ID, st, ""); err != nil {
					t.Fatalf("%s: %v", st, err)
				}
			}
			err := s.SetStatus(j.ID, to, "why")
			if CanTransition(from, to) {
				if err != nil {
					t.Errorf("%s → %s: %v", from, to, err)
				}
				continue
			}
			var te *TransitionError
			if !errors.As(err, &te) || !errors.Is(err, ErrIllegalTransition) || te.From != from || te.To != to {
				t.Errorf("%s → %s: %v, want a TransitionError", from, to, err)
			}
			if errors.Is(err, ErrJobEnded) != from.Terminal() {
				t.Errorf("%s → %s: ErrJobEnded is %v", from, to, errors.Is(err, ErrJobEnded))
			}
			got, _ := s.GetJob(j.ID)
			if got.Status != from {
				t.Errorf("%s → %s refused, yet the job is %s", from, to, got.Status)
			}
		}
	}
	if err := s.SetStatus("job_aaaaaaaaaaaaaaaaaaaa", StatusRunning, ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown job: %v", err)
	}
	if err := s.SetStatus(newJob(t, s).ID, "bogus", ""); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown status: %v", err)
	}
}

func TestStatusLifecycle(t *testing.T) {
	s := newStore(t)
	j := newJob(t, s)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.SetStatus(j.ID, StatusRunning, ""))
	g, _ := s.GetJob(j.ID)
	started := g.StartedAt
	if started.IsZero() || !g.EndedAt.IsZero() {
		t.Fatalf("running: %+v", g)
	}
	must(s.SetStatus(j.ID, StatusWaitingForApproval, "notify_team needs approval"))
	must(s.SetStatus(j.ID, StatusRunning, "approved"))
	g, _ = s.GetJob(j.ID)
	if !g.StartedAt.Equal(started) || g.Reason != "approved" {
		t.Fatalf("StartedAt moved or reason: %+v", g)
	}
	if err := s.FinishJob(j.ID, StatusRunning, "", nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("FinishJob with a live status: %v", err)
	}
	must(s.FinishJob(j.ID, StatusSucceeded, "", json.RawMessage(`"billing: refunded"`)))
	g, _ = s.GetJob(j.ID)
	if g.Status != StatusSucceeded || string(g.Output) != `"billing: refunded"` || g.EndedAt.Before(g.StartedAt) || g.Reason != "" {
		t.Fatalf("finished: %+v", g)
	}
	if err := s.FinishJob(j.ID, StatusFailed, "again", nil); !errors.Is(err, ErrJobEnded) {
		t.Fatalf("a second FinishJob: %v", err)
	}
	if _, err := s.Append(j.ID, EventSay, json.RawMessage(`{"text":"late"}`)); !errors.Is(err, ErrJobEnded) {
		t.Fatalf("Append after the end: %v", err)
	}
	evs, _ := s.Events(j.ID, 0, 0)
	var got []string
	for _, e := range evs {
		got = append(got, string(e.Data))
	}
	want := []string{
		`{"status":"queued"}`,
		`{"status":"running","from":"queued"}`,
		`{"status":"waiting_for_approval","from":"running","reason":"notify_team needs approval"}`,
		`{"status":"running","from":"waiting_for_approval","reason":"approved"}`,
		`{"status":"succeeded","from":"running"}`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("status events\n got %q\nwant %q", got, want)
	}
	if !evs[len(evs)-1].Terminal() || evs[1].Terminal() {
		t.Error("Terminal()")
	}
	// Cancelling a queued job: ended, never started, no output.
	c := newJob(t, s)
	must(s.SetStatus(c.ID, StatusCancelled, "by user"))
	g, _ = s.GetJob(c.ID)
	if !g.StartedAt.IsZero() || g.EndedAt.IsZero() || g.Output != nil || g.Reason != "by user" {
		t.Fatalf("cancelled: %+v", g)
	}
}

func TestConcurrentFinishOneWins(t *testing.T) {
	s := newStore(t)
	for range 20 {
		j := newJob(t, s)
		s.SetStatus(j.ID, StatusRunning, "")
		var wg sync.WaitGroup
		errs := make([]error, 2)
		wg.Go(func() { errs[0] = s.FinishJob(j.ID, StatusSucceeded, "", json.RawMessage(`1`)) })
		wg.Go(func() { errs[1] = s.SetStatus(j.ID, StatusCancelled, "user") })
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("both or neither won: %v", errs)
		}
		for _, err := range errs {
			if err != nil && !errors.Is(err, ErrJobEnded) {
				t.Fatalf("the loser's error: %v", err)
			}
		}
		evs, _ := s.Events(j.ID, 0, 0)
		if len(evs) != 3 {
			t.Fatalf("%d events", len(evs))
		}
	}
}

func TestMarkInterrupted(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	q := newJob(t, s)
	r := newJob(t, s)
	s.SetStatus(r.ID, StatusRunning, "")
	w := newJob(t, s)
	s.SetStatus(w.ID, StatusRunning, "")
	s.SetStatus(w.ID, StatusWaitingForApproval, "")
	d := newJob(t, s)
	s.SetStatus(d.ID, StatusRunning, "")
	s.FinishJob(d.ID, StatusSucceeded, "", json.RawMessage(`"ok"`))
	s.Append(r.ID, EventSay, json.RawMessage(`{"text":"half"}`))
	s.Close()

	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ids, err := s.MarkInterrupted("oz0 dev stopped while the job ran")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []string{q.ID, r.ID, w.ID}) {
		t.Fatalf("interrupted %v", ids)
	}
	for _, id := range ids {
		g, _ := s.GetJob(id)
		if g.Status != StatusInterrupted || g.Reason != "oz0 dev stopped while the job ran" || g.EndedAt.IsZero() {
			t.Errorf("%+v", g)
		}
		evs, _ := s.Events(id, 0, 0)
		if last := evs[len(evs)-1]; !last.Terminal() || !strings.Contains(string(last.Data), `"interrupted"`) {
			t.Errorf("last event %+v", last)
		}
	}
	if g, _ := s.GetJob(d.ID); g.Status != StatusSucceeded {
		t.Errorf("a finished job was touched: %+v", g)
	}
	if ids, err := s.MarkInterrupted("again"); err != nil || len(ids) != 0 {
		t.Fatalf("second MarkInterrupted: %v %v", ids, err)
	}
}

func TestListJobs(t *testing.T) {
	s := newStore(t)
	var all []Job
	for i := range 25 {
		agent := "a"
		if i%3 == 0 {
			agent = "b"
		}
		j, err := s.CreateJob(NewJob{Agent: agent, InputText: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			s.SetStatus(j.ID, StatusRunning, "")
		}
		if i%5 == 0 {
			s.SetStatus(j.ID, StatusCancelled, "")
		}
		all = append(all, j)
	}
	ids := func(js []Job) []string {
		var out []string
		for _, j := range js {
			out = append(out, j.ID)
		}
		return out
	}
	newest := func(pred func(i int) bool) []string {
		var out []string
		for i := len(all) - 1; i >= 0; i-- {
			if pred(i) {
				out = append(out, all[i].ID)
			}
		}
		return out
	}
	got, err := s.ListJobs(ListFilter{})
	if err != nil || !slices.Equal(ids(got), newest(func(int) bool { return true })) {
		t.Fatalf("all: %v %v", ids(got), err)
	}
	// Paging with Before.
	var paged []string
	before := ""
	for {
		page, err := s.ListJobs(ListFilter{Limit: 7, Before: before})
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, ids(page)...)
		if len(page) < 7 {
			break
		}
		before = page[len(page)-1].ID
	}
	if !slices.Equal(paged, newest(func(int) bool { return true })) {
		t.Fatalf("paged %v", paged)
	}
	got, _ = s.ListJobs(ListFilter{Agent: "b"})
	if !slices.Equal(ids(got), newest(func(i int) bool { return i%3 == 0 })) {
		t.Errorf("agent b: %v", ids(got))
	}
	got, _ = s.ListJobs(ListFilter{Status: []Status{StatusCancelled}})
	if !slices.Equal(ids(got), newest(func(i int) bool { return i%5 == 0 })) {
		t.Errorf("cancelled: %v", ids(got))
	}
	got, _ = s.ListJobs(ListFilter{Status: []Status{StatusQueued, StatusRunning}, Agent: "a", Limit: 3})
	if !slices.Equal(ids(got), newest(func(i int) bool { return i%5 != 0 && i%3 != 0 })[:3]) {
		t.Errorf("queued or running of a: %v", ids(got))
	}
	if _, err := s.ListJobs(ListFilter{Before: "job_aaaaaaaaaaaaaaaaaaaa"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown cursor: %v", err)
	}
	if _, err := s.ListJobs(ListFilter{Status: []Status{"done"}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown status: %v", err)
	}
	empty := newStore(t)
	if got, err := empty.ListJobs(ListFilter{}); err != nil || got == nil || len(got) != 0 {
		t.Errorf("empty store: %v %v", got, err)
	}
}

func TestUsageFromModelCalls(t *testing.T) {
	s := newStore(t)
	j := newJob(t, s)
	s.SetStatus(j.ID, StatusRunning, "")
	calls := []string{
		`{"record":"fake","model":"m","status":200,"input_tokens":100,"output_tokens":20,"cache_read_input_tokens":5,"cost_usd":0.25}`,
		`{"record":"fake","model":"m","status":200,"input_tokens":50,"output_tokens":10,"cache_creation_input_tokens":7,"cost_usd":0.5}`,
		`{"record":"fake","model":"m","status":429,"refused":"limits.max_steps"}`,
	}
	s.Append(j.ID, EventModelCall, json.RawMessage(calls[0]))
	s.AppendBatch(j.ID, []NewEvent{{Type: EventModelCall, Data: json.RawMessage(calls[1])}, {Type: EventSay, Data: json.RawMessage(`{}`)}, {Type: EventModelCall, Data: json.RawMessage(calls[2])}})
	g, _ := s.GetJob(j.ID)
	want := Usage{ModelCalls: 2, InputTokens: 150, OutputTokens: 30, CacheReadTokens: 5, CacheCreationTokens: 7, CostUSD: 0.75}
	if g.Usage != want {
		t.Fatalf("usage %+v, want %+v", g.Usage, want)
	}
}

// A job made from another keeps which, and how, in its record and in lists.
func TestJobOrigin(t *testing.T) {
	s := newStore(t)
	first, err := s.CreateJob(NewJob{Agent: "a", InputText: "x"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.CreateJob(NewJob{Agent: "a", InputText: "y", Origin: &Origin{Job: first.ID, How: OriginRunAgain}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetJob(again.ID)
	if err != nil || got.Origin == nil || *got.Origin != (Origin{Job: first.ID, How: OriginRunAgain}) {
		t.Errorf("the job run again: %+v %v", got.Origin, err)
	}
	if got, _ := s.GetJob(first.ID); got.Origin != nil {
		t.Errorf("a job made from none: %+v", got.Origin)
	}
	js, err := s.ListJobs(ListFilter{})
	if err != nil || len(js) != 2 || js[0].Origin == nil || js[0].Origin.Job != first.ID {
		t.Errorf("listed: %+v %v", js, err)
	}
}
