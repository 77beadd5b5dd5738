package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// heldStream is an upstream that streams an answer of three text deltas, then holds its end (the
// final usage: 10 input tokens, 5,000 output) until the test releases the call (by its
// X-Test-Call header), or its request is cancelled.
type heldStream struct {
	mu        sync.Mutex
	release   map[string]chan struct{}
	cancelled chan string // the calls whose upstream request was cancelled
}

func newHeldStream() *heldStream {
	return &heldStream{release: map[string]chan struct{}{}, cancelled: make(chan string, 100)}
}

func (h *heldStream) ch(id string) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.release[id]
	if c == nil {
		c = make(chan struct{})
		h.release[id] = c
	}
	return c
}

// releaseWhenDraining is a request hook: the held end of a call is sent once the client's request
// to the gateway has ended (its client has gone) and the gateway reads the stream for its usage
// (draining says so). The request's end alone is not enough: the gateway learns of it through a
// callback of its own on the same context, which may run after the end is sent and read.
func (h *heldStream) releaseWhenDraining(draining func() bool) func(r *http.Request) {
	return func(r *http.Request) {
		if id := r.Header.Get("X-Test-Call"); id != "" {
			c := h.ch(id)
			context.AfterFunc(r.Context(), func() {
				for deadline := time.Now().Add(liveness); !draining() && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
				close(c)
			})
		}
	}
}

func (h *heldStream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	rc := http.NewResponseController(w)
	send := func(evs ...string) {
		for _, ev := range evs {
			io.WriteString(w, ev+"\n\n")
		}
		rc.Flush()
	}
	var head, tail []string
	if strings.HasSuffix(r.URL.Path, "/v1/messages") {
		head = []string{
			`event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":1}}}`,
			`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"one"}}`,
			`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" two"}}`,
			`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" three"}}`,
			`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":0}`,
		}
		tail = []string{
			`event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":5000}}`,
			`event: message_stop` + "\n" + `data: {"type":"message_stop"}`,
		}
	} else {
		chunk := func(delta, finish string) string {
			return `data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}],"usage":null}`
		}
		head = []string{chunk(`{"role":"assistant","content":""}`, "null"), chunk(`{"content":"one"}`, "null"),
			chunk(`{"content":" two"}`, "null"), chunk(`{"content":" three"}`, "null"), chunk(`{}`, `"length"`)}
		tail = []string{`data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5000,"total_tokens":5010}}`,
			`data: [DONE]`}
	}
	send(head...)
	select {
	case <-h.ch(r.Header.Get("X-Test-Call")):
		send(tail...)
	case <-r.Context().Done():
		h.cancelled <- r.Header.Get("X-Test-Call")
	}
}

// cutCall makes a streamed call, reads its answer to its last content event and goes, before its
// end; it returns the call's status.
func cutCall(t *testing.T, e *env, face Format, key, id string) int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, h, last := e.anthropicURL()+"/v1/messages", anthHeaders(key), "content_block_stop"
	body := `{"model":"m","max_tokens":5000,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	if face == OpenAIChat {
		url, h, last = e.openaiURL()+"/chat/completions", openaiHeaders(key), `"finish_reason":"length"`
		body = `{"model":"m","max_completion_tokens":5000,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	}
	h["X-Test-Call"] = id
	resp, sr := openStream(t, ctx, url, h, body)
	if resp.StatusCode != 200 {
		return resp.StatusCode
	}
	for {
		ev, err := sr.next()
		if err != nil {
			t.Fatalf("the stream ended before its last content event: %v", err)
		}
		if strings.Contains(ev, last) {
			return 200 // the client goes here
		}
	}
}

// A client that reads a stream's whole text and goes before its end is metered the stream's usage
// as the upstream reports it at its end: the gateway reads the stream to its end for it. Before,
// it was metered message_start's 1 output token (Anthropic), or nothing at all (OpenAI, whose usage
// comes last), and 20 such calls went past limits.max_tokens unseen.
func TestCutStreamMeteredToItsEnd(t *testing.T) {
	for _, face := range Formats {
		t.Run(string(face), func(t *testing.T) {
			held := newHeldStream()
			job := "job_cut_" + string(face)
			var e *env
			e = newEnv(t, helloScript, withUpstream(held), withRequestHook(held.releaseWhenDraining(func() bool { return e.gw.draining(job) > 0 })))
			key := e.issue(job, "a", Limits{MaxTokens: 1000}, Budget{})
			if status := cutCall(t, e, face, key, "1"); status != 200 {
				t.Fatalf("the first call: %d", status)
			}
			calls := e.calls(job, 1)
			if len(calls) != 1 || !calls[0].Aborted || calls[0].AbortReason != AbortClient ||
				calls[0].Usage != (Usage{InputTokens: 10, OutputTokens: 5000}) {
				t.Fatalf("metered %+v", calls)
			}
			// The limit trips on it.
			if status := cutCall(t, e, face, key, "2"); status != 429 {
				t.Errorf("the second call past limits.max_tokens: %d", status)
			}
		})
	}
}

// The gateway reads a stream whose client has gone for DrainTimeout at most: then it cuts the
// upstream request, and meters at least one output token for each content delta the stream
// carried. With a DrainTimeout below 0, it cuts it at once.
func TestCutStreamDrainBounded(t *testing.T) {
	for _, drain := range []time.Duration{time.Millisecond, -1} {
		for _, face := range Formats {
			t.Run(string(face)+" "+drain.String(), func(t *testing.T) {
				held := newHeldStream() // never released
				e := newEnv(t, helloScript, withUpstream(held), withConfig(func(c *Config) { c.DrainTimeout = drain }))
				job := "job_drain"
				key := e.issue(job, "a", Limits{}, Budget{})
				if status := cutCall(t, e, face, key, "1"); status != 200 {
					t.Fatalf("status %d", status)
				}
				select {
				case <-held.cancelled:
				case <-time.After(liveness):
					t.Fatal("the upstream request was not cut")
				}
				want := Usage{InputTokens: 10, OutputTokens: 3} // message_start's input; the deltas
				if face == OpenAIChat {
					want.InputTokens = 0 // OpenAI says it only at the end
				}
				calls := e.calls(job, 1)
				if len(calls) != 1 || !calls[0].Aborted || calls[0].AbortReason != AbortClient || calls[0].Usage != want {
					t.Errorf("metered %+v, want usage %+v", calls, want)
				}
			})
		}
	}
}

// draining is how many of job's calls read a stream whose client has gone.
func (g *Gateway) draining(job string) int {
	js := g.job(job)
	js.mu.Lock()
	defer js.mu.Unlock()
	n := 0
	for c := range js.live {
		if c.leave.Load() == leaveDraining {
			n++
		}
	}
	return n
}

// StopDraining (the job's session has ended) cuts the streams the gateway still reads for their
// usage, which are metered with what they had.
func TestStopDraining(t *testing.T) {
	held := newHeldStream() // never released
	e := newEnv(t, helloScript, withUpstream(held))
	key := e.issue("job_stop", "a", Limits{}, Budget{})
	if status := cutCall(t, e, AnthropicMessages, key, "1"); status != 200 {
		t.Fatalf("status %d", status)
	}
	waitFor(t, "the stream to be drained", func() bool { return e.gw.draining("job_stop") == 1 })
	e.gw.StopDraining("job_stop")
	select {
	case <-held.cancelled:
	case <-time.After(liveness):
		t.Fatal("the upstream request was not cut")
	}
	calls := e.calls("job_stop", 1)
	if len(calls) != 1 || calls[0].AbortReason != AbortClient || calls[0].Usage != (Usage{InputTokens: 10, OutputTokens: 3}) {
		t.Errorf("metered %+v", calls)
	}
}
