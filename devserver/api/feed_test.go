package api

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/devserver/store"
)

// message is one server-sent event.
type message struct {
	event, id string
	data      json.RawMessage
}

// feedReader reads a feed as it comes, until the test ends.
type feedReader struct {
	t *testing.T
	c chan message
}

func (a *testAPI) openFeed(query string, header ...string) *feedReader {
	a.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", a.url+"/api/v1/feed"+query, nil)
	req.Header.Set("Authorization", "Bearer "+a.token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		a.t.Fatalf("feed %s: %d %s", query, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	f := &feedReader{t: a.t, c: make(chan message, 100)}
	go func() {
		defer close(f.c)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var m message
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				f.c <- m
				m = message{}
			case strings.HasPrefix(line, "id: "):
				m.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				m.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				m.data = json.RawMessage(line[6:])
			}
		}
	}()
	a.t.Cleanup(cancel)
	return f
}

// next returns the next message, or fails after a generous deadline.
func (f *feedReader) next() message {
	f.t.Helper()
	select {
	case m, ok := <-f.c:
		if !ok {
			f.t.Fatal("the feed ended")
		}
		return m
	case <-time.After(30 * time.Second):
		f.t.Fatal("no message on the feed")
	}
	return message{}
}

// until reads messages until one satisfies ok, and returns it.
func (f *feedReader) until(what string, ok func(message) bool) message {
	f.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case m, open := <-f.c:
			if !open {
				f.t.Fatalf("the feed ended before %s", what)
			}
			if ok(m) {
				return m
			}
		case <-deadline:
			f.t.Fatalf("no %s on the feed", what)
		}
	}
}

func TestFeed(t *testing.T) {
	a := newTestAPI(t)
	ctx := context.Background()
	j, _ := a.client.CreateJob(ctx, apiv1.JobRequest{Agent: "hello", Input: "I was charged twice"})
	a.st.SetStatus(j.ID, store.StatusRunning, "")
	a.st.Append(j.ID, store.EventSay, json.RawMessage(`{"text":"Sorting the ticket. "}`))
	apr, _ := a.st.CreateApproval(store.Approval{Job: j.ID, Agent: "hello", Harness: "hello", Tool: "notify_team", Request: "p1", Arguments: json.RawMessage(`{"team":"billing"}`), Why: "requires_approval"})

	f := a.openFeed("?job=" + j.ID)
	m := f.next()
	var snap apiv1.FeedState
	if m.event != apiv1.FeedSnapshot || json.Unmarshal(m.data, &snap) != nil || len(snap.Jobs) != 1 || snap.Jobs[0].ID != j.ID ||
		len(snap.Approvals) != 1 || snap.Approvals[0].ID != apr.ID {
		t.Fatalf("first message: %s %s", m.event, m.data)
	}

	// The job's events so far, each with its seq as the id and the text `oz0 run` shows.
	texts := map[string]string{}
	event := func(m message) apiv1.FeedEventData {
		t.Helper()
		var d apiv1.FeedEventData
		if m.event != apiv1.FeedEvent || json.Unmarshal(m.data, &d) != nil || m.id == "" || d.Event.Job != j.ID {
			t.Fatalf("not an event of the job: %s %s %s", m.event, m.id, m.data)
		}
		texts[m.id] = d.Text
		return d
	}
	for _, want := range []string{"status", "status", "say"} {
		if d := event(f.next()); d.Event.Type != want {
			t.Fatalf("event %d is %s, want %s", d.Event.Seq, d.Event.Type, want)
		}
	}
	if texts["3"] != "hello: Sorting the ticket." || texts["1"] != "" {
		t.Errorf("texts: %q", texts)
	}

	// Live: an approval answered, another job, the job's events and its end.
	if _, err := a.st.DecideApproval(apr.ID, store.ApprovalApproved, store.ScopeOnce, ""); err != nil {
		t.Fatal(err)
	}
	m = f.next()
	var ap apiv1.Approval
	if m.event != apiv1.FeedApproval || json.Unmarshal(m.data, &ap) != nil || ap.ID != apr.ID || ap.Status != apiv1.ApprovalApproved {
		t.Fatalf("after the answer: %s %s", m.event, m.data)
	}
	other, _ := a.client.CreateJob(ctx, apiv1.JobRequest{Agent: "hello", Input: "another"})
	m = f.next()
	var oj apiv1.Job
	if m.event != apiv1.FeedJob || json.Unmarshal(m.data, &oj) != nil || oj.ID != other.ID || oj.Status != apiv1.StatusQueued {
		t.Fatalf("after another job: %s %s", m.event, m.data)
	}
	a.st.Append(j.ID, store.EventPermissionRequest, json.RawMessage(`{"id":"p1","tool":"notify_team","arguments":{"team":"billing"}}`))
	if d := event(f.next()); d.Text != "\nhello → notify_team {\"team\":\"billing\"}\n" {
		t.Errorf("the request's text ends the say line and is a line: %q", d.Text)
	}
	a.st.Append(j.ID, store.EventModelCall, json.RawMessage(`{"record":"fake","input_tokens":12,"output_tokens":3}`))
	a.st.FinishJob(j.ID, store.StatusSucceeded, "", json.RawMessage(`"done"`))
	var sawEnd bool
	var usage apiv1.Usage
	f.until("the job's end and its usage", func(m message) bool {
		switch m.event {
		case apiv1.FeedEvent:
			if d := event(m); d.Event.Terminal() {
				sawEnd = true
			}
		case apiv1.FeedJob:
			var jj apiv1.Job
			json.Unmarshal(m.data, &jj)
			if jj.ID == j.ID && jj.Status == apiv1.StatusSucceeded {
				usage = jj.Usage
			}
		}
		return sawEnd && usage.ModelCalls == 1
	})
	if usage.InputTokens != 12 || usage.OutputTokens != 3 {
		t.Errorf("usage of the ended job: %+v", usage)
	}
	// The feed goes on after the followed job's end.
	a.st.CreateApproval(store.Approval{Job: other.ID, Agent: "hello", Harness: "hello", Tool: "t", Request: "p1", Arguments: json.RawMessage(`{}`)})
	f.until("an approval after the end", func(m message) bool { return m.event == apiv1.FeedApproval })

	// Resumed after the say (?after= or Last-Event-ID): the next event's text still ends the say line.
	for _, resume := range [][]string{{"?job=" + j.ID + "&after=3"}, {"?job=" + j.ID, "Last-Event-ID", "3"}} {
		f := a.openFeed(resume[0], resume[1:]...)
		if m := f.next(); m.event != apiv1.FeedSnapshot {
			t.Fatalf("resume %v: first %s", resume, m.event)
		}
		m := f.next()
		if m.id != "4" {
			t.Fatalf("resume %v: first event %s", resume, m.id)
		}
		if d := event(m); d.Text != texts["4"] {
			t.Errorf("resume %v: text %q, want %q", resume, d.Text, texts["4"])
		}
	}

	// Without ?job=: the snapshot, filtered like the jobs list, then the changes only.
	f = a.openFeed("?status=succeeded")
	m = f.next()
	snap = apiv1.FeedState{}
	if json.Unmarshal(m.data, &snap) != nil || len(snap.Jobs) != 1 || snap.Jobs[0].ID != j.ID || len(snap.Approvals) != 1 {
		t.Fatalf("filtered snapshot: %s", m.data)
	}

	status, body := a.call("GET", "/api/v1/feed?job=job_aaaaaaaaaaaaaaaaaaaa", "")
	a.wantError("the feed of an unknown job", status, body, 404, apiv1.CodeNotFound)
	status, body = a.call("GET", "/api/v1/feed?status=nope", "")
	a.wantError("a bad status", status, body, 400, apiv1.CodeBadRequest)
	status, body = a.call("GET", "/api/v1/feed?job="+j.ID+"&after=-1", "")
	a.wantError("a bad after", status, body, 400, apiv1.CodeBadRequest)
	status, body = a.call("GET", "/api/v1/feed", "", "Authorization", "")
	a.wantError("no token", status, body, 401, apiv1.CodeUnauthorized)
}

func TestUsage(t *testing.T) {
	a := newTestAPI(t)
	ctx := context.Background()
	j, _ := a.client.CreateJob(ctx, apiv1.JobRequest{Agent: "hello", Input: "hi"})
	a.st.SetStatus(j.ID, store.StatusRunning, "")
	a.st.Append(j.ID, store.EventModelCall, json.RawMessage(`{"record":"fake","model":"fake-model","input_tokens":12,"output_tokens":3,"cost_usd":0.5}`))
	a.st.Append(j.ID, store.EventModelCall, json.RawMessage(`{"record":"fake","model":"fake-model","status":429,"refused":"limits.max_steps"}`))

	var rep apiv1.UsageReport
	status, body := a.call("GET", "/api/v1/usage", "")
	want := apiv1.UsageRow{Agent: "hello", Record: "fake", Model: "fake-model", Usage: apiv1.Usage{ModelCalls: 1, InputTokens: 12, OutputTokens: 3, CostUSD: 0.5}}
	if status != 200 || json.Unmarshal([]byte(body), &rep) != nil || len(rep.Usage) != 1 || rep.Usage[0] != want {
		t.Fatalf("usage by agent: %d %s", status, body)
	}
	if !strings.Contains(body, `"agent":"hello","record":"fake","model":"fake-model","model_calls":1,"input_tokens":12`) {
		t.Errorf("a row's usage is flat: %s", body)
	}
	status, body = a.call("GET", "/api/v1/usage?by=job&job="+j.ID, "")
	want.Job = j.ID
	if status != 200 || json.Unmarshal([]byte(body), &rep) != nil || len(rep.Usage) != 1 || rep.Usage[0] != want {
		t.Fatalf("usage of the job: %d %s", status, body)
	}
	status, body = a.call("GET", "/api/v1/usage?agent=nobody", "")
	if status != 200 || body != "{\"usage\":[]}\n" {
		t.Errorf("no calls: %d %s", status, body)
	}
	status, body = a.call("GET", "/api/v1/usage?by=model", "")
	a.wantError("a bad by", status, body, 400, apiv1.CodeBadRequest)
	status, body = a.call("GET", "/api/v1/usage?job=job_aaaaaaaaaaaaaaaaaaaa", "")
	a.wantError("an unknown job", status, body, 404, apiv1.CodeNotFound)
}

// A Backend without Secrets serves no secrets calls (the dev UI's).
func TestRoutesWithoutSecrets(t *testing.T) {
	a := newTestAPI(t)
	h := Routes(&Backend{Store: a.st, Node: a.node, Inbox: a.inbox})
	for _, c := range []struct{ name, method, path string }{{"list", "GET", "/api/v1/secrets"}, {"set", "PUT", "/api/v1/secrets/X"}, {"delete", "DELETE", "/api/v1/secrets/X"}} {
		t.Run(c.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(c.method, c.path, strings.NewReader(`{"value":"v"}`)))
			if w.Code != 404 {
				t.Errorf("%s %s: %d", c.method, c.path, w.Code)
			}
		})
	}
}
