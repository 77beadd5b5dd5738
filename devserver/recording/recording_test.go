package recording

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/fakemodel"
	"github.com/orchestrator-zero/oz0/gateway"
	"github.com/orchestrator-zero/oz0/schemas"
)

const system = "You sort support tickets.\nAnswer with JSON.\nBe brief."

func anthReq(user, sys string, extra ...string) string {
	b, _ := json.Marshal(map[string]any{"model": "m", "max_tokens": 100, "system": sys,
		"messages": []map[string]any{{"role": "user", "content": user}}})
	s := string(b)
	for _, e := range extra {
		s = s[:len(s)-1] + "," + e + "}"
	}
	return s
}

func TestReplayMatchesAndDiverges(t *testing.T) {
	exs := []gateway.Exchange{
		{Method: "POST", Path: "/anthropic/v1/messages", Request: anthReq("one", system), Status: 200, Body: `{"n":1}`},
		{Method: "POST", Path: "/anthropic/v1/messages", Request: anthReq("two", system), Status: 200, Body: `{"n":2}`},
	}
	r := NewReplay("job_a", exs, nil, false)
	// The same JSON with its keys in another order and other spacing matches.
	var v map[string]any
	json.Unmarshal([]byte(exs[0].Request), &v)
	again, _ := json.MarshalIndent(v, "", "   ")
	if ex, up, why := r.Answer("POST", "/anthropic/v1/messages", again); ex == nil || ex.Body != `{"n":1}` || up || why != "" {
		t.Fatalf("call 1: %v %v %q", ex, up, why)
	}
	if d := r.Divergence(); !strings.Contains(d, "the session made 1 model call; the recording of job job_a has 2") {
		t.Errorf("a session that stopped early: %q", d)
	}
	changed := anthReq("two", strings.Replace(system, "brief", "short", 1))
	ex, up, why := r.Answer("POST", "/anthropic/v1/messages", []byte(changed))
	if ex != nil || up {
		t.Fatalf("a changed call was answered")
	}
	want := "model call 2 differs from call 2 of the recording of job job_a:\n  system:\n    - Be brief.\n    + Be short."
	if why != want {
		t.Errorf("why:\n%s\nwant:\n%s", why, want)
	}
	// Every later call is refused the same way, and the job fails with it.
	if _, _, again := r.Answer("POST", "/anthropic/v1/messages", []byte(exs[1].Request)); again != why {
		t.Errorf("a later call: %q", again)
	}
	if d := r.Divergence(); d != why {
		t.Errorf("Divergence: %q", d)
	}
}

func TestReplayUpstream(t *testing.T) {
	exs := []gateway.Exchange{{Method: "POST", Path: "/openai/chat/completions", Request: `{"a":1}`, Status: 200, Body: "{}"}}
	r := NewReplay("job_b", exs, nil, true)
	if ex, up, _ := r.Answer("POST", "/openai/chat/completions", []byte(`{"a":2}`)); ex != nil || !up {
		t.Fatalf("a departing call did not go upstream")
	}
	if ex, up, _ := r.Answer("POST", "/openai/chat/completions", []byte(`{"a":1}`)); ex != nil || !up {
		t.Fatalf("a later call did not go upstream")
	}
	if r.Divergence() != "" || !strings.Contains(r.WentUpstream(), "model call 1 differs") {
		t.Errorf("divergence %q, upstream %q", r.Divergence(), r.WentUpstream())
	}
}

// Concurrent calls take the recorded call they match, in whatever order they come; a masked
// secret in the live request matches its mask in the recording; a call past the recording is
// refused.
func TestReplayOrderAndMask(t *testing.T) {
	mask := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("sk-secret"), []byte("***")) }
	exs := []gateway.Exchange{
		{Method: "POST", Path: "/anthropic/v1/messages", Request: anthReq("first ***", system), Status: 200, Body: "1"},
		{Method: "POST", Path: "/anthropic/v1/messages", Request: anthReq("second", system), Status: 200, Body: "2"},
		{Method: "POST", Path: "/anthropic/v1/messages", Request: anthReq("third", system), Truncated: true},
	}
	r := NewReplay("job_c", exs, mask, false)
	if ex, _, why := r.Answer("POST", "/anthropic/v1/messages", []byte(anthReq("second", system))); ex == nil || ex.Body != "2" {
		t.Fatalf("second first: %q", why)
	}
	if ex, _, why := r.Answer("POST", "/anthropic/v1/messages", []byte(anthReq("first sk-secret", system))); ex == nil || ex.Body != "1" {
		t.Fatalf("first, masked: %q", why)
	}
	if _, _, why := r.Answer("POST", "/anthropic/v1/messages", []byte(anthReq("third", system))); !strings.Contains(why, "was not kept") {
		t.Errorf("a truncated call: %q", why)
	}
	r = NewReplay("job_d", exs[:1], mask, false)
	r.Answer("POST", "/anthropic/v1/messages", []byte(anthReq("first sk-secret", system)))
	if _, _, why := r.Answer("POST", "/anthropic/v1/messages", []byte(anthReq("again", system))); why != "model call 2: the recording of job job_d has 1 model call, and the session makes more" {
		t.Errorf("past the recording: %q", why)
	}
}

// A call that departs from the recording is refused with a diff of the two requests, which shows
// their values decoded: a secret the live request escapes ("sk\u002dsecret") is masked there.
func TestReplayDiffMasksAnEscapedSecret(t *testing.T) {
	mask := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("sk-secret"), []byte("***")) }
	exs := []gateway.Exchange{{Method: "POST", Path: "/anthropic/v1/messages", Request: anthReq("first", system), Status: 200, Body: "1"}}
	r := NewReplay("job_e", exs, mask, false)
	_, _, why := r.Answer("POST", "/anthropic/v1/messages", []byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"pw sk\u002dsecret"}]}`))
	if strings.Contains(why, "sk-secret") || !strings.Contains(why, "pw ***") {
		t.Errorf("the divergence: %s", why)
	}
}

func TestDiff(t *testing.T) {
	rec := `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"name":"a"}],"temperature":0}`
	now := `{"model":"m2","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"x"}],"tools":[{"name":"a"}],"top_p":1}`
	got := strings.Join(Diff("POST /a", "POST /b", []byte(rec), []byte(now)), "\n")
	want := `  request: - POST /a
           + POST /b
  messages[1]: + {"content":"x","role":"assistant"} (not in the recording)
  model:
    - "m"
    + "m2"
  temperature: - 0 (not sent now)
  top_p: + 1 (not in the recording)`
	if got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
	if d := Diff("x", "x", []byte("not json"), []byte("not json either")); len(d) != 3 || d[0] != "  body:" {
		t.Errorf("bodies that are not JSON: %q", d)
	}
	long := strings.Repeat("line\n", 200)
	if d := Diff("x", "x", []byte(`{"s":`+quote(long)+`}`), []byte(`{"s":`+quote(long+"more")+`}`)); len(d) != 3 || d[1] != "    - " || d[2] != "    + more" {
		t.Errorf("a long string: %q", d)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// A recorded conversation exported as a script answers the same requests as the model did: a
// tool loop over both APIs, streamed and not, through the fake model serving the script.
func TestScriptAnswersAsRecorded(t *testing.T) {
	toolReq := func(result string) string {
		msgs := []map[string]any{{"role": "user", "content": "What is the weather?"}}
		if result != "" {
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": []map[string]any{{"type": "tool_use", "id": "t1", "name": "weather", "input": map[string]any{"city": "Oslo"}}}},
				map[string]any{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": "t1", "content": result}}})
		}
		b, _ := json.Marshal(map[string]any{"model": "m", "max_tokens": 100, "system": system, "stream": true, "messages": msgs,
			"tools": []map[string]any{{"name": "weather", "input_schema": map[string]any{"type": "object"}}}})
		return string(b)
	}
	// The calls as a model answered them, through the fake model's own wire format.
	src, err := fakemodel.ParseScript("src", []byte(`
rules:
  - match: {tool_result: false}
    reply: {text: "Let me look.", tool_call: {name: weather, arguments: {city: Oslo}}, usage: {input_tokens: 50, output_tokens: 9}}
  - match: {tool_result: true}
    reply: {text: "It is sunny in Oslo.", usage: {input_tokens: 70, output_tokens: 6}}
`))
	if err != nil {
		t.Fatal(err)
	}
	model := httptest.NewServer(fakemodel.New(src))
	defer model.Close()
	oaReq := `{"model":"gpt","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hello"}]}`
	calls := []struct{ path, up, body string }{
		{"/anthropic/v1/messages", "/v1/messages", toolReq("")},
		{"/anthropic/v1/messages", "/v1/messages", toolReq("sunny, 21 C")},
		{"/openai/chat/completions", "/v1/chat/completions", oaReq},
	}
	var exs []gateway.Exchange
	var answers []string
	for _, c := range calls {
		status, ctype, body := post(t, model.URL+c.up, c.body)
		ex := gateway.Exchange{Method: "POST", Path: c.path, Request: c.body, Status: status, ContentType: ctype}
		if strings.HasPrefix(ctype, "text/event-stream") {
			ex.Streamed = true
			ex.Chunks = []gateway.Chunk{{AtMS: 1, Data: body[:len(body)/2]}, {AtMS: 2, Data: body[len(body)/2:]}}
		} else {
			ex.Body = body
		}
		exs = append(exs, ex)
		answers = append(answers, answerText(t, c.path, body))
	}
	script, err := Script("job_x", "What's the weather in Oslo?\nTwo lines: \"quoted\"", exs, schemas.URLAt("main", fakemodel.SchemaName))
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := fakemodel.ParseScript("recorded.yaml", script)
	if err != nil {
		t.Fatalf("the script does not parse: %v\n%s", err, script)
	}
	// The job's input goes with it, for oz0 plugin test --script to send.
	if parsed.Input != "What's the weather in Oslo?\nTwo lines: \"quoted\"" {
		t.Errorf("the script's input is %q", parsed.Input)
	}
	replay := httptest.NewServer(fakemodel.New(parsed))
	defer replay.Close()
	for run := range 2 { // oz0 plugin test makes the same calls in several scenarios
		for i, c := range calls {
			status, _, body := post(t, replay.URL+c.up, c.body)
			if got := answerText(t, c.path, body); status != 200 || got != answers[i] {
				t.Errorf("run %d, call %d: %d %q, want %q\n%s", run+1, i+1, status, got, answers[i], script)
			}
		}
	}
	// A tool that answered otherwise (denied, say) still gets the conversation's answer.
	if _, _, body := post(t, replay.URL+"/v1/messages", toolReq("refused: denied")); answerText(t, "/anthropic/v1/messages", body) != answers[1] {
		t.Errorf("another tool result: %s", body)
	}
	if !strings.Contains(string(script), "input_tokens: 70") || !strings.Contains(string(script), "city: Oslo") {
		t.Errorf("usage or arguments missing:\n%s", script)
	}
}

func post(t *testing.T, url, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), "POST", url, strings.NewReader(body))
	req.Header.Set("content-type", "application/json")
	if strings.Contains(url, "/v1/messages") {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// answerText is an answer's text and tool calls, as the script reproduces them.
func answerText(t *testing.T, path, body string) string {
	t.Helper()
	api := apiOf(path)
	ex := gateway.Exchange{Status: 200, Body: body}
	if strings.HasPrefix(body, "event:") || strings.HasPrefix(body, "data:") {
		ex = gateway.Exchange{Status: 200, Streamed: true, Chunks: []gateway.Chunk{{Data: body}}}
	}
	r, err := replyOf(api, &ex)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if r.Text != nil {
		b.WriteString(*r.Text)
	}
	for _, c := range r.ToolCalls {
		b.WriteString(" → " + c.Name)
		if c.Arguments != nil {
			for i := 0; i+1 < len(c.Arguments.Content); i += 2 {
				b.WriteString(" " + c.Arguments.Content[i].Value + "=" + c.Arguments.Content[i+1].Value)
			}
		}
	}
	b.WriteString(" (" + r.StopReason + ")")
	return b.String()
}

// An OpenAI stream whose client did not ask for include_usage has no usage chunk in its recorded
// answer; the script's reply takes the tokens the call was metered with.
func TestScriptTakesTheMeteredUsage(t *testing.T) {
	chunks := `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello."},"finish_reason":null}]}

data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

data: [DONE]

`
	ex := gateway.Exchange{Method: "POST", Path: "/openai/chat/completions", Status: 200, ContentType: "text/event-stream",
		Request:  `{"model":"gpt","stream":true,"messages":[{"role":"user","content":"hello"}]}`,
		Streamed: true, Chunks: []gateway.Chunk{{AtMS: 1, Data: chunks}},
		Usage: &gateway.Usage{InputTokens: 252, OutputTokens: 23}}
	script, err := Script("job_x", "", []gateway.Exchange{ex}, schemas.URLAt("main", fakemodel.SchemaName))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), "input_tokens: 252") || !strings.Contains(string(script), "output_tokens: 23") {
		t.Errorf("the metered usage is not in the script:\n%s", script)
	}
	if _, err := fakemodel.ParseScript("recorded.yaml", script); err != nil {
		t.Errorf("the script does not parse: %v\n%s", err, script)
	}
}

// A call the gateway refused is kept for people, not replayed: the gateway refuses it again.
func TestReplaySkipsTheGatewaysAnswers(t *testing.T) {
	exs := []gateway.Exchange{
		{Method: "POST", Path: "/anthropic/v1/messages", Request: anthReq("first", system), Status: 200, Body: "1"},
		{Method: "POST", Path: "/anthropic/v1/messages", Request: anthReq("second", system), Status: 429, Body: "refused", Gateway: true},
	}
	r := NewReplay("job_e", exs, nil, false)
	if ex, _, why := r.Answer("POST", "/anthropic/v1/messages", []byte(anthReq("first", system))); ex == nil || ex.Body != "1" {
		t.Fatalf("first: %q", why)
	}
	if d := r.Divergence(); d != "" {
		t.Errorf("the session made the model's calls: %q", d)
	}
	if _, _, why := r.Answer("POST", "/anthropic/v1/messages", []byte(anthReq("second", system))); why != "model call 2: the recording of job job_e has 1 model call, and the session makes more" {
		t.Errorf("the refused call answered from the recording: %q", why)
	}
}

// A script answers a session's calls as the fake model serving it would, on either face.
func TestScriptAnswers(t *testing.T) {
	script, err := fakemodel.ParseScript("s", []byte(`
rules:
  - match: {user: "(?i)invoice"}
    reply: {text: "billing", usage: {input_tokens: 10, output_tokens: 2}}
`))
	if err != nil {
		t.Fatal(err)
	}
	a := NewScriptAnswers(script)
	ex, up, why := a.Answer("POST", "/anthropic/v1/messages", []byte(anthReq("my invoice", system)))
	if ex == nil || up || why != "" || ex.Status != 200 || !strings.Contains(ex.Body, `"text":"billing"`) {
		t.Fatalf("anthropic: %+v %v %q", ex, up, why)
	}
	streamed := `{"model":"m","stream":true,"messages":[{"role":"user","content":"an invoice"}]}`
	ex, _, _ = a.Answer("POST", "/openai/chat/completions", []byte(streamed))
	if ex == nil || !ex.Streamed || len(ex.Chunks) != 1 || !strings.Contains(ex.Chunks[0].Data, "billing") || !strings.Contains(ex.Chunks[0].Data, "[DONE]") {
		t.Fatalf("openai stream: %+v", ex)
	}
	if a.Divergence() != "" || a.WentUpstream() != "" {
		t.Error("a script departs from nothing")
	}
}
