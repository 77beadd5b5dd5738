package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
)

const helloScript = `
rules:
  - name: hello
    reply:
      text: "Hello from the fake."
      usage: {input_tokens: 30, output_tokens: 10}
`

// errorShape decodes an error body of either provider: type, message, and OpenAI's code.
func errorShape(t *testing.T, face Format, body []byte) (typ, msg, code string) {
	t.Helper()
	if face == AnthropicMessages {
		var e struct {
			Type  string `json:"type"`
			Error struct{ Type, Message string }
		}
		if err := json.Unmarshal(body, &e); err != nil || e.Type != "error" || e.Error.Type == "" {
			t.Fatalf("not Anthropic's error shape: %s", body)
		}
		return e.Error.Type, e.Error.Message, ""
	}
	var e struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Message == "" || !strings.Contains(string(body), `"param":null`) {
		t.Fatalf("not OpenAI's error shape: %s", body)
	}
	if e.Error.Code != nil {
		code = *e.Error.Code
	}
	return e.Error.Type, e.Error.Message, code
}

func TestBadKey(t *testing.T) {
	e := newEnv(t, helloScript)
	good := e.issue("job_k", "a", Limits{}, Budget{})
	for _, tc := range []struct {
		name   string
		face   Format
		header map[string]string
	}{
		{"anthropic no key", AnthropicMessages, map[string]string{"anthropic-version": "2023-06-01"}},
		{"anthropic wrong key", AnthropicMessages, anthHeaders("oz0s_nope")},
		{"anthropic tenant key", AnthropicMessages, anthHeaders(tenantKey)},
		{"anthropic bearer wrong", AnthropicMessages, map[string]string{"Authorization": "Bearer oz0s_nope", "anthropic-version": "2023-06-01"}},
		{"openai no key", OpenAIChat, map[string]string{"content-type": "application/json"}},
		{"openai wrong key", OpenAIChat, openaiHeaders("oz0s_nope")},
		{"openai revoked key", OpenAIChat, openaiHeaders(good + "x")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, body := e.anthropicURL()+"/v1/messages", anthBody
			if tc.face == OpenAIChat {
				url, body = e.openaiURL()+"/chat/completions", openaiBody
			}
			r := do(t, "POST", url, tc.header, body)
			if r.status != 401 {
				t.Fatalf("status %d, want 401: %s", r.status, r.body)
			}
			typ, msg, code := errorShape(t, tc.face, r.body)
			if tc.face == AnthropicMessages && typ != "authentication_error" || tc.face == OpenAIChat && (typ != "invalid_request_error" || code != "invalid_api_key") {
				t.Errorf("error %s/%s: %s", typ, code, r.body)
			}
			if strings.Contains(msg, "oz0s_nope") {
				t.Errorf("the message echoes the key: %s", msg)
			}
		})
	}
	// The SDKs see an authentication error.
	_, err := e.anthropicClient("oz0s_nope").Messages.New(context.Background(), anthropic.MessageNewParams{Model: "m", MaxTokens: 1,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))}})
	var aerr *anthropic.Error
	if !errors.As(err, &aerr) || aerr.StatusCode != 401 || aerr.Type() != "authentication_error" {
		t.Errorf("anthropic SDK: %v", err)
	}
	_, err = e.openaiClient("oz0s_nope").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}})
	var oerr *openai.Error
	if !errors.As(err, &oerr) || oerr.StatusCode != 401 || oerr.Code != "invalid_api_key" {
		t.Errorf("openai SDK: %v", err)
	}
	if n := len(e.fake.Requests()); n != 0 {
		t.Errorf("the upstream got %d requests", n)
	}
}

func TestOz0Headers(t *testing.T) {
	e := newEnv(t, helloScript)
	key := e.issue("job_h", "acme-triage", Limits{}, Budget{})
	for _, tc := range []struct {
		name        string
		job, agent  string
		status      int
		wantRefused string
	}{
		{"absent: taken from the key", "", "", 200, ""},
		{"both match", "job_h", "acme-triage", 200, ""},
		{"job only, matches", "job_h", "", 200, ""},
		{"job mismatch", "job_other", "acme-triage", 403, "Oz0-Job"},
		{"agent mismatch", "job_h", "other-agent", 403, "Oz0-Agent"},
		{"empty job header", "-", "", 403, "Oz0-Job"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.meter.Reset()
			for _, face := range Formats {
				h := anthHeaders(key)
				url, body := e.anthropicURL()+"/v1/messages", anthBody
				if face == OpenAIChat {
					h = openaiHeaders(key)
					url, body = e.openaiURL()+"/chat/completions", openaiBody
				}
				switch tc.job {
				case "":
				case "-":
					h["Oz0-Job"] = ""
				default:
					h["Oz0-Job"] = tc.job
				}
				if tc.agent != "" {
					h["Oz0-Agent"] = tc.agent
				}
				r := do(t, "POST", url, h, body)
				if r.status != tc.status {
					t.Fatalf("%s: status %d, want %d: %s", face, r.status, tc.status, r.body)
				}
				if tc.status == 403 {
					typ, msg, _ := errorShape(t, face, r.body)
					if face == AnthropicMessages && typ != "permission_error" || !strings.Contains(msg, tc.wantRefused) {
						t.Errorf("%s: %s", face, r.body)
					}
				}
			}
			calls := e.calls("job_h", 2)
			for _, c := range calls {
				if c.Refused != tc.wantRefused {
					t.Errorf("metered refused %q, want %q", c.Refused, tc.wantRefused)
				}
			}
		})
	}
	// The SDK with the headers the harness protocol asks for.
	_, err := e.anthropicClient(key).Messages.New(context.Background(), anthropic.MessageNewParams{Model: "m", MaxTokens: 1,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))}},
		aoption.WithHeader("Oz0-Job", "job_x"), aoption.WithHeader("Oz0-Agent", "acme-triage"))
	var aerr *anthropic.Error
	if !errors.As(err, &aerr) || aerr.StatusCode != 403 || aerr.Type() != "permission_error" {
		t.Errorf("anthropic SDK with a wrong Oz0-Job: %v", err)
	}
	// Oz0 headers never reach the upstream.
	for _, r := range e.fake.Requests() {
		for k := range r.Header {
			if strings.HasPrefix(strings.ToLower(k), "oz0-") {
				t.Errorf("upstream got %s", k)
			}
		}
	}
}

func TestHeadersPassThrough(t *testing.T) {
	e := newEnv(t, helloScript)
	key := e.issue("job_p", "a", Limits{}, Budget{})
	h := anthHeaders(key)
	h["anthropic-version"] = "2023-06-01"
	h["anthropic-beta"] = "prompt-caching-2024-07-31,token-efficient-tools-2025-02-19"
	h["X-Custom-Thing"] = "kept"
	h["Oz0-Job"] = "job_p"
	h["Connection"] = "keep-alive, X-Hop"
	h["X-Hop"] = "dropped"
	r := do(t, "POST", e.anthropicURL()+"/v1/messages?beta=true", h, anthBody)
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	reqs := e.upstreamRequests("/v1/messages")
	if len(reqs) != 1 {
		t.Fatalf("%d upstream requests", len(reqs))
	}
	up := reqs[0]
	if up.Query != "beta=true" || up.Path != "/v1/messages" {
		t.Errorf("upstream path %s?%s", up.Path, up.Query)
	}
	if got := up.Header.Values("Anthropic-Version"); len(got) != 1 || got[0] != "2023-06-01" {
		t.Errorf("anthropic-version %q", got)
	}
	if got := up.Header.Values("Anthropic-Beta"); len(got) != 1 || got[0] != "prompt-caching-2024-07-31,token-efficient-tools-2025-02-19" {
		t.Errorf("anthropic-beta %q", got)
	}
	if up.Header.Get("X-Custom-Thing") != "kept" || up.Header.Get("X-Hop") != "" || up.Header.Get("Oz0-Job") != "" {
		t.Errorf("upstream headers %v", up.Header)
	}
	if up.Header.Get("X-Api-Key") != tenantKey || strings.Contains(fmt.Sprint(up.Header), key) {
		t.Errorf("upstream key headers %v", up.Header)
	}
	if string(up.Body) != anthBody {
		t.Errorf("body changed: %s", up.Body)
	}
	// The response's headers come back (the fake's request-id among them).
	if r.header.Get("Request-Id") == "" || r.header.Get("Content-Type") != "application/json" {
		t.Errorf("response headers %v", r.header)
	}
}

func TestMaxStepsConcurrent(t *testing.T) {
	for _, face := range Formats {
		t.Run(string(face), func(t *testing.T) {
			e := newEnv(t, helloScript)
			const k, n = 10, 50
			job := "job_steps_" + string(face)
			key := e.issue(job, "acme-triage", Limits{MaxSteps: k}, Budget{})
			var ok, refused atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			errs := make(chan error, n)
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					var err error
					if face == AnthropicMessages {
						_, err = e.anthropicClient(key).Messages.New(context.Background(), anthropic.MessageNewParams{Model: "fake-model", MaxTokens: 10,
							Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))}})
						var aerr *anthropic.Error
						if errors.As(err, &aerr) && aerr.StatusCode == 429 && aerr.Type() == "rate_limit_error" &&
							strings.Contains(aerr.Message, fmt.Sprintf("limits.max_steps of %d reached for job %s", k, job)) {
							refused.Add(1)
							return
						}
					} else {
						_, err = e.openaiClient(key).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "fake-model",
							Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}})
						var oerr *openai.Error
						if errors.As(err, &oerr) && oerr.StatusCode == 429 && oerr.Code == "rate_limit_exceeded" &&
							strings.Contains(oerr.Message, fmt.Sprintf("limits.max_steps of %d reached for job %s", k, job)) {
							refused.Add(1)
							return
						}
					}
					if err != nil {
						errs <- err
						return
					}
					ok.Add(1)
				}()
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Errorf("unexpected error: %v", err)
			}
			if ok.Load() != k || refused.Load() != n-k {
				t.Errorf("%d admitted, %d refused; want %d and %d", ok.Load(), refused.Load(), k, n-k)
			}
			if got := len(e.fake.Requests()); got != k {
				t.Errorf("the upstream got %d calls, want %d", got, k)
			}
			// The SDKs did not retry the refusals (x-should-retry: false): one metered call each.
			calls := e.calls(job, n)
			var steps []int
			nref := 0
			for _, c := range calls {
				if c.Refused == "limits.max_steps" {
					nref++
					if c.Status != 429 {
						t.Errorf("refused call status %d", c.Status)
					}
				} else {
					steps = append(steps, c.Step)
				}
			}
			if len(calls) != n || nref != n-k {
				t.Errorf("metered %d calls, %d refused", len(calls), nref)
			}
			seen := map[int]bool{}
			for _, s := range steps {
				seen[s] = true
			}
			for s := 1; s <= k; s++ {
				if !seen[s] {
					t.Errorf("step %d missing: %v", s, steps)
				}
			}
		})
	}
}

func TestTokenBudget(t *testing.T) {
	for _, face := range Formats {
		t.Run(string(face), func(t *testing.T) {
			e := newEnv(t, helloScript) // 40 tokens a call
			job := "job_tok_" + string(face)
			// Two sessions of one job share its budget.
			k1 := e.issue(job, "a", Limits{}, Budget{Tokens: 100})
			k2 := e.issue(job, "b", Limits{}, Budget{Tokens: 100})
			url, body, hdr := e.anthropicURL()+"/v1/messages", anthBody, anthHeaders
			if face == OpenAIChat {
				url, body, hdr = e.openaiURL()+"/chat/completions", openaiBody, openaiHeaders
			}
			for i, k := range []string{k1, k2, k1} { // 40, 80, 120 tokens
				if r := do(t, "POST", url, hdr(k), body); r.status != 200 {
					t.Fatalf("call %d: %d %s", i+1, r.status, r.body)
				}
			}
			r := do(t, "POST", url, hdr(k2), body)
			if r.status != 429 || r.header.Get("X-Should-Retry") != "false" {
				t.Fatalf("over budget: %d %v %s", r.status, r.header, r.body)
			}
			typ, msg, code := errorShape(t, face, r.body)
			if face == AnthropicMessages && typ != "rate_limit_error" || face == OpenAIChat && (typ != "insufficient_quota" || code != "insufficient_quota") {
				t.Errorf("error shape %s/%s", typ, code)
			}
			if !strings.Contains(msg, "budget.tokens of 100 reached for job "+job+" (120 used)") {
				t.Errorf("message %q", msg)
			}
			if u := e.gw.JobUsage(job); u.Usage.Total() != 120 || u.Steps != 3 {
				t.Errorf("JobUsage %+v", u)
			}
		})
	}
}

func TestSessionTokenLimit(t *testing.T) {
	e := newEnv(t, helloScript)
	k1 := e.issue("job_st", "a", Limits{MaxTokens: 50}, Budget{})
	k2 := e.issue("job_st", "a", Limits{MaxTokens: 50}, Budget{}) // another session: its own limit
	for i, want := range []int{200, 200, 429} {
		if r := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(k1), anthBody); r.status != want {
			t.Fatalf("call %d: %d %s", i+1, r.status, r.body)
		} else if want == 429 && !strings.Contains(string(r.body), "limits.max_tokens of 50 reached for job job_st") {
			t.Errorf("message: %s", r.body)
		}
	}
	if r := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(k2), anthBody); r.status != 200 {
		t.Errorf("the other session: %d", r.status)
	}
}

func TestCostBudget(t *testing.T) {
	prices := &Prices{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	e := newEnv(t, `
rules:
  - reply:
      text: "priced"
      usage: {input_tokens: 1000, output_tokens: 500, cache_read_input_tokens: 2000, cache_creation_input_tokens: 400}
`, withRecord(func(r *Record) { r.Prices = prices }))
	// 1000*3 + 500*15 + 2000*0.3 + 400*3.75 = 3000+7500+600+1500 = 12600 µ$ = $0.0126 a call.
	key := e.issue("job_cost", "a", Limits{}, Budget{CostUSD: 0.03})
	client := e.anthropicClient(key)
	call := func() error {
		_, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "fake-model", MaxTokens: 10,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))}})
		return err
	}
	for i := range 3 { // $0.0126, $0.0252, $0.0378
		if err := call(); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	err := call()
	var aerr *anthropic.Error
	if !errors.As(err, &aerr) || aerr.StatusCode != 429 || !strings.Contains(aerr.Message, "budget.cost_usd of $0.03 reached for job job_cost ($0.0378") {
		t.Fatalf("over the cost budget: %v", err)
	}
	calls := e.calls("job_cost", 4)
	for _, c := range calls[:3] {
		if !c.Priced || fmt.Sprintf("%.6f", c.CostUSD) != "0.012600" {
			t.Errorf("cost %v priced %v", c.CostUSD, c.Priced)
		}
	}
	if calls[3].Refused != "budget.cost_usd" {
		t.Errorf("refused %q", calls[3].Refused)
	}
}

func TestKillClosesLiveStream(t *testing.T) {
	long := strings.Repeat("word ", 400)
	e := newEnv(t, `
rules:
  - reply:
      text: "`+long+`"
      stream_delay: 20ms
`)
	for _, face := range Formats {
		t.Run(string(face), func(t *testing.T) {
			job := "job_kill_" + string(face)
			key := e.issue(job, "a", Limits{}, Budget{})
			first, done := e.streamInBackground(face, key)
			select {
			case <-first:
			case <-time.After(liveness):
				t.Fatal("the stream did not start")
			}
			killed := time.Now()
			if n := e.gw.Kill(job); n != 1 {
				t.Errorf("Kill found %d live calls, want 1", n)
			}
			var r streamEnd
			select {
			case r = <-done:
			case <-time.After(liveness):
				t.Fatal("the stream did not end after Kill")
			}
			// How soon is BenchmarkKillToStreamEnd's to measure; here, that Kill cut the stream: the
			// client's error says so, and it got only some of the events.
			t.Logf("the stream ended %v after Kill", r.at.Sub(killed))
			if r.err == nil || !strings.Contains(r.err.Error(), "was killed") {
				t.Errorf("the client's stream error: %v", r.err)
			}
			if r.n > 20 {
				t.Errorf("the client got %d events: the stream was not cut", r.n)
			}
			calls := e.calls(job, 1)
			if len(calls) != 1 || !calls[0].Aborted || calls[0].AbortReason != AbortKilled || !calls[0].Streamed {
				t.Errorf("metered %+v", calls)
			}
			// The next call is refused: the key is revoked.
			url, body, hdr := e.anthropicURL()+"/v1/messages", anthBody, anthHeaders
			if face == OpenAIChat {
				url, body, hdr = e.openaiURL()+"/chat/completions", openaiBody, openaiHeaders
			}
			if resp := do(t, "POST", url, hdr(key), body); resp.status != 401 {
				t.Errorf("after Kill: %d %s", resp.status, resp.body)
			}
		})
	}
}

// noRevoke is a Resolver that cannot revoke: Kill must refuse the job's calls by itself.
type noRevoke struct{ r *MemResolver }

func (n noRevoke) Resolve(ctx context.Context, key string) (*Grant, error) {
	return n.r.Resolve(ctx, key)
}

func TestKillWithoutRevoker(t *testing.T) {
	keys := NewMemResolver()
	e := newEnv(t, helloScript, withConfig(func(c *Config) { c.Resolver = noRevoke{keys} }))
	e.keys = keys
	key := e.issue("job_k2", "a", Limits{}, Budget{})
	if r := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), anthBody); r.status != 200 {
		t.Fatalf("before: %d", r.status)
	}
	e.gw.Kill("job_k2")
	for _, path := range []string{"/v1/messages", "/v1/messages/count_tokens"} {
		r := do(t, "POST", e.anthropicURL()+path, anthHeaders(key), anthBody)
		if typ, msg, _ := errorShape(t, AnthropicMessages, r.body); r.status != 403 || typ != "permission_error" || !strings.Contains(msg, "job job_k2 was killed") {
			t.Errorf("%s after Kill: %d %s", path, r.status, r.body)
		}
	}
	if !e.gw.JobUsage("job_k2").Killed {
		t.Error("JobUsage does not say killed")
	}
}

func TestKillNonStreamedInFlight(t *testing.T) {
	e := newEnv(t, `
rules:
  - reply: {text: slow, delay: 5s}
`)
	key := e.issue("job_k3", "a", Limits{}, Budget{})
	done := make(chan rawResponse, 1)
	go func() { done <- do(t, "POST", e.openaiURL()+"/chat/completions", openaiHeaders(key), openaiBody) }()
	deadline := time.Now().Add(liveness)
	for e.gw.JobUsage("job_k3").Live == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	e.gw.Kill("job_k3")
	r := <-done // a 403 that says so, not the upstream's answer 5 s later
	if typ, msg, _ := errorShape(t, OpenAIChat, r.body); r.status != 403 || typ != "invalid_request_error" || !strings.Contains(msg, "was killed") {
		t.Errorf("%d %s", r.status, r.body)
	}
}

func TestNoBuffering(t *testing.T) {
	// An upstream that sends event N+1 only once the client has seen event N: a gateway that
	// buffers deadlocks here.
	seen := make(chan int)
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.WriteHeader(200)
		rc := http.NewResponseController(w)
		rc.Flush()
		events := []string{
			`event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":11,"output_tokens":1}}}`,
			`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"one"}}`,
			`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" two"}}`,
			`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":0}`,
			`event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}`,
			`event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}`,
			`event: message_stop` + "\n" + `data: {"type":"message_stop"}`,
		}
		for i, ev := range events {
			io.WriteString(w, ev+"\n\n")
			rc.Flush()
			if i < len(events)-1 {
				select {
				case got := <-seen:
					if got != i {
						panic(fmt.Sprintf("client saw event %d, upstream sent %d", got, i))
					}
				case <-time.After(liveness):
					return // the client never saw event i: the gateway held it
				case <-r.Context().Done():
					return
				}
			}
		}
	})
	e := newEnv(t, helloScript, withUpstream(upstream))
	key := e.issue("job_nb", "a", Limits{}, Budget{})
	resp, sr := openStream(t, context.Background(), e.anthropicURL()+"/v1/messages", anthHeaders(key),
		`{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	for i := range 8 {
		ev, err := sr.next()
		if err != nil {
			t.Fatalf("event %d: %v (the gateway buffered?)", i, err)
		}
		if i < 7 {
			seen <- i
		}
		_ = ev
	}
	calls := e.calls("job_nb", 1)
	// message_start's input, the LAST message_delta's output.
	if len(calls) != 1 || calls[0].Usage != (Usage{InputTokens: 11, OutputTokens: 5}) {
		t.Errorf("metered %+v", calls)
	}
}

func TestSlowStreamEventByEvent(t *testing.T) {
	// The fake with a slow stream: each event reaches the client long before the next is sent.
	e := newEnv(t, `
rules:
  - reply: {text: "one two three four five six seven eight nine ten eleven twelve", stream_delay: 150ms}
`)
	key := e.issue("job_slow", "a", Limits{}, Budget{})
	_, sr := openStream(t, context.Background(), e.openaiURL()+"/chat/completions", openaiHeaders(key),
		`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	// (TestNoBuffering proves the same without timing; here a slow real upstream: a gateway that
	// buffered would deliver the events together at the end.)
	var prev time.Time
	var close []string
	for i := 0; ; i++ {
		ev, err := sr.next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		now := time.Now()
		if i > 0 {
			if gap := now.Sub(prev); gap < 50*time.Millisecond {
				close = append(close, fmt.Sprintf("%d-%d: %v", i-1, i, gap))
			}
		}
		prev = now
		if strings.Contains(ev, "[DONE]") {
			break
		}
		if strings.Contains(ev, `"choices":[]`) {
			t.Errorf("the client sees the usage chunk it did not ask for: %s", ev)
		}
	}
	if len(close) > 1 { // one late event may be caught up by the next on a busy machine
		t.Errorf("events sent 150ms apart upstream reached the client together: %v", close)
	}
}

func TestUpstreamErrorsUnmodified(t *testing.T) {
	e := newEnv(t, `
rules:
  - name: limited
    match: {user: limited}
    reply: {error: {kind: rate_limit, retry_after: 7s}}
  - name: overloaded
    match: {user: overloaded}
    reply: {error: {kind: overloaded}}
  - name: midstream
    match: {user: midstream}
    reply: {text: "a b c d e f g h", error: {kind: overloaded, after: 3}}
`)
	key := e.issue("job_err", "a", Limits{}, Budget{})
	for _, tc := range []struct {
		face Format
		user string
	}{
		{AnthropicMessages, "limited"}, {AnthropicMessages, "overloaded"},
		{OpenAIChat, "limited"}, {OpenAIChat, "overloaded"},
	} {
		t.Run(string(tc.face)+" "+tc.user, func(t *testing.T) {
			body := fmt.Sprintf(`{"model":"fake-model","max_tokens":10,"messages":[{"role":"user","content":%q}]}`, tc.user)
			gwURL, direct, hdr, directHdr := e.anthropicURL()+"/v1/messages", e.up.URL+"/v1/messages", anthHeaders(key), anthHeaders(tenantKey)
			if tc.face == OpenAIChat {
				gwURL, direct, hdr, directHdr = e.openaiURL()+"/chat/completions", e.up.URL+"/v1/chat/completions", openaiHeaders(key), openaiHeaders(tenantKey)
			}
			want := do(t, "POST", direct, directHdr, body)
			got := do(t, "POST", gwURL, hdr, body)
			if got.status != want.status || string(got.body) != string(want.body) || got.header.Get("Content-Type") != want.header.Get("Content-Type") ||
				got.header.Get("Retry-After") != want.header.Get("Retry-After") || got.header.Get("Retry-After-Ms") != want.header.Get("Retry-After-Ms") {
				t.Errorf("%s %s: through the gateway %d %v %s\ndirect %d %v %s", tc.face, tc.user, got.status, got.header, got.body, want.status, want.header, want.body)
			}
			if want.status < 400 {
				t.Errorf("the fake did not fail: %d", want.status)
			}
		})
	}
	// An error event mid-stream passes through, and is noted.
	body := `{"model":"fake-model","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"midstream"}]}`
	want := do(t, "POST", e.up.URL+"/v1/messages", anthHeaders(tenantKey), body)
	got := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), body)
	if string(got.body) != string(want.body) || !strings.Contains(string(got.body), "event: error") {
		t.Errorf("mid-stream error:\n got %s\nwant %s", got.body, want.body)
	}
	calls := e.calls("job_err", 5)
	last := calls[len(calls)-1]
	if last.StreamError != "overloaded_error" || last.Status != 200 || last.Usage.InputTokens == 0 {
		t.Errorf("metered %+v", last)
	}
	for _, c := range calls[:4] {
		if c.Status < 400 || c.Usage != (Usage{}) {
			t.Errorf("metered error call %+v", c)
		}
	}
}

func TestTenantKeyMaskedInUpstreamError(t *testing.T) {
	// An upstream that echoes the key it got, verbatim, in a header and in an error body; and
	// in a stream.
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		k := r.Header.Get("X-Api-Key")
		if k == "" {
			k = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"your key is %s\"}}]}\n\n", k)
			fmt.Fprint(w, "data: [DONE]\n\n")
			return
		}
		body := fmt.Sprintf(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key %s (really: %s)"}}`, k, k)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo", "key="+k)
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.WriteHeader(401)
		io.WriteString(w, body)
	})
	e := newEnv(t, helloScript, withUpstream(upstream))
	key := e.issue("job_mask", "a", Limits{}, Budget{})
	r := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), anthBody)
	stars := strings.Repeat("*", len(tenantKey))
	wantBody := fmt.Sprintf(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key %s (really: %s)"}}`, stars, stars)
	if r.status != 401 || string(r.body) != wantBody || r.header.Get("X-Echo") != "key="+stars {
		t.Errorf("%d %v\n%s", r.status, r.header, r.body)
	}
	r = do(t, "POST", e.openaiURL()+"/chat/completions", openaiHeaders(key), `{"model":"m","stream":true,"messages":[]}`)
	if !strings.Contains(string(r.body), "your key is "+stars) {
		t.Errorf("stream: %s", r.body)
	}
	// The cleanup of newEnv checks that the key reached no client and no log line.
}

func TestPlaceholderTenantKeyNotMasked(t *testing.T) {
	// A one-letter key, as a local model that wants some key is given, still goes upstream; but
	// masking it would replace that letter in every answer, so it is not masked.
	var got string
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		got = r.Header.Get("X-Api-Key")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo", "key="+got)
		io.WriteString(w, `{"type":"message","content":[{"type":"text","text":"xylophone box"}],"usage":{"input_tokens":1,"output_tokens":2}}`)
	})
	e := newEnv(t, helloScript, withUpstream(upstream))
	e.secrets["FAKE_KEY"] = "x"
	key := e.issue("job_placeholder", "a", Limits{}, Budget{})
	r := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), anthBody)
	if got != "x" {
		t.Errorf("the upstream got key %q, want the placeholder x", got)
	}
	if r.status != 200 || !strings.Contains(string(r.body), "xylophone box") || r.header.Get("X-Echo") != "key=x" {
		t.Errorf("the answer was changed: %d %v\n%s", r.status, r.header, r.body)
	}
}

func TestMaskWriterAcrossWrites(t *testing.T) {
	key := []byte("sk-SECRET-123")
	text := "a sk-SECRET-123 b sk-SECRET-12 c sk-SECRET-123sk-SECRET-123 end sk-SEC"
	for split := 1; split < 8; split++ {
		var out strings.Builder
		mw := &maskWriter{w: &out, key: key}
		data := []byte(text)
		for i := 0; i < len(data); i += split {
			j := min(i+split, len(data))
			mw.Write(append([]byte(nil), data[i:j]...))
		}
		mw.Flush()
		want := strings.ReplaceAll(text, string(key), strings.Repeat("*", len(key)))
		if out.String() != want {
			t.Errorf("split %d:\n got %q\nwant %q", split, out.String(), want)
		}
	}
}

// With no drain (DrainTimeout < 0), a client that goes cancels the upstream request at once
// (drain_test.go has the drain).
func TestClientDisconnectCancelsUpstream(t *testing.T) {
	cancelled := make(chan struct{}, 1)
	var e *env
	observe := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.fake.ServeHTTP(w, r)
		if r.Context().Err() != nil {
			cancelled <- struct{}{}
		}
	})
	e = newEnv(t, `
rules:
  - reply: {text: "one two three four five six seven eight nine ten eleven twelve thirteen", stream_delay: 200ms}
`, withUpstream(observe), withConfig(func(c *Config) { c.DrainTimeout = -1 }))
	key := e.issue("job_dc", "a", Limits{}, Budget{})
	ctx, cancel := context.WithCancel(context.Background())
	_, sr := openStream(t, ctx, e.anthropicURL()+"/v1/messages", anthHeaders(key),
		`{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if _, err := sr.next(); err != nil {
		t.Fatal(err)
	}
	cancel() // the client goes away
	select {
	case <-cancelled:
	case <-time.After(liveness):
		t.Fatal("the upstream request was not cancelled")
	}
	calls := e.calls("job_dc", 1)
	if len(calls) != 1 || !calls[0].Aborted || calls[0].AbortReason != AbortClient || calls[0].Usage.InputTokens == 0 {
		t.Errorf("metered %+v", calls)
	}
}

func TestUpstreamCutStream(t *testing.T) {
	e := newEnv(t, `
rules:
  - reply: {text: "one two three four five six", error: {kind: cut, after: 3}}
`)
	key := e.issue("job_cut", "a", Limits{}, Budget{})
	stream := e.anthropicClient(key).Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "fake-model", MaxTokens: 10,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))}})
	n := 0
	for stream.Next() {
		n++
	}
	if stream.Err() == nil || n != 2 { // message_start, content_block_start (the SDK skips the ping)
		t.Errorf("after %d events: %v", n, stream.Err())
	}
	calls := e.calls("job_cut", 1)
	if len(calls) != 1 || !calls[0].Aborted || calls[0].AbortReason != AbortUpstream || calls[0].Usage.InputTokens == 0 {
		t.Errorf("metered %+v", calls)
	}
}

func TestIdleTimeout(t *testing.T) {
	e := newEnv(t, `
rules:
  - reply: {text: "one two three four five six seven eight nine ten eleven twelve", stream_delay: 2s}
`, withConfig(func(c *Config) { c.IdleTimeout = 150 * time.Millisecond }))
	key := e.issue("job_idle", "a", Limits{}, Budget{})
	// The stream would take 24 s; the idle timeout ends it with a timeout_error event.
	r := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key),
		`{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if !strings.Contains(string(r.body), "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"timeout_error\"") {
		t.Errorf("stream: %s", r.body)
	}
	calls := e.calls("job_idle", 1)
	if len(calls) != 1 || calls[0].AbortReason != AbortIdle {
		t.Errorf("metered %+v", calls)
	}
}

func TestModelMappingAndFormats(t *testing.T) {
	e := newEnv(t, helloScript, withRecord(func(r *Record) {
		r.Models = map[string]string{"claude-sonnet-4-5": "fake-model"}
		r.Formats = []Format{AnthropicMessages}
	}))
	key := e.issue("job_map", "a", Limits{}, Budget{})
	body := `{"max_tokens":10,"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hello"}]}`
	if r := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), body); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	up := e.upstreamRequests("/v1/messages")[0]
	if string(up.Body) != `{"max_tokens":10,"model":"fake-model","messages":[{"role":"user","content":"hello"}]}` {
		t.Errorf("upstream body %s", up.Body)
	}
	c := e.calls("job_map", 1)[0]
	if c.Model != "claude-sonnet-4-5" || c.UpstreamModel != "fake-model" {
		t.Errorf("metered model %q upstream %q", c.Model, c.UpstreamModel)
	}
	// The record takes no openai-chat.
	r := do(t, "POST", e.openaiURL()+"/chat/completions", openaiHeaders(key), openaiBody)
	if _, msg, _ := errorShape(t, OpenAIChat, r.body); r.status != 403 || !strings.Contains(msg, "takes anthropic-messages, not openai-chat") {
		t.Errorf("%d %s", r.status, r.body)
	}
}

func TestRoutes(t *testing.T) {
	e := newEnv(t, helloScript)
	key := e.issue("job_r", "a", Limits{}, Budget{})
	for _, tc := range []struct {
		name         string
		method, path string
		hdr          map[string]string
		status       int
	}{
		{"anthropic models", "GET", "/anthropic/v1/models", anthHeaders(key), 200},
		{"anthropic model", "GET", "/anthropic/v1/models/fake-model", anthHeaders(key), 200},
		{"openai models", "GET", "/openai/models", openaiHeaders(key), 200},
		{"openai v1 models", "GET", "/openai/v1/models", openaiHeaders(key), 200},
		{"openai model", "GET", "/openai/models/fake-model", openaiHeaders(key), 200},
		{"openai v1 chat", "POST", "/openai/v1/chat/completions", openaiHeaders(key), 200},
		{"anthropic messages by GET", "GET", "/anthropic/v1/messages", anthHeaders(key), 405},
		{"anthropic complete", "POST", "/anthropic/v1/complete", anthHeaders(key), 404},
		{"openai responses", "POST", "/openai/responses", openaiHeaders(key), 404},
		{"elsewhere", "GET", "/elsewhere", nil, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := ""
			if tc.method == "POST" {
				body = openaiBody
			}
			r := do(t, tc.method, e.srv.URL+"/gateway"+tc.path, tc.hdr, body)
			if r.status != tc.status {
				t.Errorf("%s %s: %d, want %d: %s", tc.method, tc.path, r.status, tc.status, r.body)
			}
			if tc.status >= 400 {
				face := AnthropicMessages
				if strings.HasPrefix(tc.path, "/openai") {
					face = OpenAIChat
				}
				errorShape(t, face, r.body)
			}
		})
	}
	if r := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), strings.Repeat("x", 100)); r.status != 400 {
		t.Errorf("a body that is not JSON goes upstream as it is: %d %s", r.status, r.body)
	}
}

func TestMissingSecret(t *testing.T) {
	e := newEnv(t, helloScript, withRecord(func(r *Record) { r.Secret = "NOT_SET" }))
	key := e.issue("job_ns", "a", Limits{}, Budget{})
	r := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), anthBody)
	if _, msg, _ := errorShape(t, AnthropicMessages, r.body); r.status != 500 || !strings.Contains(msg, "the secret NOT_SET is not set") {
		t.Errorf("%d %s", r.status, r.body)
	}
}

func TestUnreachableUpstream(t *testing.T) {
	e := newEnv(t, helloScript, withRecord(func(r *Record) {
		r.BaseURLs = map[Format]string{AnthropicMessages: "http://127.0.0.1:1", OpenAIChat: "http://127.0.0.1:1/v1"}
	}))
	key := e.issue("job_un", "a", Limits{}, Budget{})
	r := do(t, "POST", e.openaiURL()+"/chat/completions", openaiHeaders(key), openaiBody)
	if typ, msg, _ := errorShape(t, OpenAIChat, r.body); r.status != 502 || typ != "server_error" || !strings.Contains(msg, "cannot reach the upstream of record fake") {
		t.Errorf("%d %s", r.status, r.body)
	}
}

func TestKillStalledClient(t *testing.T) {
	// A client that stops reading while the upstream streams fast: the gateway is blocked writing
	// to it when Kill comes, and must still end the call at once.
	big := strings.Repeat("x", 64<<10)
	var written atomic.Int64 // what the upstream has written: it stops growing once the gateway is stuck
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		rc := http.NewResponseController(w)
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n")
		rc.Flush()
		for r.Context().Err() == nil {
			n, err := io.WriteString(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\""+big+"\"}}\n\n")
			written.Add(int64(n))
			if err != nil {
				return
			}
			rc.Flush()
		}
	})
	e := newEnv(t, helloScript, withUpstream(upstream))
	key := e.issue("job_stall", "a", Limits{}, Budget{})
	_, sr := openStream(t, context.Background(), e.anthropicURL()+"/v1/messages", anthHeaders(key),
		`{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if _, err := sr.next(); err != nil {
		t.Fatal(err)
	}
	// Stop reading, and wait for the buffers between the gateway and the client to fill: the
	// gateway then blocks writing, and the upstream's count stops growing.
	deadline := time.Now().Add(liveness)
	for last, still := int64(-1), 0; still < 20; {
		if time.Now().After(deadline) {
			t.Fatal("the upstream never stopped writing: nothing blocks the gateway")
		}
		time.Sleep(5 * time.Millisecond)
		if n := written.Load(); n == last {
			still++
		} else {
			last, still = n, 0
		}
	}
	killed := time.Now()
	if n := e.gw.Kill("job_stall"); n != 1 {
		t.Fatalf("Kill found %d live calls", n)
	}
	// The upstream streams until its request is cancelled: only Kill ends the call.
	deadline = killed.Add(liveness)
	for len(e.meter.Job("job_stall")) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	t.Logf("the call ended %v after Kill", time.Since(killed))
	if cs := e.meter.Job("job_stall"); len(cs) != 1 || cs[0].AbortReason != AbortKilled {
		t.Errorf("metered %+v", cs)
	}
}

// liveness bounds a wait for something that must happen, so that a broken gateway fails a test
// rather than hanging it; far above what a loaded machine takes. How fast things happen is for
// the benchmarks (BenchmarkKillToStreamEnd).
const liveness = 30 * time.Second

// blockingMeter holds the meter goroutine in its first Record until released.
type blockingMeter struct {
	MemMeter
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (m *blockingMeter) Record(c Call) {
	m.once.Do(func() {
		close(m.entered)
		<-m.release
	})
	m.MemMeter.Record(c)
}

// The meter runs after the client has its answer: a meter that blocks (a store waiting for its
// commit) delays no answer, and a session's calls still reach it in the order they were made.
func TestMeterOffTheAnswersPath(t *testing.T) {
	m := &blockingMeter{entered: make(chan struct{}), release: make(chan struct{})}
	e := newEnv(t, helloScript, withConfig(func(c *Config) { c.Meter = m }))
	key := e.issue("job_m", "agent", Limits{}, Budget{})
	const n = 50
	for i := range n {
		r := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), anthBody)
		if r.status != 200 {
			t.Fatalf("call %d: %d %s", i+1, r.status, r.body)
		}
		if i == 0 {
			<-m.entered // the first call is in the meter, which is stuck there from now on
		}
	}
	if got := len(m.Job("job_m")); got != 0 {
		t.Fatalf("%d calls metered while the meter was blocked", got)
	}
	close(m.release)
	e.gw.Flush()
	calls := m.Job("job_m")
	if len(calls) != n {
		t.Fatalf("%d calls metered, want %d", len(calls), n)
	}
	for i, c := range calls {
		if c.Step != i+1 {
			t.Fatalf("metered call %d is step %d: out of order", i+1, c.Step)
		}
	}
}

// batchMeter records the batches a BatchMeter gets.
type batchMeter struct {
	mu      sync.Mutex
	batches [][]Call
}

func (m *batchMeter) Record(c Call) { m.RecordBatch([]Call{c}) }

func (m *batchMeter) RecordBatch(cs []Call) {
	m.mu.Lock()
	m.batches = append(m.batches, append([]Call(nil), cs...))
	m.mu.Unlock()
}

// With a linger, calls are metered in batches, every one, in order.
func TestMeterLingerBatches(t *testing.T) {
	m := &batchMeter{}
	e := newEnv(t, helloScript, withConfig(func(c *Config) { c.Meter = m; c.MeterLinger = 20 * time.Millisecond }))
	key := e.issue("job_l", "agent", Limits{}, Budget{})
	const n = 30
	for i := range n {
		if r := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), anthBody); r.status != 200 {
			t.Fatalf("call %d: %d", i+1, r.status)
		}
	}
	e.gw.Flush()
	m.mu.Lock()
	defer m.mu.Unlock()
	step := 0
	for _, b := range m.batches {
		for _, c := range b {
			if step++; c.Step != step {
				t.Fatalf("call %d metered as step %d", step, c.Step)
			}
		}
	}
	if step != n {
		t.Errorf("%d calls metered, want %d", step, n)
	}
}

// A header quoted in a refusal is cut on a character, never inside one.
func TestQuoteShortCutsOnACharacter(t *testing.T) {
	long := strings.Repeat("é", 100) // 2 bytes each: a cut at a byte count could split one
	got := quoteShort(long)
	if !utf8.ValidString(got) || strings.Contains(got, `\x`) {
		t.Errorf("quoteShort cut inside a character: %s", got)
	}
	if want := strconv.Quote(strings.Repeat("é", 79) + "…"); got != want { // 80 characters, the mark one of them
		t.Errorf("quoteShort = %s, want %s", got, want)
	}
	if got := quoteShort("job_x"); got != `"job_x"` {
		t.Errorf("quoteShort(short) = %s", got)
	}
}

// A harness that knows the tenant key and sends it in what the gateway logs and meters (the
// model's name, an Oz0 header the refusal quotes) has it masked there, whether the call went
// upstream (the key was looked up) or was refused before (it was not).
func TestTenantKeyMaskedInWhatTheRequestSaid(t *testing.T) {
	e := newEnv(t, helloScript)
	key := e.issue("job_said", "a", Limits{MaxSteps: 1}, Budget{})
	stars := strings.Repeat("*", len(tenantKey))
	body := `{"model":"M1-` + tenantKey + `","max_tokens":100,"messages":[{"role":"user","content":"hello"}]}`
	if r := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), body); r.status != 200 {
		t.Fatalf("the first call: %d %s", r.status, r.body)
	}
	if r := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), body); r.status != 429 && r.status != 403 {
		t.Fatalf("the second call, over max_steps: %d %s", r.status, r.body)
	}
	h := anthHeaders(key)
	h["Oz0-Job"] = tenantKey + tenantKey // longer than a quote keeps: masked before it is cut
	r := do(t, "POST", e.anthropicURL()+"/v1/messages", h, anthBody)
	if r.status != 403 || !strings.Contains(string(r.body), stars[:40]) {
		t.Errorf("an Oz0-Job of the key: %d %s", r.status, r.body)
	}
	calls := e.calls("job_said", 3)
	for _, c := range calls[:2] {
		if c.Model != "M1-"+stars {
			t.Errorf("metered model %q, want the key masked", c.Model)
		}
	}
	if !strings.Contains(calls[2].Error, stars[:40]) {
		t.Errorf("metered error %q, want the header quoted, masked", calls[2].Error)
	}
	e.gw.Flush()
	if got := strings.Count(e.logs.String(), "model=M1-"+stars); got != 2 {
		t.Errorf("%d log lines with the model masked, want 2:\n%s", got, e.logs.String())
	}
	// The cleanup of newEnv checks that the key reached no client, no log line, no metered call.
}

// With Config.Mask (a dev server's secret store's masker), the tenant's other secrets are masked
// in what the gateway logs and meters of a request too.
func TestConfigMaskMasksWhatTheRequestSaid(t *testing.T) {
	const other = "hunter2-another-secret"
	e := newEnv(t, helloScript, withConfig(func(c *Config) {
		c.Mask = func(b []byte) []byte { return bytes.ReplaceAll(b, []byte(other), []byte("***")) }
	}))
	key := e.issue("job_other", "a", Limits{}, Budget{})
	body := `{"model":"M1-` + other + `","max_tokens":100,"messages":[{"role":"user","content":"hello"}]}`
	if r := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), body); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	h := anthHeaders(key)
	h["Oz0-Agent"] = other
	if r := do(t, "POST", e.anthropicURL()+"/v1/messages", h, anthBody); r.status != 403 || strings.Contains(string(r.body), other) {
		t.Errorf("an Oz0-Agent of a secret: %d %s", r.status, r.body)
	}
	calls := e.calls("job_other", 2)
	e.gw.Flush()
	if calls[0].Model != "M1-***" || strings.Contains(calls[1].Error, other) || strings.Contains(e.logs.String(), other) {
		t.Errorf("metered %q, %q; log:\n%s", calls[0].Model, calls[1].Error, e.logs.String())
	}
}
