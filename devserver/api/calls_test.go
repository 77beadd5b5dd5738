package api

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/devserver/store"
)

// A job's model calls: each with its meter, the kept exchange (masked by the store) and the
// conversation read from it; one by its event; a call not kept has neither; the diff of two
// calls' requests, by event or by number, of the same job or another; what cannot be is refused.
func TestCalls(t *testing.T) {
	a := newTestAPI(t)
	a.st.SetMasker(func(b []byte) []byte { return []byte(strings.ReplaceAll(string(b), "hunter2", "***")) })
	ctx := context.Background()
	j, err := a.client.CreateJob(ctx, apiv1.JobRequest{Agent: "hello", Input: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	exchange := func(system string) json.RawMessage {
		req, _ := json.Marshal(map[string]any{"model": "m", "system": system, "messages": []any{map[string]any{"role": "user", "content": "my password is hunter2"}}})
		b, _ := json.Marshal(map[string]any{"method": "POST", "path": "/anthropic/v1/messages", "request": string(req), "status": 200,
			"body": `{"type":"message","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn"}`})
		return b
	}
	meter := json.RawMessage(`{"record":"fake","model":"m","status":200,"input_tokens":3,"output_tokens":1}`)
	evs, err := a.st.AppendBatchWithExchanges(j.ID, []store.NewEvent{
		{Type: store.EventModelCall, Data: meter}, {Type: store.EventSay, Data: json.RawMessage(`{"text":"x"}`)},
		{Type: store.EventModelCall, Data: meter}, {Type: store.EventModelCall, Data: meter},
	}, []json.RawMessage{exchange("You sort tickets."), nil, exchange("You sort tickets for a help desk."), nil})
	if err != nil {
		t.Fatal(err)
	}
	st, body := a.call("GET", "/api/v1/jobs/"+j.ID+"/calls", "")
	var cs apiv1.Calls
	if err := json.Unmarshal([]byte(body), &cs); st != 200 || err != nil || len(cs.Calls) != 3 {
		t.Fatalf("%d %s", st, body)
	}
	if strings.Contains(body, "hunter2") || !strings.Contains(body, "my password is ***") {
		t.Errorf("the kept exchange is not masked: %s", body)
	}
	c1, c2, c3 := cs.Calls[0], cs.Calls[1], cs.Calls[2]
	if c1.N != 1 || c1.Seq != evs[0].Seq || c1.Conversation == nil || c1.Conversation.System != "You sort tickets." ||
		c1.Conversation.Answer.Blocks[0].Text != "ok" || c2.N != 2 || c2.Seq != evs[2].Seq || c3.Exchange != nil || c3.Conversation != nil || string(c3.Meter) != string(meter) {
		t.Errorf("the calls: %s", body)
	}
	if st, body := a.call("GET", fmt.Sprintf("/api/v1/jobs/%s/calls/%d", j.ID, c2.Seq), ""); st != 200 || !strings.Contains(body, `"n":2`) || !strings.Contains(body, "help desk") {
		t.Errorf("one call: %d %s", st, body)
	}
	for _, q := range []string{fmt.Sprintf("seq=%d", c1.Seq), "n=1", "job=" + j.ID + "&n=1"} {
		st, body := a.call("GET", fmt.Sprintf("/api/v1/jobs/%s/calls/%d/diff?%s", j.ID, c2.Seq, q), "")
		var d apiv1.CallDiff
		if err := json.Unmarshal([]byte(body), &d); st != 200 || err != nil || d.Same || d.From.N != 1 || d.To.N != 2 ||
			strings.Join(d.Lines, "\n") != "  system:\n    - \"You sort tickets.\"\n    + \"You sort tickets for a help desk.\"" {
			t.Errorf("diff ?%s: %d %s", q, st, body)
		}
	}
	if st, body := a.call("GET", fmt.Sprintf("/api/v1/jobs/%s/calls/%d/diff?n=1", j.ID, c1.Seq), ""); st != 200 || !strings.Contains(body, `"same":true`) {
		t.Errorf("a call against itself: %d %s", st, body)
	}
	for _, tc := range []struct {
		name   string
		path   string
		status int
		code   string
	}{
		{"a say is not a call", fmt.Sprintf("/api/v1/jobs/%s/calls/%d", j.ID, evs[1].Seq), 404, apiv1.CodeNotFound}, // a say
		{"a sequence that is not a number", "/api/v1/jobs/" + j.ID + "/calls/x", 400, apiv1.CodeBadRequest},
		{"an unknown job", "/api/v1/jobs/job_aaaaaaaaaaaaaaaaaaaa/calls", 404, apiv1.CodeNotFound},
		{"a call not kept", fmt.Sprintf("/api/v1/jobs/%s/calls/%d/diff?n=3", j.ID, c1.Seq), 409, apiv1.CodeNotRecorded}, // not kept
		{"no such diff", fmt.Sprintf("/api/v1/jobs/%s/calls/%d/diff?n=9", j.ID, c1.Seq), 404, apiv1.CodeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if st, body := a.call("GET", tc.path, ""); st != tc.status || !strings.Contains(body, `"code":"`+tc.code+`"`) {
				t.Errorf("GET %s: %d %s, want %d %s", tc.path, st, body, tc.status, tc.code)
			}
		})
	}
}

// A secret a kept request escapes ("hunter\u0032"), which the store's masking of the bytes does
// not find, is masked in all the API shows decoded: the conversation, the exchange (which the UI's
// raw view decodes to indent it) and the diff of two calls.
func TestCallsMaskAnEscapedSecret(t *testing.T) {
	a := newTestAPI(t)
	a.st.SetMasker(func(b []byte) []byte { return []byte(strings.ReplaceAll(string(b), "hunter2", "***")) })
	j, err := a.client.CreateJob(context.Background(), apiv1.JobRequest{Agent: "hello", Input: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	exchange := func(system string) json.RawMessage {
		req := `{"model":"m","system":"` + system + ` hunter\u0032","messages":[{"role":"user","content":"my password is hunter\u0032"}]}`
		b, _ := json.Marshal(map[string]any{"method": "POST", "path": "/anthropic/v1/messages", "request": req, "status": 200,
			"body": `{"type":"message","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn"}`})
		return b
	}
	meter := json.RawMessage(`{"record":"fake","model":"m","status":200,"input_tokens":3,"output_tokens":1}`)
	if _, err := a.st.AppendBatchWithExchanges(j.ID, []store.NewEvent{{Type: store.EventModelCall, Data: meter}, {Type: store.EventModelCall, Data: meter}},
		[]json.RawMessage{exchange("You sort tickets."), exchange("You sort tickets for a help desk.")}); err != nil {
		t.Fatal(err)
	}
	st, body := a.call("GET", "/api/v1/jobs/"+j.ID+"/calls", "")
	var cs apiv1.Calls
	if err := json.Unmarshal([]byte(body), &cs); st != 200 || err != nil || len(cs.Calls) != 2 {
		t.Fatalf("%d %s", st, body)
	}
	for _, c := range cs.Calls {
		var ex struct{ Request string }
		json.Unmarshal(c.Exchange, &ex)
		var decoded any
		json.Unmarshal([]byte(ex.Request), &decoded) // as the raw view does
		conv, _ := json.Marshal(c.Conversation)
		if shown := fmt.Sprint(decoded) + string(conv); strings.Contains(shown, "hunter2") || !strings.Contains(shown, "my password is ***") {
			t.Errorf("call %d shows: %s", c.N, shown)
		}
	}
	st, body = a.call("GET", fmt.Sprintf("/api/v1/jobs/%s/calls/%d/diff?n=1", j.ID, cs.Calls[1].Seq), "")
	if st != 200 || strings.Contains(body, "hunter2") || !strings.Contains(body, `You sort tickets. ***`) {
		t.Errorf("the diff: %d %s", st, body)
	}
}
