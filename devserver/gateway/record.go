package gateway

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Recording and replay. A grant with Recording set keeps each call that went upstream as an
// Exchange (Call.Exchange): the body its client sent, and the answer as the client got it, a
// stream write by write with the time of each. No header of the request is kept (the session key
// travels in one), and the answer is kept after the tenant key was masked in it, so neither key is
// ever in an Exchange. A grant with a Replay answers the session's calls from a recording instead:
// the gateway admits each call as always (limits, steps, kill), then asks the Replay, and serves
// its answer, goes upstream, or refuses the call with the Replay's reason.

// MaxExchangeBytes bounds one kept call, request and answer together: a larger call is kept as
// Truncated, without either.
const MaxExchangeBytes = 8 << 20

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
	// Truncated: the call was over MaxExchangeBytes, and neither its request nor its answer is kept.
	Truncated bool `json:"truncated,omitempty"`
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
	start time.Time
	ex    Exchange
	size  int
	body  []byte
}

func newCapture(c *call, request []byte) *capture {
	k := &capture{start: c.rec.Start}
	k.ex.Method, k.ex.Path, k.ex.Query = c.r.Method, c.r.URL.Path, c.r.URL.RawQuery
	k.add(len(request))
	if !k.ex.Truncated {
		k.ex.Request = string(request)
	}
	return k
}

// add counts n more bytes; past the bound the exchange is truncated.
func (k *capture) add(n int) {
	k.size += n
	if k.size > MaxExchangeBytes && !k.ex.Truncated {
		k.ex = Exchange{Method: k.ex.Method, Path: k.ex.Path, Query: k.ex.Query, Streamed: k.ex.Streamed, Truncated: true}
		k.body = nil
	}
}

// wrote keeps a write to the client.
func (k *capture) wrote(p []byte) {
	if k.ex.Truncated || len(p) == 0 {
		return
	}
	if k.add(len(p)); k.ex.Truncated {
		return
	}
	if k.ex.Streamed {
		k.ex.Chunks = append(k.ex.Chunks, Chunk{AtMS: float64(time.Since(k.start).Microseconds()) / 1000, Data: string(p)})
	} else {
		k.body = append(k.body, p...)
	}
}

// exchange is the call's Exchange once it has ended, with the usage it was metered with.
func (k *capture) exchange(status int, usage Usage) *Exchange {
	ex := k.ex
	ex.Status = status
	if !ex.Truncated && !ex.Streamed {
		ex.Body = string(k.body)
	}
	if usage != (Usage{}) {
		ex.Usage = &usage
	}
	return &ex
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
			msg: "oz0 replay: the recording did not keep this call (it was over the size bound of a recorded call)"})
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
