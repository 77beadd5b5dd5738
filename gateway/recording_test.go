package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// replayFunc is a Replay that is a function.
type replayFunc func(method, path string, body []byte) (*Exchange, bool, string)

func (f replayFunc) Answer(method, path string, body []byte) (*Exchange, bool, string) {
	return f(method, path, body)
}

func (e *env) issueGrant(g Grant) string {
	g.Record = e.record
	return e.keys.Issue(g)
}

// A recorded call keeps the body its client sent and the answer as the client got it: a stream
// write by write, OpenAI's usage chunk that the gateway asked for left out. No key is in it.
func TestRecording(t *testing.T) {
	e := newEnv(t, helloScript)
	key := e.issueGrant(Grant{Job: "job_rec", Agent: "a", Recording: true})
	whole := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), anthBody)
	streamBody := `{"model":"fake-model","stream":true,"messages":[{"role":"user","content":"hello"}]}`
	streamed := do(t, "POST", e.openaiURL()+"/chat/completions", openaiHeaders(key), streamBody)
	refused := do(t, "POST", e.anthropicURL()+"/v1/messages", map[string]string{"x-api-key": key, "anthropic-version": "2023-06-01", "Oz0-Job": "job_other"}, anthBody)
	if whole.status != 200 || streamed.status != 200 || refused.status != 403 {
		t.Fatalf("statuses %d %d %d", whole.status, streamed.status, refused.status)
	}
	e.gw.Flush()
	calls := e.meter.Job("job_rec")
	if len(calls) != 3 {
		t.Fatalf("%d calls metered", len(calls))
	}
	if calls[2].Exchange != nil {
		t.Errorf("a call the gateway refused itself was kept: %+v", calls[2].Exchange)
	}
	w := calls[0].Exchange
	if w == nil || w.Method != "POST" || w.Path != "/anthropic/v1/messages" || w.Request != anthBody || w.Status != 200 ||
		w.Streamed || w.Body != string(whole.body) || !strings.HasPrefix(w.ContentType, "application/json") {
		t.Fatalf("the whole answer's exchange: %+v", w)
	}
	s := calls[1].Exchange
	if s == nil || !s.Streamed || s.Request != streamBody || s.Body != "" || len(s.Chunks) == 0 || !strings.HasPrefix(s.ContentType, "text/event-stream") {
		t.Fatalf("the stream's exchange: %+v", s)
	}
	var joined strings.Builder
	last := 0.0
	for _, ch := range s.Chunks {
		joined.WriteString(ch.Data)
		if ch.AtMS < last {
			t.Errorf("chunk times go back: %v", s.Chunks)
		}
		last = ch.AtMS
	}
	if joined.String() != string(streamed.body) {
		t.Errorf("the chunks are not what the client got:\n%s\n---\n%s", joined.String(), streamed.body)
	}
	if strings.Contains(joined.String(), `"choices":[]`) {
		t.Errorf("the usage chunk the gateway asked for is in the recording")
	}
	// ...but the tokens it said are: the call was metered with them, and so is its replay.
	for i, c := range calls[:2] {
		if ex := c.Exchange; ex.Usage == nil || *ex.Usage != c.Usage || c.Usage.OutputTokens == 0 {
			t.Errorf("call %d: the exchange's usage %+v, metered %+v", i, ex.Usage, c.Usage)
		}
	}
	for _, c := range calls {
		if c.Exchange != nil && (strings.Contains(c.Exchange.Request+c.Exchange.Body, key) || strings.Contains(c.Exchange.Request+c.Exchange.Body, tenantKey)) {
			t.Errorf("a key is in an exchange")
		}
	}
}

// An upstream that echoes the tenant key has it masked in the recording, as for the client.
func TestRecordingMasksTheTenantKey(t *testing.T) {
	e := newEnv(t, helloScript, withUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		w.Write([]byte(`{"type":"error","error":{"type":"authentication_error","message":"bad key ` + r.Header.Get("x-api-key") + `"}}`))
	})))
	key := e.issueGrant(Grant{Job: "job_mask", Agent: "a", Recording: true})
	r := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), anthBody)
	e.gw.Flush()
	calls := e.meter.Job("job_mask")
	if r.status != 401 || len(calls) != 1 || calls[0].Exchange == nil {
		t.Fatalf("%d %+v", r.status, calls)
	}
	if ex := calls[0].Exchange; strings.Contains(ex.Body, tenantKey) || !strings.Contains(ex.Body, strings.Repeat("*", len(tenantKey))) || ex.Status != 401 {
		t.Errorf("exchange %+v", ex)
	}
}

// A call over the bound (a 10 MiB conversation) is kept cut, never silently: its request with its
// longest strings clipped, each clip marked, so it still reads as the conversation it was; the
// answer whole; Truncated and Cut say so, and a replay cannot answer it.
func TestRecordingBounded(t *testing.T) {
	e := newEnv(t, helloScript)
	key := e.issueGrant(Grant{Job: "job_big", Agent: "a", Recording: true})
	long := strings.Repeat("the ticket, again and again. ", 10<<20/29)
	big := `{"model":"fake-model","max_tokens":10,"system":"You sort tickets.","messages":[{"role":"user","content":"` + long + `"},{"role":"assistant","content":"ok"},{"role":"user","content":"hello"}]}`
	r := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), big)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	e.gw.Flush()
	calls := e.meter.Job("job_big")
	if len(calls) != 1 || calls[0].Exchange == nil {
		t.Fatalf("%+v", calls)
	}
	ex := calls[0].Exchange
	if !ex.Truncated || len(ex.Request) > maxRequestKept || ex.Body != string(r.body) || ex.Path != "/anthropic/v1/messages" {
		t.Fatalf("exchange: truncated %v, %d request bytes, answer %q", ex.Truncated, len(ex.Request), ex.Body)
	}
	if !strings.Contains(ex.Cut, "the request is 10 MiB, over the 7 MiB kept of a request: 1 string longer than") {
		t.Errorf("cut: %q", ex.Cut)
	}
	var req struct {
		System   string
		Messages []struct{ Role, Content string }
	}
	if err := json.Unmarshal([]byte(ex.Request), &req); err != nil {
		t.Fatalf("the kept request is not JSON: %v", err)
	}
	if req.System != "You sort tickets." || len(req.Messages) != 3 || req.Messages[2].Content != "hello" ||
		!strings.HasPrefix(req.Messages[0].Content, "the ticket, again") || !strings.Contains(req.Messages[0].Content, " more not kept]") {
		t.Errorf("the kept request: system %q, %d messages", req.System, len(req.Messages))
	}
	if strings.Index(ex.Request, `"model"`) > strings.Index(ex.Request, `"messages"`) {
		t.Error("the clipped request's keys are not in their order")
	}
}

// Past the bound, the rest of an answer is counted, not kept, and said.
func TestCaptureCutsTheAnswer(t *testing.T) {
	k := &capture{}
	k.ex.Request = `{}`
	k.size = MaxExchangeBytes - 10
	k.wrote([]byte("0123456789abcdef"))
	k.wrote([]byte("more"))
	ex := k.exchange(200, Usage{})
	if ex.Body != "0123456789" || !ex.Truncated || ex.Cut != "the last 10 bytes of the answer were not kept: a kept call is at most 8 MiB" {
		t.Errorf("%q %v %q", ex.Body, ex.Truncated, ex.Cut)
	}
	s := &capture{}
	s.ex.Streamed = true
	s.size = MaxExchangeBytes - 5
	s.wrote([]byte("data: {}\n\n"))
	s.wrote([]byte("data: {}\n\n"))
	if ex := s.exchange(200, Usage{}); len(ex.Chunks) != 0 || !strings.Contains(ex.Cut, "the last 20 bytes of the answer") {
		t.Errorf("a stream's chunks past the bound: %d, %q", len(ex.Chunks), ex.Cut)
	}
}

// What is not JSON is kept to its first bytes, said so.
func TestClipBody(t *testing.T) {
	got, note := clipBody([]byte(strings.Repeat("é", 1000)), 101)
	if got != strings.Repeat("é", 50) || !strings.Contains(note, "kept to its first 100 bytes") {
		t.Errorf("%q %q", got, note)
	}
	// Many small strings cannot be clipped to fit: the first bytes.
	many := `[` + strings.Repeat(`"ab",`, 5000) + `"ab"]`
	if got, note := clipBody([]byte(many), 100); len(got) > 100 || !strings.Contains(note, "kept to its first") {
		t.Errorf("%d %q", len(got), note)
	}
	// Numbers, booleans, null and nesting survive, in order.
	in := `{"z":1.50,"a":[true,false,null,{"k":"` + strings.Repeat("x", 5000) + `"}],"n":-2e3}`
	got, _ = clipBody([]byte(in), 2000)
	if !strings.HasPrefix(got, `{"z":1.50,"a":[true,false,null,{"k":"xxx`) || !strings.HasSuffix(got, ` more not kept]"}],"n":-2e3}`) {
		t.Errorf("%s", got)
	}
}

// A call the gateway refuses after reading it (a limit) is kept with the refusal, marked as the
// gateway's answer.
func TestRecordingKeepsARefusal(t *testing.T) {
	e := newEnv(t, helloScript)
	key := e.issueGrant(Grant{Job: "job_ref", Agent: "a", Recording: true, Limits: Limits{MaxSteps: 1}})
	do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), anthBody)
	r := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), anthBody)
	e.gw.Flush()
	calls := e.meter.Job("job_ref")
	if r.status != 429 || len(calls) != 2 {
		t.Fatalf("%d, %d calls", r.status, len(calls))
	}
	ex := calls[1].Exchange
	if ex == nil || !ex.Gateway || ex.Request != anthBody || ex.Status != 429 || ex.Body != string(r.body) || !strings.Contains(ex.Body, "limits.max_steps of 1 reached") {
		t.Fatalf("the refused call's exchange: %+v", ex)
	}
	if calls[0].Exchange.Gateway {
		t.Error("the answered call is marked as the gateway's")
	}
}

// A replayed session's calls are answered from the recording, byte for byte, without going
// upstream; a call the recording refuses gets a 400 with its reason, not to be retried; a call it
// sends upstream goes there.
func TestReplay(t *testing.T) {
	e := newEnv(t, helloScript)
	rec := e.issueGrant(Grant{Job: "job_orig", Agent: "a", Recording: true})
	streamBody := `{"model":"fake-model","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hello"}]}`
	origWhole := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(rec), anthBody)
	origStream := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(rec), streamBody)
	e.gw.Flush()
	recorded := e.meter.Job("job_orig")
	if len(recorded) != 2 || recorded[0].Exchange == nil || recorded[1].Exchange == nil {
		t.Fatalf("recorded %+v", recorded)
	}

	var mu sync.Mutex
	next := 0
	upstream := false
	rp := replayFunc(func(method, path string, body []byte) (*Exchange, bool, string) {
		mu.Lock()
		defer mu.Unlock()
		if upstream {
			return nil, true, ""
		}
		if next >= len(recorded) {
			return nil, false, "the recording has no more calls"
		}
		ex := recorded[next].Exchange
		if method != ex.Method || path != ex.Path || !bytes.Equal(body, []byte(ex.Request)) {
			return nil, false, "model call differs"
		}
		next++
		return ex, false, ""
	})
	key := e.issueGrant(Grant{Job: "job_replay", Agent: "a", Replay: rp, Limits: Limits{MaxSteps: 10}})
	upstreamBefore := len(e.fake.Requests())
	whole := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), anthBody)
	stream := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), streamBody)
	if whole.status != 200 || !bytes.Equal(whole.body, origWhole.body) || stream.status != 200 || !bytes.Equal(stream.body, origStream.body) {
		t.Fatalf("replayed answers differ:\n%d %s\n%d %s", whole.status, whole.body, stream.status, stream.body)
	}
	if !strings.HasPrefix(stream.header.Get("Content-Type"), "text/event-stream") {
		t.Errorf("the replayed stream's content type: %q", stream.header.Get("Content-Type"))
	}
	if n := len(e.fake.Requests()); n != upstreamBefore {
		t.Fatalf("a replayed call went upstream")
	}
	more := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), anthBody)
	typ, msg, _ := errorShape(t, AnthropicMessages, more.body)
	if more.status != 400 || typ != "invalid_request_error" || msg != "oz0 replay: the recording has no more calls" || more.header.Get("X-Should-Retry") != "false" {
		t.Errorf("a call past the recording: %d %s %s %q", more.status, typ, msg, more.header.Get("X-Should-Retry"))
	}
	mu.Lock()
	upstream = true
	mu.Unlock()
	if r := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), anthBody); r.status != 200 || len(e.fake.Requests()) != upstreamBefore+1 {
		t.Errorf("a call the replay sends upstream: %d, %d upstream requests", r.status, len(e.fake.Requests())-upstreamBefore)
	}
	e.gw.Flush()
	calls := e.meter.Job("job_replay")
	if len(calls) != 4 || !calls[0].Replayed || !calls[1].Replayed || calls[1].Usage.OutputTokens == 0 || calls[2].Refused != "replay" || calls[3].Replayed {
		t.Errorf("metered %+v", calls)
	}
	// The log line of a call says it was replayed, as the trace does; only those say so.
	var replayed []bool
	for _, line := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(line, `msg="gateway: call"`) && strings.Contains(line, "job=job_replay ") {
			replayed = append(replayed, strings.Contains(line, " replayed=true"))
		}
	}
	if fmt.Sprint(replayed) != "[true true false false]" {
		t.Errorf("log lines of job_replay with replayed=true: %v, want [true true false false]\n%s", replayed, e.logs.String())
	}
	if strings.Contains(e.logs.String(), "replayed=false") {
		t.Errorf("a call that was not replayed says replayed=false:\n%s", e.logs.String())
	}
}

// An OpenAI stream whose client did not ask for include_usage says no tokens to its client (the
// gateway asked for them and hid the chunk): its replay is metered with the recorded ones.
func TestReplayMetersTheRecordedUsage(t *testing.T) {
	e := newEnv(t, helloScript)
	rec := e.issueGrant(Grant{Job: "job_orig", Agent: "a", Recording: true})
	streamBody := `{"model":"fake-model","stream":true,"messages":[{"role":"user","content":"hello"}]}`
	if r := do(t, "POST", e.openaiURL()+"/chat/completions", openaiHeaders(rec), streamBody); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	e.gw.Flush()
	orig := e.meter.Job("job_orig")
	if len(orig) != 1 || orig[0].Exchange == nil || orig[0].Usage.InputTokens == 0 {
		t.Fatalf("recorded %+v", orig)
	}
	ex := orig[0].Exchange
	rp := replayFunc(func(string, string, []byte) (*Exchange, bool, string) { return ex, false, "" })
	key := e.issueGrant(Grant{Job: "job_replay", Agent: "a", Replay: rp})
	if r := do(t, "POST", e.openaiURL()+"/chat/completions", openaiHeaders(key), streamBody); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	e.gw.Flush()
	replayed := e.meter.Job("job_replay")
	if len(replayed) != 1 || !replayed[0].Replayed || replayed[0].Usage != orig[0].Usage {
		t.Errorf("replayed %+v, want the usage %+v", replayed, orig[0].Usage)
	}
}
