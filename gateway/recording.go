package gateway

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Recording and replay. A grant with Recording set keeps each call that went upstream as an
// Exchange (Call.Exchange): the body its client sent, and the answer as the client got it, a
// stream write by write with the time of each; and each call it refused after reading the body,
// with its refusal (Gateway). No header of the request is kept (the session key
// travels in one), and the answer is kept after the tenant key was masked in it, so neither key is
// ever in an Exchange. A grant with a Replay answers the session's calls from a recording instead:
// the gateway admits each call as always (limits, steps, kill), then asks the Replay, and serves
// its answer, goes upstream, or refuses the call with the Replay's reason.

// MaxExchangeBytes bounds one kept call, request and answer together. What does not fit is cut,
// never silently: the exchange is Truncated (a replay cannot answer it) and Cut says what was cut.
// A request over maxRequestKept is kept with its longest strings clipped (each clip marked in the
// text), so the conversation still reads; an answer is kept until the call reaches the bound.
const MaxExchangeBytes = 8 << 20

// maxRequestKept is the most of a request kept, leaving the answer room within MaxExchangeBytes.
const maxRequestKept = MaxExchangeBytes - 1<<20

// Exchange is one call as its client saw it.
type Exchange struct {
	Method      string  `json:"method"`
	Path        string  `json:"path"` // under the gateway, as the client asked: /anthropic/v1/messages
	Query       string  `json:"query,omitempty"`
	Request     string  `json:"request"` // the body the client sent
	Status      int     `json:"status"`
	ContentType string  `json:"content_type,omitempty"`
	Streamed    bool    `json:"streamed,omitempty"`
	Body        string  `json:"body,omitempty"`   // an answer that was not streamed
	Chunks      []Chunk `json:"chunks,omitempty"` // a streamed answer, write by write
	// Truncated: the call is not kept whole (over MaxExchangeBytes, or past its job's bound);
	// Cut says what is missing. A replay cannot answer it.
	Truncated bool `json:"truncated,omitempty"`
	// Cut says what of the call was not kept and why, for people; "" when it is whole.
	Cut string `json:"cut,omitempty"`
	// Gateway: the gateway answered the call itself (a refusal, an unreachable upstream), so the
	// answer is its, not the model's. A replay and a script leave such calls out.
	Gateway bool `json:"gateway,omitempty"`
	// Usage is the tokens the call was metered with, when it had any. The answer as the client got
	// it may not say them: on an OpenAI stream whose client did not ask for include_usage, the
	// gateway asked and hid the usage chunk. A replay meters these.
	Usage *Usage `json:"usage,omitempty"`
}

// Chunk is one write of a streamed answer: complete server-sent events, as they were flushed.
type Chunk struct {
	AtMS float64 `json:"at_ms"` // since the call began, in milliseconds
	Data string  `json:"data"`
}

// Replay answers the calls of a session from a recording (Grant.Replay). The gateway asks it once
// for each call it admits, with the method, the path under the gateway and the body as the client
// sent them, from the call's goroutine: it must be safe for concurrent use.
type Replay interface {
	// Answer returns the recorded answer to the call; or nil and upstream, to send the call to
	// the record's upstream as usual; or nil and why the recording cannot answer it, which the
	// gateway answers as a 400 in the face's shape (not to be retried).
	Answer(method, path string, body []byte) (ex *Exchange, upstream bool, why string)
}

// capture keeps what a call's client got, for its Exchange.
type capture struct {
	start   time.Time
	ex      Exchange
	size    int
	body    []byte
	cut     []string // what was cut, for Exchange.Cut
	dropped int      // bytes of the answer not kept
}

func newCapture(c *call, request []byte) *capture {
	k := &capture{start: c.rec.Start}
	k.ex.Method, k.ex.Path, k.ex.Query = c.r.Method, c.r.URL.Path, c.r.URL.RawQuery
	if len(request) <= maxRequestKept {
		k.ex.Request = string(request)
	} else {
		var note string
		k.ex.Request, note = clipBody(request, maxRequestKept)
		k.ex.Truncated = true
		k.cut = append(k.cut, fmt.Sprintf("the request is %s, over the %s kept of a request: %s", SizeText(len(request)), SizeText(maxRequestKept), note))
	}
	k.size = len(k.ex.Request)
	return k
}

// wrote keeps a write to the client, while the call is within its bound; past it, the rest of
// the answer is counted, not kept.
func (k *capture) wrote(p []byte) {
	if len(p) == 0 {
		return
	}
	if k.dropped > 0 || k.size+len(p) > MaxExchangeBytes {
		if !k.ex.Streamed && k.dropped == 0 { // a body keeps what fits; a stream keeps whole writes
			n := max(0, MaxExchangeBytes-k.size)
			k.body = append(k.body, p[:n]...)
			k.size += n
			p = p[n:]
		}
		k.dropped += len(p)
		k.ex.Truncated = true
		return
	}
	k.size += len(p)
	if k.ex.Streamed {
		k.ex.Chunks = append(k.ex.Chunks, Chunk{AtMS: float64(time.Since(k.start).Microseconds()) / 1000, Data: string(p)})
	} else {
		k.body = append(k.body, p...)
	}
}

// refusal keeps the gateway's own answer to the call: a refusal or an error.
func (k *capture) refusal(contentType string, body []byte) {
	k.ex.Gateway, k.ex.ContentType, k.ex.Streamed = true, contentType, false
	k.ex.Chunks, k.body = nil, append(k.body[:0], body...)
}

// exchange is the call's Exchange once it has ended, with the usage it was metered with.
func (k *capture) exchange(status int, usage Usage) *Exchange {
	ex := k.ex
	ex.Status = status
	if !ex.Streamed {
		ex.Body = string(k.body)
	}
	if usage != (Usage{}) {
		ex.Usage = &usage
	}
	cut := k.cut
	if k.dropped > 0 {
		cut = append(cut, fmt.Sprintf("the last %s of the answer were not kept: a kept call is at most %s", SizeText(k.dropped), SizeText(MaxExchangeBytes)))
	}
	ex.Cut = strings.Join(cut, "; ")
	return &ex
}

// SizeText writes a size as people read it: 512 bytes, 7 MiB, 10.5 MiB.
func SizeText(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return strings.TrimSuffix(strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64), ".0") + " KiB"
	}
	return strings.TrimSuffix(strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64), ".0") + " MiB"
}

// clientWriter is what a call writes its answer's body through: the client, and the capture
// when the call is kept.
type clientWriter struct{ c *call }

func (w clientWriter) Write(p []byte) (int, error) {
	n, err := w.c.w.Write(p)
	if k := w.c.capture; k != nil {
		k.wrote(p[:n])
	}
	return n, err
}

// answerFromRecording serves a recorded answer: its status, content type and body, or its stream
// chunk by chunk, each flushed; it is metered with the recorded usage, else (a recording made
// before Exchange kept it) the usage read from the answer as from an upstream's.
func (c *call) answerFromRecording(ex *Exchange) {
	c.rec.Replayed = true
	if ex.Truncated {
		c.fail(&gwError{status: http.StatusBadRequest, kind: "invalid_request", noRetry: true,
			msg: "oz0 replay: the recording did not keep this call whole (" + ex.Cut + ")"})
		return
	}
	c.answered = true
	if k := c.capture; k != nil {
		k.ex.ContentType, k.ex.Streamed = ex.ContentType, ex.Streamed
	}
	h := c.w.Header()
	if ex.ContentType != "" {
		h.Set("Content-Type", ex.ContentType)
	}
	c.rec.TTFB = time.Since(c.rec.Start)
	ok2xx := ex.Status >= 200 && ex.Status < 300
	out := clientWriter{c}
	if ex.Streamed {
		c.rec.Streamed = true
		rc := http.NewResponseController(c.w)
		sp := &sseParser{face: c.rt.face}
		c.writeHeader(ex.Status)
		whole := true
		for _, ch := range ex.Chunks {
			sp.feed([]byte(ch.Data))
			if _, err := out.Write([]byte(ch.Data)); err != nil || flush(rc) != nil {
				c.clientWriteFailed()
				whole = false
				break
			}
			if c.rec.FirstEvent == 0 {
				c.rec.FirstEvent = time.Since(c.rec.Start)
			}
		}
		c.rec.Usage, c.rec.StreamError = sp.usage, sp.streamErr
		if ex.Usage != nil && whole { // a client gone midway is metered with what it was sent
			c.rec.Usage = *ex.Usage
		}
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(ex.Body)))
	c.writeHeader(ex.Status)
	if _, err := out.Write([]byte(ex.Body)); err != nil {
		c.clientWriteFailed()
		return
	}
	if ok2xx && c.counted {
		c.rec.Usage = responseUsage([]byte(ex.Body), c.rt.face)
		if ex.Usage != nil {
			c.rec.Usage = *ex.Usage
		}
	}
}

// replay asks the grant's Replay for the call; it reports whether the call is answered (from the
// recording, or refused), and false to send it upstream.
func (c *call) replay(rp Replay, body []byte) bool {
	ex, upstream, why := rp.Answer(c.r.Method, c.r.URL.Path, body)
	switch {
	case ex != nil:
		c.answerFromRecording(ex)
		return true
	case upstream:
		return false
	}
	c.refuse("replay", &gwError{status: http.StatusBadRequest, kind: "invalid_request", noRetry: true, msg: fmt.Sprintf("oz0 replay: %s", why)})
	return true
}
