package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/iostreams"
)

// fakeDevServer is the part of the control API that oz0 run uses, for one job that waits for an
// approval: its stream stops at waiting_for_approval until the approval is answered, then goes on
// with the answer.
type fakeDevServer struct {
	*httptest.Server
	mu       sync.Mutex
	answered chan apiv1.DenyRequest
	onDeny   func()   // called as a denial arrives, before it is answered
	answers  []string // "approve SCOPE" or "deny REASON"
	cancels  int
}

func newFakeDevServer(t *testing.T) *fakeDevServer {
	fs := &fakeDevServer{answered: make(chan apiv1.DenyRequest, 1)}
	job := apiv1.Job{ID: "job_a", Agent: "acme-triage", Status: apiv1.StatusQueued, ModelRecord: "fake", ModelName: "fake-model"}
	approval := apiv1.Approval{ID: "apr_1", Job: "job_a", Harness: "acme-triage", Tool: "notify_team", Arguments: json.RawMessage(`{"team":"billing"}`), Why: "requires_approval", Status: apiv1.ApprovalPending}
	other := approval
	other.ID, other.Job = "apr_2", "job_other"
	mux := http.NewServeMux()
	writeJSON := func(w http.ResponseWriter, v any) { json.NewEncoder(w).Encode(v) }
	mux.HandleFunc("POST /api/v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		writeJSON(w, job)
	})
	mux.HandleFunc("GET /api/v1/approvals", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, apiv1.ApprovalList{Approvals: []apiv1.Approval{other, approval}})
	})
	mux.HandleFunc("POST /api/v1/approvals/apr_1/deny", func(w http.ResponseWriter, r *http.Request) {
		var body apiv1.DenyRequest
		json.NewDecoder(r.Body).Decode(&body)
		fs.mu.Lock()
		fs.answers = append(fs.answers, "deny "+body.Reason)
		onDeny := fs.onDeny
		fs.mu.Unlock()
		if onDeny != nil {
			onDeny()
		}
		a := approval
		a.Status, a.Reason = apiv1.ApprovalDenied, body.Reason
		writeJSON(w, apiv1.DenyResponse{Approval: a})
		fs.answered <- body
	})
	mux.HandleFunc("POST /api/v1/jobs/job_a/cancel", func(w http.ResponseWriter, r *http.Request) {
		fs.mu.Lock()
		fs.cancels++
		fs.mu.Unlock()
		writeJSON(w, job)
	})
	mux.HandleFunc("GET /api/v1/jobs/job_a/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		seq := 0
		send := func(typ, data string) {
			seq++
			ev := apiv1.Event{Job: "job_a", Seq: int64(seq), Type: typ, Data: json.RawMessage(data)}
			fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", seq, typ, ev.AppendJSON(nil))
			w.(http.Flusher).Flush()
		}
		send(apiv1.EventStatus, `{"status":"running","from":"queued"}`)
		send(apiv1.EventSay, `{"text":"Sorting the ticket."}`)
		send(apiv1.EventPermissionRequest, `{"id":"p1","tool":"notify_team","arguments":{"team":"billing"}}`)
		send(apiv1.EventStatus, `{"status":"waiting_for_approval","from":"running","reason":"notify_team needs a person"}`)
		var answer apiv1.DenyRequest
		select {
		case answer = <-fs.answered:
		case <-r.Context().Done():
			return
		}
		reason, _ := json.Marshal(answer.Reason)
		send(apiv1.EventPermissionDecision, `{"id":"p1","tool":"notify_team","decision":"deny","reason":`+string(reason)+`,"by":"person"}`)
		send(apiv1.EventStatus, `{"status":"running","from":"waiting_for_approval"}`)
		send(apiv1.EventResult, `{"output":"billing: not told"}`)
		send(apiv1.EventStatus, `{"status":"succeeded","from":"running"}`)
		fmt.Fprint(w, "event: end\ndata: {}\n\n")
	})
	fs.Server = httptest.NewServer(mux)
	t.Cleanup(fs.Close)
	return fs
}

func (fs *fakeDevServer) context() string { return fs.URL + "#" + apiv1.NewToken() }

// On a terminal, oz0 run offers to answer the job's waiting approval inline; a denial goes to
// the dev server with its reason, and the stream goes on with the answer.
func TestRunAnswersAWaitingApprovalInline(t *testing.T) {
	fs := newFakeDevServer(t)
	p := &testPrompter{}
	p.approval.choice, p.approval.reason, p.approval.ok = "deny", "billing hears from a person", true
	ios, _, out, errOut := iostreams.Test()
	ios.SetTTY(true, true)
	f := &cmdutil.Factory{IOStreams: ios, Version: "test", Getwd: os.Getwd, Prompter: p,
		Getenv: func(k string) string { return map[string]string{apiv1.ContextEnv: fs.context()}[k] }}
	if code := execute(f, []string{"run", "acme-triage", "I was charged twice"}); code != cmdutil.ExitOK {
		t.Fatalf("exit %d\nstderr: %s", code, errOut)
	}
	want := `acme-triage: Sorting the ticket.
acme-triage → notify_team {"team":"billing"}
acme-triage ✗ notify_team refused by a person: billing hears from a person
billing: not told
`
	if out.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, want)
	}
	if len(p.asked) != 1 || p.asked[0] != `acme-triage.notify_team {"team":"billing"} — requires_approval` {
		t.Errorf("asked %q; want only the job's own approval", p.asked)
	}
	if got := strings.Join(fs.answers, "; "); got != "deny billing hears from a person" {
		t.Errorf("the dev server got %q", got)
	}
	if !strings.Contains(errOut.String(), "oz0: waiting for approval: notify_team needs a person") {
		t.Errorf("stderr: %s", errOut)
	}
}

// Backing out of the inline form leaves the approval in the inbox, and says so.
func TestRunLeavesAnApprovalInTheInbox(t *testing.T) {
	fs := newFakeDevServer(t)
	p := &testPrompter{} // backs out: ok is false
	ios, _, _, errOut := iostreams.Test()
	c := client.New(apiv1.Context{URL: fs.URL, Token: apiv1.NewToken()})
	answerInline(context.Background(), context.Background(), &runOptions{IO: ios, Prompter: p}, c, "job_a")
	if !strings.Contains(errOut.String(), "oz0: left apr_1 in the inbox") || len(fs.answers) != 0 {
		t.Errorf("answers %q, stderr: %s", fs.answers, errOut)
	}
}

// An answer given inline is sent to its end even when the job moves on meanwhile (the answer
// itself lets it) and the form is closed: no "context canceled" after the answer.
func TestRunInlineAnswerOutlivesItsForm(t *testing.T) {
	fs := newFakeDevServer(t)
	form, closeForm := context.WithCancel(context.Background())
	fs.onDeny = closeForm // the job went on at once: the stream closes the form
	p := &testPrompter{}
	p.approval.choice, p.approval.reason, p.approval.ok = "deny", "no", true
	ios, _, _, errOut := iostreams.Test()
	c := client.New(apiv1.Context{URL: fs.URL, Token: apiv1.NewToken()})
	answerInline(form, context.Background(), &runOptions{IO: ios, Prompter: p}, c, "job_a")
	if errOut.Len() != 0 || len(fs.answers) != 1 {
		t.Errorf("answers %q, stderr: %s", fs.answers, errOut)
	}
}

// Ctrl-C cancels the job; on a terminal, only once the person confirms, and with the stream's
// open line ended before the question. SIGTERM (a program's: timeout) cancels without asking.
// Signals after the dev server has taken the cancel ask and send nothing more.
func TestRunCtrlCAsksBeforeCancelling(t *testing.T) {
	fs := newFakeDevServer(t)
	c := client.New(apiv1.Context{URL: fs.URL, Token: apiv1.NewToken()})
	for _, tc := range []struct {
		name         string
		sigs         []os.Signal
		tty, confirm bool
		cancels      int
		asked        int
	}{
		{name: "not a terminal", sigs: []os.Signal{syscall.SIGINT}, cancels: 1},
		{name: "terminal declined", sigs: []os.Signal{syscall.SIGINT}, tty: true, cancels: 0, asked: 1},
		{name: "terminal confirmed", sigs: []os.Signal{syscall.SIGINT}, tty: true, confirm: true, cancels: 1, asked: 1},
		{name: "SIGTERM on a terminal", sigs: []os.Signal{syscall.SIGTERM}, tty: true, cancels: 1},
		{name: "signals after the cancel", sigs: []os.Signal{syscall.SIGTERM, syscall.SIGTERM, syscall.SIGINT}, tty: true, cancels: 1},
		{name: "declined twice", sigs: []os.Signal{syscall.SIGINT, syscall.SIGINT}, tty: true, cancels: 0, asked: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs.cancels = 0
			p := &testPrompter{confirm: tc.confirm}
			ios, _, _, _ := iostreams.Test()
			ios.SetTTY(tc.tty, tc.tty)
			sigs := make(chan os.Signal, len(tc.sigs))
			for _, s := range tc.sigs {
				sigs <- s
			}
			close(sigs)
			lineClosed := 0
			closeLine := func() {
				if lineClosed != len(p.asked) {
					t.Error("the stream's line was not ended before the question")
				}
				lineClosed++
			}
			cancelOnSignal(context.Background(), &runOptions{IO: ios, Prompter: p}, c, "job_a", sigs, nil, closeLine, &inlineAnswer{})
			if fs.cancels != tc.cancels || len(p.asked) != tc.asked || lineClosed != tc.asked {
				t.Errorf("%d cancels, asked %q, line ended %d times", fs.cancels, p.asked, lineClosed)
			}
		})
	}
}
