package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/devserver/approvals"
	"github.com/orchestrator-zero/oz0/devserver/node"
	"github.com/orchestrator-zero/oz0/devserver/secrets"
	"github.com/orchestrator-zero/oz0/devserver/store"
)

// fakeNode makes jobs in the real store, as the node does, without running them: a test moves
// them along itself. Agents: "hello" takes text, "strict" refuses every input; closed refuses all.
type fakeNode struct {
	st      *store.Store
	closed  atomic.Bool
	mu      sync.Mutex
	cancels []string
}

func (n *fakeNode) Submit(agent, input string) (store.Job, error) {
	switch {
	case n.closed.Load():
		return store.Job{}, node.ErrClosed
	case agent == "strict":
		return store.Job{}, &node.InputError{Msg: "the input is not JSON; agent strict takes JSON"}
	case agent != "hello":
		return store.Job{}, fmt.Errorf("%w %q; the dev server runs: hello, strict", node.ErrUnknownAgent, agent)
	}
	in, _ := json.Marshal(input)
	return n.st.CreateJob(store.NewJob{Agent: agent, Plugin: "hello", Input: in, InputText: input, ModelRecord: "fake", ModelName: "fake-model",
		Limits: store.Limits{MaxSteps: 10, Timeout: 10 * time.Minute}})
}

// Cancel ends the job at once, as the node does once its session has gone.
func (n *fakeNode) Waiting(string) string { return "" }

func (n *fakeNode) Cancel(id string) bool {
	n.mu.Lock()
	n.cancels = append(n.cancels, id)
	n.mu.Unlock()
	return n.st.FinishJob(id, store.StatusCancelled, "cancelled", nil) == nil
}

// fakeRecorder records and replays as the dev server does, without running anything: a job that
// has not ended is live, one whose input is "unrecorded" was not recorded.
type fakeRecorder struct {
	node       *fakeNode
	recorded   []string
	unrecorded []string // jobs submitted with record false
}

func (r *fakeRecorder) SubmitRecorded(agent, input string, record bool) (store.Job, error) {
	j, err := r.node.Submit(agent, input)
	if err == nil && record {
		r.recorded = append(r.recorded, j.ID)
	} else if err == nil {
		r.unrecorded = append(r.unrecorded, j.ID)
	}
	return j, err
}

func (r *fakeRecorder) recording(id string) (store.Job, error) {
	j, err := r.node.st.GetJob(id)
	switch {
	case err != nil:
		return j, err
	case j.InputText == "unrecorded":
		return j, fmt.Errorf("%w: job %s", ErrNotRecorded, id)
	}
	return j, nil
}

func (r *fakeRecorder) Replay(id string, upstream bool) (store.Job, error) {
	j, err := r.recording(id)
	if err != nil {
		return j, err
	}
	if !j.Status.Terminal() {
		return j, fmt.Errorf("%w: job %s is %s", ErrLive, id, j.Status)
	}
	return r.node.Submit(j.Agent, j.InputText)
}

func (r *fakeRecorder) SubmitAnswered(agent, input string, a apiv1.Answers, record bool) (store.Job, error) {
	if a.Script == "" && len(a.Calls) == 0 {
		return store.Job{}, fmt.Errorf("%w: no calls and no script", ErrBadAnswers)
	}
	return r.SubmitRecorded(agent, input, record)
}

func (r *fakeRecorder) RunAgain(from, agent, input string) (store.Job, error) {
	j, err := r.node.st.GetJob(from)
	if err != nil {
		return j, err
	}
	if agent != "" && agent != j.Agent {
		return store.Job{}, fmt.Errorf("%w: job %s is %s's", ErrOtherAgent, from, j.Agent)
	}
	return r.node.Submit(j.Agent, input)
}

func (r *fakeRecorder) Script(id string) ([]byte, error) {
	if _, err := r.recording(id); err != nil {
		return nil, err
	}
	return []byte("rules: []\n"), nil
}

// fakeSecrets keeps the tenant's secrets in memory.
type fakeSecrets struct {
	mu sync.Mutex
	m  map[string]apiv1.SecretMeta
}

func (f *fakeSecrets) Set(name, value, baseURL string) ([]string, error) {
	if !apiv1.ValidSecretName(name) {
		return nil, fmt.Errorf("%w: secret name %q is not valid", secrets.ErrInvalid, name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[name] = apiv1.SecretMeta{Name: name, SetAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), BaseURL: baseURL}
	return []string{"set " + name}, nil
}

func (f *fakeSecrets) List() ([]apiv1.SecretMeta, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []apiv1.SecretMeta
	for _, m := range f.m {
		out = append(out, m)
	}
	return out, nil
}

func (f *fakeSecrets) Remove(name string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.m[name]; !ok {
		return nil, fmt.Errorf("%w: %s", secrets.ErrNotFound, name)
	}
	delete(f.m, name)
	return []string{"removed " + name}, nil
}

type testAPI struct {
	t      *testing.T
	url    string
	token  string
	st     *store.Store
	node   *fakeNode
	inbox  *approvals.Inbox
	rec    *fakeRecorder
	client *client.Client
	b      *Backend
}

func newTestAPI(t *testing.T) *testAPI {
	t.Helper()
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	a := &testAPI{t: t, token: apiv1.NewToken(), st: st, node: &fakeNode{st: st}, inbox: approvals.New(st)}
	a.rec = &fakeRecorder{node: a.node}
	a.b = &Backend{
		Token: a.token, Store: st, Node: a.node, Inbox: a.inbox, Recorder: a.rec,
		Secrets: &fakeSecrets{m: map[string]apiv1.SecretMeta{}},
		Info:    func() apiv1.Info { return apiv1.Info{Version: "test", Agents: []apiv1.AgentInfo{{Name: "hello"}}} },
		Logger:  slog.New(slog.DiscardHandler),
	}
	srv := httptest.NewServer(Handler(a.b))
	t.Cleanup(srv.Close)
	a.url = srv.URL
	a.client = client.New(apiv1.Context{URL: srv.URL, Token: a.token})
	return a
}

// call makes a request with the token and returns the status and body. Header "Host" sets the
// request's Host.
func (a *testAPI) call(method, path, body string, header ...string) (int, string) {
	a.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.url+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// wantError checks an error answer's status and code.
func (a *testAPI) wantError(what string, status int, body string, wantStatus int, wantCode string) {
	a.t.Helper()
	var e apiv1.ErrorBody
	if status != wantStatus || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != wantCode || e.Error.Message == "" {
		a.t.Errorf("%s: %d %s, want %d with code %s", what, status, body, wantStatus, wantCode)
	}
}

func TestGuard(t *testing.T) {
	a := newTestAPI(t)
	status, body := a.call("GET", "/api/v1/info", "", "Authorization", "")
	a.wantError("no token", status, body, 401, apiv1.CodeUnauthorized)
	status, body = a.call("GET", "/api/v1/info", "", "Authorization", "Bearer oz0t_wrong")
	a.wantError("a wrong token", status, body, 401, apiv1.CodeUnauthorized)
	status, body = a.call("GET", "/api/v1/info", "", "Authorization", a.token)
	a.wantError("a token without its scheme", status, body, 401, apiv1.CodeUnauthorized)
	if status, body = a.call("GET", "/api/v1/info", "", "Authorization", "bearer "+a.token); status != 200 {
		t.Errorf("the scheme in lower case: %d %s", status, body)
	}
	status, body = a.call("GET", "/api/v1/info", "", "Host", "evil.example:80")
	a.wantError("a Host off loopback (DNS rebinding)", status, body, 403, apiv1.CodeForbiddenHost)
	status, body = a.call("GET", "/api/v1/info", "", "Host", "10.0.0.1")
	a.wantError("a Host that is an address off loopback", status, body, 403, apiv1.CodeForbiddenHost)
	if status, body = a.call("GET", "/api/v1/info", "", "Host", "LocalHost:7311"); status != 200 || !strings.Contains(body, `"name":"hello"`) {
		t.Errorf("Host localhost: %d %s", status, body)
	}
	status, body = a.call("POST", "/api/v1/jobs", `{"agent":"hello","input":"hi"}`, "Origin", "http://evil.example")
	a.wantError("a write from another origin", status, body, 403, apiv1.CodeCrossOrigin)
	status, body = a.call("DELETE", "/api/v1/secrets/X", "", "Origin", "http://evil.example")
	a.wantError("a delete from another origin", status, body, 403, apiv1.CodeCrossOrigin)
	if status, body = a.call("GET", "/api/v1/jobs", "", "Origin", "http://evil.example"); status != 200 {
		t.Errorf("a read from another origin (the token guards it): %d %s", status, body)
	}
	if status, body = a.call("POST", "/api/v1/jobs", `{"agent":"hello","input":"hi"}`, "Origin", "http://localhost", "Host", "localhost"); status != 201 {
		t.Errorf("a write from the server's own origin: %d %s", status, body)
	}
	status, body = a.call("GET", "/api/v1/nothing", "")
	a.wantError("no such call", status, body, 404, apiv1.CodeNotFound)
}

// The goroutines of the server, for finding a leak: behind the token, and not among the calls
// the dev UI serves (Routes).
func TestDebugGoroutines(t *testing.T) {
	a := newTestAPI(t)
	status, body := a.call("GET", "/api/v1/debug/goroutines", "")
	if status != 200 || !strings.HasPrefix(body, "goroutine profile: total ") || !strings.Contains(body, "TestDebugGoroutines") {
		t.Errorf("with the token: %d %.200s", status, body)
	}
	status, body = a.call("GET", "/api/v1/debug/goroutines", "", "Authorization", "")
	a.wantError("no token", status, body, 401, apiv1.CodeUnauthorized)
	rec := httptest.NewRecorder()
	Routes(&Backend{}).ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/debug/goroutines", nil))
	if rec.Code != 404 {
		t.Errorf("Routes serves it: %d", rec.Code)
	}
}

func TestJobs(t *testing.T) {
	a := newTestAPI(t)
	ctx := context.Background()
	j, err := a.client.CreateJob(ctx, apiv1.JobRequest{Agent: "hello", Input: "I was charged twice"})
	if err != nil || j.Status != apiv1.StatusQueued || j.InputText != "I was charged twice" || string(j.Input) != `"I was charged twice"` || j.Limits != (apiv1.Limits{MaxSteps: 10, TimeoutS: 600}) {
		t.Fatalf("create: %+v %v", j, err)
	}
	for _, c := range []struct {
		what, body string
		status     int
		code       string
	}{
		{"an unknown agent", `{"agent":"nobody","input":"hi"}`, 404, apiv1.CodeUnknownAgent},
		{"input the agent does not take", `{"agent":"strict","input":"hi"}`, 422, apiv1.CodeBadInput},
		{"a body that is not a job", `{"agent":`, 400, apiv1.CodeBadRequest},
	} {
		t.Run(c.what, func(t *testing.T) {
			status, body := a.call("POST", "/api/v1/jobs", c.body)
			a.wantError(c.what, status, body, c.status, c.code)
		})
	}
	a.node.closed.Store(true)
	status, body := a.call("POST", "/api/v1/jobs", `{"agent":"hello","input":"hi"}`)
	a.wantError("a node shutting down", status, body, 503, apiv1.CodeShuttingDown)
	a.node.closed.Store(false)

	second, _ := a.client.CreateJob(ctx, apiv1.JobRequest{Agent: "hello", Input: "second"})
	if err := a.st.FinishJob(second.ID, store.StatusFailed, "boom", nil); err != nil {
		t.Fatal(err)
	}
	got, err := a.client.Job(ctx, j.ID)
	if err != nil || got.ID != j.ID || got.Agent != "hello" {
		t.Errorf("get: %+v %v", got, err)
	}
	status, body = a.call("GET", "/api/v1/jobs/job_aaaaaaaaaaaaaaaaaaaa", "")
	a.wantError("an unknown job", status, body, 404, apiv1.CodeNotFound)
	if !strings.Contains(body, "oz0 job list") {
		t.Errorf("an unknown job's message does not say where the jobs are: %s", body)
	}

	all, err := a.client.Jobs(ctx, "", "", 0)
	if err != nil || len(all) != 2 || all[0].ID != second.ID {
		t.Errorf("list, newest first: %+v %v", all, err)
	}
	failed, err := a.client.Jobs(ctx, "failed,cancelled", "hello", 10)
	if err != nil || len(failed) != 1 || failed[0].ID != second.ID || failed[0].Reason != "boom" {
		t.Errorf("list failed: %+v %v", failed, err)
	}
	if _, body := a.call("GET", "/api/v1/jobs?agent=nobody", ""); body != "{\"jobs\":[]}\n" {
		t.Errorf("an empty list: %s", body)
	}
	status, body = a.call("GET", "/api/v1/jobs?status=done", "")
	a.wantError("an unknown status", status, body, 400, apiv1.CodeBadRequest)
	status, body = a.call("GET", "/api/v1/jobs?limit=0", "")
	a.wantError("a limit of 0", status, body, 400, apiv1.CodeBadRequest)

	cancelled, err := a.client.Cancel(ctx, j.ID)
	if err != nil || cancelled.Status != apiv1.StatusCancelled || len(a.node.cancels) != 1 {
		t.Errorf("cancel: %+v %v (node cancels %v)", cancelled, err, a.node.cancels)
	}
	status, body = a.call("POST", "/api/v1/jobs/"+j.ID+"/cancel", "")
	a.wantError("cancelling an ended job", status, body, 409, apiv1.CodeEnded)
}

// events reads a job's event stream as it comes, raw, until the server ends it.
func (a *testAPI) events(path string, header ...string) string {
	a.t.Helper()
	status, body := a.call("GET", path, "", header...)
	if status != 200 {
		a.t.Fatalf("GET %s: %d %s", path, status, body)
	}
	return body
}

func TestEventsAndResume(t *testing.T) {
	a := newTestAPI(t)
	j, err := a.client.CreateJob(context.Background(), apiv1.JobRequest{Agent: "hello", Input: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.st.SetStatus(j.ID, store.StatusRunning, ""); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"one", "two <&>"} {
		if _, err := a.st.Append(j.ID, store.EventSay, json.RawMessage(`{"text":"`+text+`"}`)); err != nil {
			t.Fatal(err)
		}
	}

	// A live stream: what was there, then what comes, to the job's end.
	lines := make(chan string)
	go func() {
		defer close(lines)
		req, _ := http.NewRequest("GET", a.url+"/api/v1/jobs/"+j.ID+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+a.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var live []string
	for l := range lines {
		live = append(live, l)
		if strings.Contains(l, `"text":"two <&>"`) {
			// Everything so far was there before the stream began; the end comes live.
			if err := a.st.FinishJob(j.ID, store.StatusSucceeded, "", json.RawMessage(`"done"`)); err != nil {
				t.Fatal(err)
			}
		}
	}
	stream := strings.Join(live, "\n")
	for i, want := range []string{"id: 1\nevent: status\ndata: {\"job\":\"" + j.ID + "\",\"seq\":1,", "id: 4\nevent: say\n", `"data":{"text":"two <&>"}}`, "id: 5\nevent: status\n", "\"status\":\"succeeded\"", "event: end\ndata: {}"} {
		if !strings.Contains(stream, want) {
			t.Errorf("live stream, part %d: no %q in\n%s", i, want, stream)
		}
	}

	// Resume after event 3, with ?after= and with Last-Event-ID: the rest, nothing repeated.
	for _, resume := range [][]string{{"/api/v1/jobs/" + j.ID + "/events?after=3"}, {"/api/v1/jobs/" + j.ID + "/events", "Last-Event-ID", "3"}} {
		body := a.events(resume[0], resume[1:]...)
		if strings.Contains(body, "id: 3\n") || !strings.HasPrefix(body, "id: 4\nevent: say\n") || !strings.HasSuffix(body, "event: end\ndata: {}\n\n") {
			t.Errorf("resume %v:\n%s", resume, body)
		}
	}
	// The client follows the same stream to the terminal event.
	var seqs []int64
	err = a.client.Events(context.Background(), j.ID, 2, func(ev apiv1.Event) error { seqs = append(seqs, ev.Seq); return nil }, nil)
	if err != nil || fmt.Sprint(seqs) != "[3 4 5]" {
		t.Errorf("client.Events after 2: %v %v", seqs, err)
	}

	status, body := a.call("GET", "/api/v1/jobs/"+j.ID+"/events?after=x", "")
	a.wantError("a bad after", status, body, 400, apiv1.CodeBadRequest)
	status, body = a.call("GET", "/api/v1/jobs/job_aaaaaaaaaaaaaaaaaaaa/events", "")
	a.wantError("the events of an unknown job", status, body, 404, apiv1.CodeNotFound)
}

func TestTrace(t *testing.T) {
	a := newTestAPI(t)
	j, _ := a.client.CreateJob(context.Background(), apiv1.JobRequest{Agent: "hello", Input: "hi"})
	a.st.SetStatus(j.ID, store.StatusRunning, "")
	a.st.Append(j.ID, store.EventSay, json.RawMessage(`{"text":"hello"}`))
	a.st.FinishJob(j.ID, store.StatusSucceeded, "", json.RawMessage(`"hello"`))
	var buf bytes.Buffer
	if err := a.client.Trace(context.Background(), j.ID, &buf); err != nil {
		t.Fatal(err)
	}
	job, evs, err := store.LoadTrace(&buf)
	if err != nil || job.ID != j.ID || len(evs) != 4 || evs[2].Type != store.EventSay {
		t.Errorf("trace: %+v %+v %v", job, evs, err)
	}
	status, body := a.call("GET", "/api/v1/jobs/job_aaaaaaaaaaaaaaaaaaaa/trace", "")
	a.wantError("the trace of an unknown job", status, body, 404, apiv1.CodeNotFound)
}

func TestSecrets(t *testing.T) {
	a := newTestAPI(t)
	ctx := context.Background()
	if _, body := a.call("GET", "/api/v1/secrets", ""); body != "{\"secrets\":[]}\n" {
		t.Errorf("no secrets: %s", body)
	}
	// The answer says what the change did to the agents' records.
	if ch, err := a.client.SetSecret(ctx, "ANTHROPIC_API_KEY", "sk-test", "http://127.0.0.1:9"); err != nil || !slices.Equal(ch.Notes, []string{"set ANTHROPIC_API_KEY"}) {
		t.Fatal(ch, err)
	}
	list, err := a.client.Secrets(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "ANTHROPIC_API_KEY" || list[0].BaseURL != "http://127.0.0.1:9" {
		t.Errorf("list: %+v %v", list, err)
	}
	if _, body := a.call("GET", "/api/v1/secrets", ""); strings.Contains(body, "sk-test") {
		t.Errorf("a value in the list: %s", body)
	}
	status, body := a.call("PUT", "/api/v1/secrets/bad-name", `{"value":"x"}`)
	a.wantError("a bad name", status, body, 400, apiv1.CodeBadSecret)
	status, body = a.call("PUT", "/api/v1/secrets/X", `{"value":`)
	a.wantError("a body that is not a secret", status, body, 400, apiv1.CodeBadRequest)
	if ch, err := a.client.RemoveSecret(ctx, "ANTHROPIC_API_KEY"); err != nil || !slices.Equal(ch.Notes, []string{"removed ANTHROPIC_API_KEY"}) {
		t.Fatal(ch, err)
	}
	status, body = a.call("DELETE", "/api/v1/secrets/ANTHROPIC_API_KEY", "")
	a.wantError("removing what is not there", status, body, 404, apiv1.CodeBadSecret)
}

func TestApprovals(t *testing.T) {
	a := newTestAPI(t)
	ctx := context.Background()
	j, _ := a.client.CreateJob(ctx, apiv1.JobRequest{Agent: "hello", Input: "hi"})
	a.st.SetStatus(j.ID, store.StatusRunning, "")
	sub, err := a.st.Subscribe(ctx, j.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	// A call waits in the inbox, its job waiting for approval, until the API answers it.
	ask := func(tool string) (<-chan approvals.Answer, string) {
		t.Helper()
		answer := make(chan approvals.Answer, 1)
		go func() {
			ans, err := a.inbox.Ask(ctx, approvals.Call{Job: j.ID, Agent: "hello", Harness: "h", Tool: tool, Request: "p1", Arguments: json.RawMessage(`{"team":"billing"}`), Why: "requires_approval"})
			if err != nil {
				t.Error(err)
			}
			answer <- ans
		}()
		for ev := range sub.C {
			var st apiv1.StatusData
			if ev.Type == store.EventStatus && json.Unmarshal(ev.Data, &st) == nil && st.Status == apiv1.StatusWaitingForApproval {
				break
			}
		}
		list, err := a.client.Approvals(ctx, false)
		if err != nil || len(list) != 1 || list[0].Tool != tool {
			t.Fatalf("pending approvals: %+v %v", list, err)
		}
		return answer, list[0].ID
	}

	answer, id := ask("notify_team")
	got, err := a.client.Job(ctx, j.ID)
	if err != nil || got.Status != apiv1.StatusWaitingForApproval {
		t.Errorf("the job while it waits: %+v %v", got, err)
	}
	status, body := a.call("GET", "/api/v1/approvals/"+id, "")
	var ap apiv1.Approval
	if status != 200 || json.Unmarshal([]byte(body), &ap) != nil || ap.Target() != "h.notify_team" || ap.Status != apiv1.ApprovalPending || string(ap.Arguments) != `{"team":"billing"}` {
		t.Errorf("get approval: %d %s", status, body)
	}
	status, body = a.call("POST", "/api/v1/approvals/"+id+"/deny", `{}`)
	a.wantError("a denial without a reason", status, body, 400, apiv1.CodeBadRequest)
	status, body = a.call("POST", "/api/v1/approvals/"+id+"/approve", `{"scope":"never"}`)
	a.wantError("an unknown scope", status, body, 400, apiv1.CodeBadRequest)
	denied, err := a.client.Deny(ctx, id, "billing hears from a person")
	if err != nil || denied.Status != apiv1.ApprovalDenied || denied.Reason != "billing hears from a person" {
		t.Errorf("deny: %+v %v", denied, err)
	}
	if ans := <-answer; ans.Allow || ans.Reason != "billing hears from a person" {
		t.Errorf("the call got %+v", ans)
	}
	status, body = a.call("POST", "/api/v1/approvals/"+id+"/approve", ``)
	a.wantError("answering an answered one", status, body, 409, apiv1.CodeDecided)

	answer, id = ask("lookup_order")
	status, body = a.call("POST", "/api/v1/approvals/"+id+"/approve", `{"scope":"always"}`)
	var approved apiv1.ApproveResponse
	if status != 200 || json.Unmarshal([]byte(body), &approved) != nil || approved.Rule == nil || approved.Rule.Target != "h.lookup_order" || approved.Approval.Scope != "always" {
		t.Fatalf("approve always: %d %s", status, body)
	}
	if ans := <-answer; !ans.Allow {
		t.Errorf("the call got %+v", ans)
	}
	rules, err := a.client.Rules(ctx)
	if err != nil || len(rules) != 1 || rules[0].ID != approved.Rule.ID || rules[0].Approval != id {
		t.Errorf("rules: %+v %v", rules, err)
	}
	all, err := a.client.Approvals(ctx, true)
	if err != nil || len(all) != 2 {
		t.Errorf("all approvals: %+v %v", all, err)
	}
	if pending, _ := a.client.Approvals(ctx, false); len(pending) != 0 {
		t.Errorf("pending after both answered: %+v", pending)
	}
	revoked, err := a.client.RevokeRule(ctx, "h.lookup_order")
	if err != nil || revoked.ID != approved.Rule.ID {
		t.Errorf("revoke by target: %+v %v", revoked, err)
	}
	status, body = a.call("DELETE", "/api/v1/approval-rules/"+approved.Rule.ID, "")
	a.wantError("revoking a revoked rule", status, body, 404, apiv1.CodeNotFound)
	status, body = a.call("GET", "/api/v1/approvals/apr_nothing", "")
	a.wantError("an unknown approval", status, body, 404, apiv1.CodeNotFound)
}

// The wire types say on the wire what the store's records said before they existed: a client of
// an older oz0 reads a newer server's answers, and scripts that pin --json output keep working.
func TestWireShapeIsTheStoreShape(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 0, 0, 123456789, time.UTC)
	job := store.Job{ID: "job_x", Agent: "a", Plugin: "p", Input: json.RawMessage(`{"order":42}`), InputText: `{"order": 42}`,
		ModelRecord: "fake", ModelName: "m", Status: store.StatusFailed, Reason: "why", Output: json.RawMessage(`"out"`),
		CreatedAt: at, StartedAt: at.Add(time.Second), EndedAt: at.Add(2 * time.Second),
		Limits: store.Limits{MaxSteps: 10, Timeout: 1500 * time.Millisecond},
		Usage:  store.Usage{ModelCalls: 1, InputTokens: 2, OutputTokens: 3, CacheReadTokens: 4, CacheCreationTokens: 5, CostUSD: 0.5}}
	fresh := store.Job{ID: "job_y", Agent: "a", Status: store.StatusQueued, CreatedAt: at}
	appr := store.Approval{ID: "apr_x", Job: "job_x", Agent: "a", Harness: "h", Tool: "t", Request: "p1", Arguments: json.RawMessage(`{}`),
		Why: "w", Status: store.ApprovalApproved, Scope: "always", CreatedAt: at, DecidedAt: at}
	rule := store.ApprovalRule{ID: "rule_x", Target: "h.t", Approval: "apr_x", CreatedAt: at}
	ev := store.Event{Job: "job_x", Seq: 3, Time: at, Type: store.EventSay, Data: json.RawMessage(`{"text":"<hi>"}`)}
	for _, c := range []struct {
		what        string
		store, wire any
	}{
		{"job", job, wireJob(job)},
		{"a fresh job", fresh, wireJob(fresh)},
		{"approval", appr, wireApproval(appr)},
		{"rule", rule, wireRule(rule)},
		{"event", ev, wireEvent(ev)},
	} {
		t.Run(c.what, func(t *testing.T) {
			want, _ := json.Marshal(c.store)
			got, _ := json.Marshal(c.wire)
			if !bytes.Equal(got, want) {
				t.Errorf("%s:\n wire  %s\n store %s", c.what, got, want)
			}
		})
	}
	if got, want := wireEvent(ev).AppendJSON(nil), mustMarshal(ev); !bytes.Equal(got, want) {
		t.Errorf("event on the live stream:\n %s\n %s", got, want)
	}
	if apiv1.MaxInput > store.MaxData {
		t.Errorf("the API takes inputs of %d bytes, the store %d", apiv1.MaxInput, store.MaxData)
	}
}

// mustMarshal is json.Marshal without HTML escaping, as the store writes event data.
func mustMarshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func TestRecordAndReplay(t *testing.T) {
	a := newTestAPI(t)
	if st, body := a.call("POST", "/api/v1/jobs", `{"agent":"hello","input":"hi","record":true}`); st != 201 || len(a.rec.recorded) != 1 || !strings.Contains(body, a.rec.recorded[0]) {
		t.Fatalf("a recorded job: %d %s", st, body)
	}
	// A job answered from a script or a recording is the recorder's; answers it cannot use are a 400.
	if st, body := a.call("POST", "/api/v1/jobs", `{"agent":"hello","input":"hi","answers":{"script":"rules: []"}}`); st != 201 || len(a.rec.unrecorded) != 1 || !strings.Contains(body, a.rec.unrecorded[0]) {
		t.Fatalf("answered: %d %s", st, body)
	}
	if st, body := a.call("POST", "/api/v1/jobs", `{"agent":"hello","input":"hi","answers":{}}`); st != 400 || !strings.Contains(body, "no calls and no script") {
		t.Fatalf("bad answers: %d %s", st, body)
	}
	a.rec.unrecorded = nil
	if st, body := a.call("POST", "/api/v1/jobs", `{"agent":"hello","input":"hi","record":false}`); st != 201 || len(a.rec.unrecorded) != 1 || !strings.Contains(body, a.rec.unrecorded[0]) {
		t.Fatalf("a job told to keep nothing: %d %s", st, body)
	}
	live := a.rec.recorded[0]
	for _, tc := range []struct {
		name       string
		path, body string
		status     int
		code       string
	}{
		{"a live job", "/api/v1/jobs/" + live + "/replay", "", 409, apiv1.CodeLive},
		{"an unknown job", "/api/v1/jobs/job_nope/replay", `{"upstream":true}`, 404, apiv1.CodeNotFound},
		{"a body that does not parse", "/api/v1/jobs/" + live + "/replay", `{"upstream":`, 400, apiv1.CodeBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, body := a.call("POST", tc.path, tc.body)
			var e apiv1.ErrorBody
			if st != tc.status || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != tc.code {
				t.Errorf("POST %s %s: %d %s, want %d %s", tc.path, tc.body, st, body, tc.status, tc.code)
			}
		})
	}
	a.st.SetStatus(live, store.StatusRunning, "")
	a.st.FinishJob(live, store.StatusSucceeded, "", json.RawMessage(`"ok"`))
	j, err := a.client.Replay(t.Context(), live, false)
	if err != nil || j.Agent != "hello" || j.InputText != "hi" || j.ID == live {
		t.Fatalf("a replay: %+v %v", j, err)
	}
	if data, err := a.client.Script(t.Context(), live); err != nil || string(data) != "rules: []\n" {
		t.Errorf("the script: %q %v", data, err)
	}
	un, _ := a.node.Submit("hello", "unrecorded")
	a.st.FinishJob(un.ID, store.StatusCancelled, "cancelled", nil)
	for _, call := range []func() error{
		func() error { _, err := a.client.Replay(t.Context(), un.ID, false); return err },
		func() error { _, err := a.client.Script(t.Context(), un.ID); return err },
	} {
		var apiErr *client.APIError
		if err := call(); !errors.As(err, &apiErr) || apiErr.Status != 409 || apiErr.Code != apiv1.CodeNotRecorded {
			t.Errorf("a job that was not recorded: %v", err)
		}
	}
}
