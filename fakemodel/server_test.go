package fakemodel

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestFakeModelErrorKinds(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		yaml                  string
		anthStatus, oaiStatus int
		anthType, oaiType     string
		oaiCode               any
	}{
		{"rate_limit kind", "{kind: rate_limit, retry_after: 1500ms}", 429, 429, "rate_limit_error", "requests", "rate_limit_exceeded"},
		{"429 status", "{status: 429, retry_after: 2s}", 429, 429, "rate_limit_error", "requests", "rate_limit_exceeded"},
		{"overloaded kind", "{kind: overloaded}", 529, 503, "overloaded_error", "server_error", nil},
		{"529 status", "{status: 529}", 529, 529, "overloaded_error", "server_error", nil},
		{"server kind", "{kind: server}", 500, 500, "api_error", "server_error", nil},
		{"502 status", "{status: 502}", 502, 502, "api_error", "server_error", nil},
		{"invalid_request kind", "{kind: invalid_request, message: bad thing}", 400, 400, "invalid_request_error", "invalid_request_error", nil},
		{"authentication kind", "{kind: authentication}", 401, 401, "authentication_error", "invalid_request_error", "invalid_api_key"},
		{"permission kind", "{kind: permission}", 403, 403, "permission_error", "invalid_request_error", nil},
		{"not_found kind", "{kind: not_found}", 404, 404, "not_found_error", "invalid_request_error", "not_found"},
		{"request_too_large kind", "{kind: request_too_large}", 413, 413, "request_too_large", "invalid_request_error", "request_too_large"},
		{"418 status", "{status: 418}", 418, 418, "invalid_request_error", "invalid_request_error", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ts := serve(t, "rules:\n- name: failing\n  reply:\n    error: "+tc.yaml+"\n")
			for _, stream := range []bool{false, true} {
				ab, ob := anthBody, openaiBody
				if stream {
					ab, ob = anthStream, openaiStream
				}
				r := anthropic(t, ts, ab)
				m := obj(t, r.body)
				if r.status != tc.anthStatus || get(m, "type") != "error" || get(m, "error", "type") != tc.anthType || len(m) != 2 || len(get(m, "error").(map[string]any)) != 2 {
					t.Errorf("%s: Anthropic %d %s", tc.yaml, r.status, r.body)
				}
				msg, _ := get(m, "error", "message").(string)
				if strings.Contains(tc.yaml, "message:") {
					if msg != "bad thing" {
						t.Errorf("%s: message %q", tc.yaml, msg)
					}
				} else if !strings.HasSuffix(msg, `(oz0 fake model: rule "failing" of script test.yaml)`) {
					t.Errorf("%s: message %q", tc.yaml, msg)
				}
				r2 := openai(t, ts, ob)
				m = obj(t, r2.body)
				if r2.status != tc.oaiStatus || get(m, "error", "type") != tc.oaiType || get(m, "error", "code") != tc.oaiCode || get(m, "error", "param") != nil || len(get(m, "error").(map[string]any)) != 4 {
					t.Errorf("%s: OpenAI %d %s", tc.yaml, r2.status, r2.body)
				}
				if strings.Contains(tc.yaml, "retry_after") {
					want := "2"
					if strings.Contains(tc.yaml, "ms") {
						want = "2" // 1.5s rounds up
					}
					for _, h := range []http.Header{r.header, r2.header} {
						if h.Get("retry-after") != want || h.Get("retry-after-ms") == "" {
							t.Errorf("%s: retry-after %q, retry-after-ms %q", tc.yaml, h.Get("retry-after"), h.Get("retry-after-ms"))
						}
					}
				} else if r.header.Get("retry-after") != "" {
					t.Errorf("%s: a retry-after header", tc.yaml)
				}
				// A rate limit carries the provider's rate-limit headers, as its own does.
				rateLimit := tc.anthStatus == 429
				if got := r.header.Get("anthropic-ratelimit-requests-remaining"); rateLimit != (got == "0") || rateLimit && r.header.Get("anthropic-ratelimit-requests-limit") != "50" {
					t.Errorf("%s: Anthropic's rate-limit headers %v", tc.yaml, r.header)
				}
				if reset, err := time.Parse(time.RFC3339, r.header.Get("anthropic-ratelimit-requests-reset")); rateLimit && (err != nil || time.Until(reset) > 3*time.Second) {
					t.Errorf("%s: anthropic-ratelimit-requests-reset %q", tc.yaml, r.header.Get("anthropic-ratelimit-requests-reset"))
				}
				if got := r2.header.Get("x-ratelimit-remaining-requests"); rateLimit != (got == "0") || rateLimit && r2.header.Get("x-ratelimit-limit-requests") != "50" {
					t.Errorf("%s: OpenAI's rate-limit headers %v", tc.yaml, r2.header)
				}
				if want := map[bool]string{true: "1.5s", false: "2s"}[strings.Contains(tc.yaml, "ms")]; rateLimit && r2.header.Get("x-ratelimit-reset-requests") != want {
					t.Errorf("%s: x-ratelimit-reset-requests %q, want %q", tc.yaml, r2.header.Get("x-ratelimit-reset-requests"), want)
				}
			}
		})
	}
	// limit: what the headers say the provider allows.
	_, ts := serve(t, "rules:\n- reply:\n    error: {kind: rate_limit, retry_after: 1s, limit: 4000}\n")
	if r := anthropic(t, ts, anthBody); r.header.Get("anthropic-ratelimit-requests-limit") != "4000" {
		t.Errorf("limit: %v", r.header)
	}
	if r := openai(t, ts, openaiBody); r.header.Get("x-ratelimit-limit-requests") != "4000" {
		t.Errorf("limit: %v", r.header)
	}
}

func TestFakeModelStreamError(t *testing.T) {
	_, ts := serve(t, textScript+"      error: {kind: overloaded, after: 3}\n")
	r := anthropic(t, ts, anthStream)
	if r.status != 200 || r.readErr != nil {
		t.Fatalf("%d %v", r.status, r.readErr)
	}
	evs := parseSSE(t, r.body)
	if got := names(evs); got != "message_start content_block_start ping error" {
		t.Errorf("events %s", got)
	}
	if last := evs[len(evs)-1].data; last != `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded (oz0 fake model: rule \"hello\" of script test.yaml)"}}` {
		t.Errorf("error event %s", last)
	}
	r = openai(t, ts, openaiStream)
	evs = parseSSE(t, r.body)
	if len(evs) != 4 || evs[3].data != `{"error":{"message":"The engine is currently overloaded, please try again later. (oz0 fake model: rule \"hello\" of script test.yaml)","type":"server_error","param":null,"code":null}}` {
		t.Errorf("OpenAI stream %s", r.body)
	}
	// Not streamed: the HTTP error.
	if r := anthropic(t, ts, anthBody); r.status != 529 {
		t.Errorf("not streamed: %d %s", r.status, r.body)
	}
	// after: 0 fails before any event, with 200.
	_, ts = serve(t, "rules:\n- reply: {error: {kind: server, after: 0}}\n")
	r = anthropic(t, ts, anthStream)
	if evs := parseSSE(t, r.body); r.status != 200 || names(evs) != "error" || !strings.Contains(evs[0].data, `"api_error"`) {
		t.Errorf("after 0: %d %s", r.status, r.body)
	}
}

func TestFakeModelCut(t *testing.T) {
	_, ts := serve(t, textScript+"      error: {kind: cut, after: 4}\n")
	r := anthropic(t, ts, anthStream)
	if r.status != 200 || r.readErr == nil {
		t.Fatalf("a cut stream read cleanly: %d %v\n%s", r.status, r.readErr, r.body)
	}
	if got := names(parseSSE(t, r.body)); got != "message_start content_block_start ping content_block_delta" {
		t.Errorf("events before the cut: %s", got)
	}
	r = openai(t, ts, openaiStream)
	if r.readErr == nil || len(parseSSE(t, r.body)) != 4 || bytes.Contains(r.body, []byte("[DONE]")) {
		t.Errorf("OpenAI cut: %v\n%s", r.readErr, r.body)
	}
	// Not streamed: half a body, then the connection drops.
	for _, r := range []response{anthropic(t, ts, anthBody), openai(t, ts, openaiBody)} {
		if r.status != 200 || r.readErr == nil || len(r.body) == 0 || json.Valid(r.body) {
			t.Errorf("cut body: %d %v %s", r.status, r.readErr, r.body)
		}
	}
	// Without after: cut after the first event.
	_, ts = serve(t, "rules:\n- reply: {text: hi, error: {kind: cut}}\n")
	r = anthropic(t, ts, anthStream)
	if got := names(parseSSE(t, r.body)); got != "message_start" || r.readErr == nil {
		t.Errorf("default cut: %s, %v", got, r.readErr)
	}
}

func TestFakeModelTimesAndNoMatch(t *testing.T) {
	srv, ts := serve(t, `
rules:
  - name: first
    match: {user: hello}
    reply: {text: one}
    times: 2
  - name: tool-answer
    match: {tool_result: "(?i)^ok$"}
    reply: {text: two}
`)
	text := func(r response) string { return get(obj(t, r.body), "content", 0, "text").(string) }
	if a, b := text(anthropic(t, ts, anthBody)), text(anthropic(t, ts, anthStream[:0]+anthBody)); a != "one" || b != "one" {
		t.Errorf("answers %q %q", a, b)
	}
	r := anthropic(t, ts, anthBody)
	want := `{"type":"error","error":{"type":"invalid_request_error","message":"oz0 fake model: no rule of script test.yaml matches this request (last user message: \"hello there\"; system prompt: \"You sort support tickets.\"; model: \"claude-fake-1\"; no tools); rule \"first\" has answered its 2 times. Add a rule that matches it, or a rule without match at the end of the script as a catch-all."}}`
	if r.status != 400 || string(r.body) != want {
		t.Errorf("no match:\n got %d %s\nwant %s", r.status, r.body, want)
	}
	r = openai(t, ts, `{"model":"gpt-fake","tools":[{"type":"function","function":{"name":"lookup"}}],"messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"c","content":"not ok"}]}`)
	if m := get(obj(t, r.body), "error", "message").(string); r.status != 400 || !strings.Contains(m, `(last user message: "hi"; system prompt: none; model: "gpt-fake"; tools: lookup; ends with a tool result)`) {
		t.Errorf("OpenAI no match: %d %s", r.status, r.body)
	}
	r = openai(t, ts, `{"model":"gpt-fake","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"c","content":"OK"}]}`)
	if got := get(obj(t, r.body), "choices", 0, "message", "content"); got != "two" {
		t.Errorf("tool result rule: %s", r.body)
	}
	// Reset gives the times back.
	srv.Reset()
	if len(srv.Requests()) != 0 || text(anthropic(t, ts, anthBody)) != "one" {
		t.Errorf("after Reset")
	}
}

func TestFakeModelMatch(t *testing.T) {
	_, ts := serve(t, `
rules:
  - {match: {user: "^first question$", tool_result: true}, reply: {text: skipped}}
  - {match: {model: "^big-"}, reply: {text: big}}
  - {match: {tools: "^notify_"}, reply: {text: notify-tool}}
  - {match: {tools: true}, reply: {text: some-tool}}
  - {match: {tool_result: true}, reply: {text: after-tool}}
  - {match: {system: "(?i)support ticket", user: "(?i)refund"}, reply: {text: refund}}
  - {match: {system: "(?i)support ticket"}, reply: {text: ticket}}
  - {match: {tools: false, tool_result: false}, reply: {text: plain}}
`)
	for _, tc := range []struct{ anth, oai, want string }{
		{`{"model":"big-1","max_tokens":1,"messages":[{"role":"user","content":"x"}]}`, `{"model":"big-1","messages":[{"role":"user","content":"x"}]}`, "big"},
		{`{"model":"m","max_tokens":1,"tools":[{"name":"notify_team"}],"messages":[{"role":"user","content":"x"}]}`,
			`{"model":"m","tools":[{"type":"function","function":{"name":"notify_team"}}],"messages":[{"role":"user","content":"x"}]}`, "notify-tool"},
		{`{"model":"m","max_tokens":1,"tools":[{"name":"lookup"}],"messages":[{"role":"user","content":"x"}]}`,
			`{"model":"m","functions":[{"name":"lookup"}],"messages":[{"role":"user","content":"x"}]}`, "some-tool"},
		{`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"refund"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"x","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"ok"}]}]}]}`,
			`{"model":"m","messages":[{"role":"user","content":"refund"},{"role":"assistant","content":null,"tool_calls":[]},{"role":"tool","tool_call_id":"t","content":"ok"}]}`, "after-tool"},
		// The last user message with text is the ticket, even after a tool round.
		{`{"model":"m","max_tokens":1,"system":[{"type":"text","text":"A Support Ticket desk"}],"messages":[{"role":"user","content":[{"type":"text","text":"I want a REFUND"}]},{"role":"assistant","content":"ok"},{"role":"user","content":[{"type":"text","text":"and a refund"}]}]}`,
			`{"model":"m","messages":[{"role":"developer","content":"A Support Ticket desk"},{"role":"user","content":[{"type":"text","text":"I want a REFUND"}]}]}`, "refund"},
		// A message that only carries tool results is not the user's text.
		{`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"first question"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"x","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}]}`,
			`{"model":"m","messages":[{"role":"user","content":"first question"},{"role":"assistant","content":null,"tool_calls":[]},{"role":"tool","tool_call_id":"t","content":"ok"}]}`, "skipped"},
		{`{"model":"m","max_tokens":1,"system":"support ticket","messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"m","messages":[{"role":"system","content":"support ticket"},{"role":"user","content":"hi"}]}`, "ticket"},
		{`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "plain"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			r := anthropic(t, ts, tc.anth)
			if got := get(obj(t, r.body), "content", 0, "text"); got != tc.want {
				t.Errorf("Anthropic %s: %s, want %s", tc.anth, r.body, tc.want)
			}
			r = openai(t, ts, tc.oai)
			if got := get(obj(t, r.body), "choices", 0, "message", "content"); got != tc.want {
				t.Errorf("OpenAI %s: %s, want %s", tc.oai, r.body, tc.want)
			}
		})
	}
}

func TestFakeModelDeterministic(t *testing.T) {
	script := toolScript
	bodies := []struct{ api, body string }{
		{"a", strings.Replace(anthStream, `"max_tokens":1024,`, `"max_tokens":1024,"tools":[{"name":"notify_team"}],`, 1)},
		{"a", anthBody},
		{"o", openaiStreamUsage},
		{"o", openaiBody},
	}
	run := func() []string {
		_, ts := serve(t, script)
		var out []string
		for _, b := range bodies {
			var r response
			if b.api == "a" {
				r = anthropic(t, ts, b.body)
			} else {
				r = openai(t, ts, b.body)
			}
			h := r.header.Clone()
			h.Del("Date")
			var hb bytes.Buffer
			h.Write(&hb)
			out = append(out, hb.String()+"\n"+string(r.body))
		}
		return out
	}
	first, second := run(), run()
	for i := range first {
		if first[i] != second[i] {
			t.Errorf("request %d answered differently:\n%s\n---\n%s", i, first[i], second[i])
		}
	}
	// Within one server too, and different requests get different ids.
	_, ts := serve(t, script)
	a, b := anthropic(t, ts, anthBody), anthropic(t, ts, anthBody)
	c := anthropic(t, ts, strings.Replace(anthBody, "hello", "hullo", 1))
	if !bytes.Equal(a.body, b.body) || get(obj(t, a.body), "id") == get(obj(t, c.body), "id") {
		t.Errorf("ids: %s %s", a.body, c.body)
	}
}

func TestFakeModelRecordsRequestsAndKeys(t *testing.T) {
	srv, ts := serve(t, "require_key: sk-tenant-0123456789\nrules:\n- reply: {text: hi}\n")
	h := map[string]string{"anthropic-version": "2023-06-01", "anthropic-beta": "tools-2024-04-04", "x-api-key": "sk-tenant-0123456789"}
	if r := do(t, "POST", ts.URL+"/gateway/anthropic/v1/messages?beta=true", h, anthBody); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	h["x-api-key"] = "sk-session-key"
	r := do(t, "POST", ts.URL+"/v1/messages", h, anthBody)
	if r.status != 401 || string(r.body) != `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}` {
		t.Errorf("wrong key: %d %s", r.status, r.body)
	}
	delete(h, "x-api-key")
	h["Authorization"] = "Bearer sk-tenant-0123456789"
	if r := do(t, "POST", ts.URL+"/v1/messages", h, anthBody); r.status != 200 {
		t.Errorf("bearer key for Anthropic: %d %s", r.status, r.body)
	}
	r = do(t, "POST", ts.URL+"/v1/chat/completions", map[string]string{"Authorization": "Bearer sk-session-key-abcd"}, openaiBody)
	if r.status != 401 || string(r.body) != `{"error":{"message":"Incorrect API key provided: sk-************abcd.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}` {
		t.Errorf("OpenAI wrong key: %d %s", r.status, r.body)
	}
	r = do(t, "POST", ts.URL+"/v1/chat/completions", nil, openaiBody)
	if r.status != 401 || !strings.Contains(string(r.body), `"You didn't provide an API key.`) || !strings.HasSuffix(string(r.body), `"code":null}}`) {
		t.Errorf("OpenAI no key: %d %s", r.status, r.body)
	}
	r = do(t, "GET", ts.URL+"/v1/models", map[string]string{"Authorization": "Bearer sk-tenant-0123456789"}, "")
	if r.status != 200 {
		t.Errorf("models with the key: %d %s", r.status, r.body)
	}

	reqs := srv.Requests()
	if len(reqs) != 6 {
		t.Fatalf("%d requests recorded", len(reqs))
	}
	first := reqs[0]
	if first.Method != "POST" || first.Path != "/gateway/anthropic/v1/messages" || first.Query != "beta=true" || first.API != Anthropic || first.Rule != "rule 1" || first.Status != 200 ||
		first.Header.Get("anthropic-beta") != "tools-2024-04-04" || first.Header.Get("x-api-key") != "sk-tenant-0123456789" || string(first.Body) != anthBody {
		t.Errorf("first request %+v", first)
	}
	if reqs[1].Status != 401 || reqs[1].Rule != "" || reqs[3].API != OpenAI || reqs[5].Method != "GET" {
		t.Errorf("requests %+v", reqs)
	}
	reqs[0].Header.Set("x-api-key", "changed")
	if srv.Requests()[0].Header.Get("x-api-key") != "sk-tenant-0123456789" {
		t.Errorf("Requests returned the server's own headers")
	}

	srv.KeepRequests = 2
	do(t, "GET", ts.URL+"/v1/models", map[string]string{"Authorization": "Bearer sk-tenant-0123456789"}, "")
	if reqs := srv.Requests(); len(reqs) != 2 || reqs[0].Path != "/v1/models" {
		t.Errorf("kept %d requests: %+v", len(reqs), reqs)
	}
}

func TestFakeModelRoutes(t *testing.T) {
	srv, ts := serve(t, "rules:\n- reply: {text: hi}\n")
	var log bytes.Buffer
	srv.Log = &log
	for _, tc := range []struct {
		name         string
		method, path string
		headers      map[string]string
		status       int
		body         string
	}{
		{"Anthropic unknown path", "POST", "/v1/nothing", anthHeaders, 404, `{"type":"error","error":{"type":"not_found_error","message":"Not found"}}`},
		{"OpenAI unknown path", "POST", "/v1/nothing", nil, 404, `{"error":{"message":"Invalid URL (POST /v1/nothing)","type":"invalid_request_error","param":null,"code":"not_found"}}`},
		{"Anthropic wrong method", "GET", "/v1/messages", anthHeaders, 405, `{"type":"error","error":{"type":"invalid_request_error","message":"Method GET is not allowed for /v1/messages; use POST"}}`},
		{"OpenAI wrong method", "POST", "/v1/models", nil, 405, `{"error":{"message":"Method POST is not allowed for /v1/models; use GET","type":"invalid_request_error","param":null,"code":null}}`},
		{"Anthropic under a prefix", "POST", "/prefix/v1/messages/", anthHeaders, 200, ""},
		{"OpenAI under a prefix", "POST", "/openai/chat/completions", openaiHeaders, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := ""
			if tc.method == "POST" {
				body = anthBody
				if tc.headers["x-api-key"] == "" {
					body = openaiBody
				}
			}
			r := do(t, tc.method, ts.URL+tc.path, tc.headers, body)
			if r.status != tc.status || (tc.body != "" && string(r.body) != tc.body) {
				t.Errorf("%s %s: %d %s", tc.method, tc.path, r.status, r.body)
			}
		})
	}
	if !strings.Contains(log.String(), "fake-model: POST /openai/chat/completions -> 200 (openai, rule 1)\n") {
		t.Errorf("log:\n%s", log.String())
	}
	// Too large a body: 413.
	big := `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"` + strings.Repeat("x", MaxRequestBytes) + `"}]}`
	r := anthropic(t, ts, big)
	if r.status != 413 || !strings.Contains(string(r.body), `"request_too_large"`) {
		t.Errorf("large body: %d %s", r.status, r.body)
	}
}

func TestFakeModelDelays(t *testing.T) {
	_, ts := serve(t, "rules:\n- reply: {text: one two three four five six seven eight nine ten eleven twelve, delay: 60ms, stream_delay: 10ms}\n")
	start := time.Now()
	resp, err := http.DefaultClient.Do(mustRequest(t, ts.URL+"/v1/messages", anthStream))
	if err != nil {
		t.Fatal(err)
	}
	headers := time.Since(start)
	io.ReadAll(resp.Body)
	resp.Body.Close()
	total := time.Since(start)
	if headers < 60*time.Millisecond || total < headers+50*time.Millisecond {
		t.Errorf("headers after %v, all after %v", headers, total)
	}
}

func mustRequest(t *testing.T, url, body string) *http.Request {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range anthHeaders {
		req.Header.Set(k, v)
	}
	return req
}

func TestFakeModelConcurrentTimes(t *testing.T) {
	srv, ts := serve(t, "rules:\n- {name: few, reply: {text: few}, times: 5}\n- {name: rest, reply: {text: rest}}\n")
	done := make(chan string, 40)
	for range 40 {
		go func() {
			r := do(t, "POST", ts.URL+"/v1/messages", anthHeaders, anthStream)
			done <- string(r.body)
		}()
	}
	few := 0
	for range 40 {
		if strings.Contains(<-done, `"text":"few"`) {
			few++
		}
	}
	if few != 5 {
		t.Errorf("the rule with times: 5 answered %d times", few)
	}
	n := 0
	for _, r := range srv.Requests() {
		if r.Rule == "few" {
			n++
		}
	}
	if n != 5 {
		t.Errorf("%d requests recorded as answered by few", n)
	}
}

func TestFakeModelClientGoesAway(t *testing.T) {
	_, ts := serve(t, "rules:\n- reply: {text: one two three four five six seven eight nine ten, stream_delay: 50ms}\n")
	req := mustRequest(t, ts.URL+"/v1/messages", anthStream)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	resp.Body.Read(buf)
	resp.Body.Close() // mid-stream
	// The server goes on answering others.
	if r := anthropic(t, ts, anthBody); r.status != 200 {
		t.Errorf("%d %s", r.status, r.body)
	}
}

// FuzzRequest sends arbitrary bodies to every endpoint: the server answers, it never panics.
func FuzzRequest(f *testing.F) {
	for _, b := range []string{anthBody, anthStream, openaiBody, openaiStreamUsage, `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","content":[{"type":"text","text":"x"}]}]}],"tools":[{"name":"a"}]}`, `{"model":"m","messages":[{"role":"tool","content":[{"type":"text"}]}],"tools":[{"custom":{}}],"functions":[{}]}`, "null", "[]", `{"model":1}`} {
		f.Add(b)
	}
	s, err := ParseScript("fuzz", []byte(toolScript))
	if err != nil {
		f.Fatal(err)
	}
	srv := New(s)
	srv.KeepRequests = -1
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{"/v1/messages", "/v1/messages/count_tokens", "/v1/chat/completions"} {
			req := httptest.NewRequest("POST", path, strings.NewReader(body))
			req.Header.Set("anthropic-version", "2023-06-01")
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, req)
			if w.Code == 0 || !json.Valid(firstJSON(w.Body.Bytes())) {
				t.Fatalf("%s %q: %d %s", path, body, w.Code, w.Body.Bytes())
			}
		}
	})
}

// firstJSON is the body, or the data of its first event when it is a stream.
func firstJSON(b []byte) []byte {
	if rest, ok := bytes.CutPrefix(b, []byte("event: ")); ok {
		_, b, _ = bytes.Cut(rest, []byte("\ndata: "))
	}
	b = bytes.TrimPrefix(b, []byte("data: "))
	line, _, _ := bytes.Cut(b, []byte("\n"))
	return line
}
