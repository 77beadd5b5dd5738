package gateway

import (
	"bytes"
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

// A call over the bound is kept as truncated, without its request or answer.
func TestRecordingBounded(t *testing.T) {
	e := newEnv(t, helloScript)
	key := e.issueGrant(Grant{Job: "job_big", Agent: "a", Recording: true})
	big := `{"model":"fake-model","max_tokens":10,"messages":[{"role":"user","content":"` + strings.Repeat("x", MaxExchangeBytes) + `"}]}`
	if r := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), big); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	e.gw.Flush()
	calls := e.meter.Job("job_big")
	if len(calls) != 1 || calls[0].Exchange == nil {
		t.Fatalf("%+v", calls)
	}
	if ex := calls[0].Exchange; !ex.Truncated || ex.Request != "" || ex.Body != "" || ex.Path != "/anthropic/v1/messages" {
		t.Errorf("exchange: truncated %v, %d request bytes, %d answer bytes", ex.Truncated, len(ex.Request), len(ex.Body))
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
