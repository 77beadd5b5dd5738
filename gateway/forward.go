package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// skipRequestHeader reports whether a client header stays at the gateway: hop-by-hop headers, the
// session's credentials, oz0's own headers, and Accept-Encoding (the gateway reads usage from what
// it passes on, so upstreams answer in identity encoding).
func skipRequestHeader(k string) bool {
	switch k {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Expect", "Host", "Content-Length",
		"X-Api-Key", "Authorization", "Accept-Encoding":
		return true
	}
	return len(k) >= 4 && (k[:4] == "Oz0-" || k[:4] == "OZ0-" || strings.EqualFold(k[:4], "oz0-"))
}

// skipResponseHeader reports whether an upstream header stays at the gateway: hop-by-hop headers.
func skipResponseHeader(k string) bool {
	switch k {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

// connectionTokens are the headers a Connection header names, which are hop-by-hop too.
func connectionTokens(h http.Header) map[string]bool {
	vs := h["Connection"]
	if len(vs) == 0 {
		return nil
	}
	m := map[string]bool{}
	for _, v := range vs {
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				m[http.CanonicalHeaderKey(t)] = true
			}
		}
	}
	return m
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// maxWholeBody is the largest non-streamed answer read whole before it is passed on (usage is read
// from it); a larger or unsized one is copied through as it comes.
const maxWholeBody = 8 << 20

// maxCapture is the most of a copied-through answer kept for reading its usage.
const maxCapture = 16 << 20

func (c *call) forward(info reqInfo) {
	g, r := c.g, c.r
	rec := c.grant.Record
	url := rec.BaseURL(c.rt.face) + c.rt.upath
	if r.URL.RawQuery != "" {
		url += "?" + r.URL.RawQuery
	}

	req, err := http.NewRequestWithContext(c.ctx, r.Method, url, nil)
	if err != nil {
		c.fail(errorf(http.StatusInternalServerError, "api", fmt.Sprintf("oz0 gateway: the provider record %s has a bad base URL for %s", rec.Name, c.rt.face)))
		return
	}
	if up := c.upBody; up != nil {
		req.ContentLength = up.size
		req.Body, _ = up.open()
		req.GetBody = up.open // to send it again on a fresh connection
	}
	hop := connectionTokens(r.Header)
	for k, vs := range r.Header {
		if skipRequestHeader(k) || hop[k] {
			continue
		}
		req.Header[k] = vs
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // add none of Go's own
	}
	if c.tenantKey != "" {
		if c.rt.face == AnthropicMessages {
			req.Header["X-Api-Key"] = []string{c.tenantKey}
		} else {
			req.Header["Authorization"] = []string{"Bearer " + c.tenantKey}
		}
	}

	// The watchdog: no byte from upstream for this long cancels the call.
	c.wait = g.respTimeout
	if info.stream {
		c.wait = g.idle
	}
	c.watchdog = time.AfterFunc(c.wait, func() { c.cancel(errIdle) })

	resp, err := g.rt.RoundTrip(req)
	// The upstream has the body (or the call failed): the gateway's copy goes, and its room in
	// the budget; a call kept for a recording keeps its copy of the body until it ends.
	c.upBody.release()
	if c.capture == nil {
		c.hold.Release()
	}
	if err != nil {
		c.upstreamFailed(err)
		return
	}
	defer resp.Body.Close()
	c.rec.TTFB = time.Since(c.rec.Start)
	c.watchdog.Reset(g.idle)
	c.answered = true

	h := c.w.Header()
	hop = connectionTokens(resp.Header)
	for k, vs := range resp.Header {
		if skipResponseHeader(k) || hop[k] {
			continue
		}
		if c.maskKey != "" {
			for _, v := range vs {
				if strings.Contains(v, c.maskKey) {
					vs = maskValues(vs, c.maskKey)
					break
				}
			}
		}
		h[k] = vs
	}
	ok2xx := resp.StatusCode >= 200 && resp.StatusCode < 300
	sse := ok2xx && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	if k := c.capture; k != nil {
		k.ex.ContentType = resp.Header.Get("Content-Type")
		k.ex.Streamed = sse
	}
	if sse {
		c.rec.Streamed = true
		delete(h, "Content-Length")
		c.stream(resp, info)
		return
	}
	wantUsage := ok2xx && c.counted
	if resp.ContentLength >= 0 && resp.ContentLength <= maxWholeBody {
		c.whole(resp, wantUsage)
	} else {
		c.copyThrough(resp, wantUsage)
	}
}

// upstreamBody is a request body as it goes upstream: the client's bytes with the gateway's edits
// spliced in, never copied whole.
type upstreamBody struct {
	mu   sync.Mutex
	segs [][]byte // nil once released
	size int64
}

func newUpstreamBody(body []byte, edits []edit) *upstreamBody {
	if body == nil {
		return nil
	}
	u := &upstreamBody{segs: [][]byte{}}
	at := 0
	add := func(b []byte) {
		if len(b) > 0 {
			u.segs = append(u.segs, b)
			u.size += int64(len(b))
		}
	}
	for _, e := range edits {
		add(body[at:e.start])
		add(e.text)
		at = e.end
	}
	add(body[at:])
	return u
}

var errBodyReleased = errors.New("oz0 gateway: the request body was already released")

// oneWriteBody is the largest body sent upstream from one in-memory reader, which net/http's
// transport writes in the same write as the request's headers when both fit its write buffer
// (32 KiB in NewTransport). A body from a reader it does not know goes after a flush of the
// headers: one more system call, and one more wake of the upstream, on every call (as a bare
// httputil.ReverseProxy does). A larger body is read out in segments and dropped as it goes, so
// that the memory it holds is given back as the upstream has it.
const oneWriteBody = 64 << 10

// open returns a reader of the body from its start (http.Request.GetBody).
func (u *upstreamBody) open() (io.ReadCloser, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case u.segs == nil:
		return nil, errBodyReleased
	case u.size == 0:
		return http.NoBody, nil
	case u.size <= oneWriteBody:
		one := u.segs[0]
		if len(u.segs) > 1 { // the model's name edited: a copy, of a small body
			one = bytes.Join(u.segs, nil)
		}
		return io.NopCloser(bytes.NewReader(one)), nil
	}
	return &segReader{bufs: slices.Clone(net.Buffers(u.segs))}, nil
}

// release drops the body, once the upstream has it; a reader still open keeps what it has not
// read until it is closed.
func (u *upstreamBody) release() {
	if u != nil {
		u.mu.Lock()
		u.segs = nil
		u.mu.Unlock()
	}
}

// segReader reads segments, dropping each as it is read and all of them when closed (the
// transport may close it from another goroutine).
type segReader struct {
	mu   sync.Mutex
	bufs net.Buffers
}

func (s *segReader) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bufs) == 0 {
		return 0, io.EOF
	}
	return s.bufs.Read(p)
}

func (s *segReader) Close() error {
	s.mu.Lock()
	s.bufs = nil
	s.mu.Unlock()
	return nil
}

func maskValues(vs []string, key string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = strings.ReplaceAll(v, key, strings.Repeat("*", len(key)))
	}
	return out
}

// upstreamFailed answers a call whose upstream request failed before any answer came.
func (c *call) upstreamFailed(err error) {
	switch reason := c.abortReason(); reason {
	case AbortClient:
		c.aborted(reason)
		c.clientGone = true
	case AbortKilled:
		c.aborted(reason)
		c.fail(c.killedRefusal())
	case AbortIdle:
		c.aborted(reason)
		c.fail(errorf(http.StatusGatewayTimeout, "timeout", fmt.Sprintf("oz0 gateway: the upstream of record %s sent no answer in %s", c.grant.Record.Name, c.wait)))
	default:
		msg := fmt.Sprintf("oz0 gateway: cannot reach the upstream of record %s: %v", c.grant.Record.Name, err)
		if secret := c.grant.Record.Secret; secret != "" {
			msg += fmt.Sprintf("; check its base URL and the network (oz0 secret list shows it), or run on the fake model again: oz0 secret rm %s", secret)
		}
		c.fail(errorf(http.StatusBadGateway, "api", c.mask(msg)))
	}
}

// killedRefusal answers a call the kill switch stopped before its answer began: the job's, or the
// tenant's (a *killedError, which says whose).
func (c *call) killedRefusal() *gwError {
	var k *killedError
	if errors.As(context.Cause(c.ctx), &k) {
		return &gwError{status: http.StatusForbidden, kind: "permission", noRetry: true, msg: k.msg}
	}
	return errorf(http.StatusForbidden, "permission", fmt.Sprintf("oz0 gateway: job %s was killed; its calls are refused", c.grant.Job))
}

// killedMessage says, in a stream's error event, which kill switch ended it.
func (c *call) killedMessage() string {
	var k *killedError
	if errors.As(context.Cause(c.ctx), &k) {
		return k.msg
	}
	return fmt.Sprintf("oz0 gateway: job %s was killed", c.grant.Job)
}

func (c *call) aborted(reason string) {
	if !c.rec.Aborted {
		c.rec.Aborted, c.rec.AbortReason = true, reason
	}
}

// abortReason says why the call's upstream request ended early.
func (c *call) abortReason() string {
	cause := context.Cause(c.ctx)
	switch {
	case errors.Is(cause, errKilled):
		return AbortKilled
	case errors.Is(cause, errIdle):
		return AbortIdle
	case errors.Is(cause, errClientGone) || errors.Is(cause, errDrainCut) || c.r.Context().Err() != nil:
		return AbortClient
	}
	return AbortUpstream
}

func (c *call) writeHeader(status int) {
	c.answerBegins()
	c.w.WriteHeader(status)
	c.rec.Status = status
	c.wroteHeader = true
}

// clientWriteFailed notes that the client can no longer be written to, and cancels upstream.
func (c *call) clientWriteFailed() {
	c.clientGone = true
	c.cancel(errClientGone) // the first cause stays: a write cut short by Kill is the kill's
	reason := c.abortReason()
	if reason == AbortUpstream {
		reason = AbortClient
	}
	c.aborted(reason)
}

// whole passes on a sized, non-streamed answer, read whole first.
func (c *call) whole(resp *http.Response, wantUsage bool) {
	n := int(resp.ContentLength)
	var buf []byte
	var pooled *[]byte
	if n <= 32<<10 {
		pooled = bufPool.Get().(*[]byte)
		defer bufPool.Put(pooled)
		buf = (*pooled)[:n]
	} else {
		buf = make([]byte, n)
	}
	got, err := io.ReadFull(resp.Body, buf)
	if err != nil {
		// The upstream cut the answer short (or the call was cancelled): pass on what came, then
		// drop the connection as the upstream did.
		c.bodyFailed(resp.StatusCode, buf[:got], err)
		return
	}
	maskInPlace(buf, c.keyBytes)
	// The answer's usage before it is written: a client that goes meanwhile is metered it.
	if wantUsage {
		c.rec.Usage = responseUsage(buf, c.rt.face)
	}
	c.writeHeader(resp.StatusCode)
	if _, err := (clientWriter{c}).Write(buf); err != nil {
		c.clientWriteFailed()
	}
}

// bodyFailed ends a non-streamed answer whose body failed after part of it came.
func (c *call) bodyFailed(status int, part []byte, err error) {
	reason := c.abortReason()
	c.aborted(reason)
	if !c.wroteHeader {
		switch reason {
		case AbortKilled:
			// Drop what came: the job is killed.
			c.w.Header().Del("Content-Length")
			c.fail(c.killedRefusal())
			return
		case AbortClient:
			c.clientGone = true
			return
		}
		maskInPlace(part, c.keyBytes)
		c.writeHeader(status)
		clientWriter{c}.Write(part)
	}
	if reason != AbortClient {
		c.rec.Error = c.mask("the upstream answer was cut short: " + err.Error())
	}
	c.abortConn = true
}

// copyThrough passes on an unsized (or very large) non-streamed answer as it comes.
func (c *call) copyThrough(resp *http.Response, wantUsage bool) {
	pooled := bufPool.Get().(*[]byte)
	defer bufPool.Put(pooled)
	buf := *pooled
	mw := &maskWriter{w: clientWriter{c}, key: c.keyBytes}
	var captured []byte
	c.writeHeader(resp.StatusCode)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			c.watchdog.Reset(c.g.idle)
			if wantUsage {
				if len(captured)+n <= maxCapture {
					captured = append(captured, buf[:n]...)
				} else {
					wantUsage, captured = false, nil
				}
			}
			if mw.Write(buf[:n]) != nil {
				c.clientWriteFailed()
				return
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			c.aborted(c.abortReason())
			if c.rec.AbortReason != AbortClient {
				c.rec.Error = c.mask("the upstream answer was cut short: " + err.Error())
			}
			c.abortConn = true
			return
		}
	}
	if mw.Flush() != nil {
		c.clientWriteFailed()
		return
	}
	if wantUsage {
		c.rec.Usage = responseUsage(captured, c.rt.face)
	}
}

// stream passes on a stream of server-sent events event by event, flushing after each batch of
// events that arrives together, reading usage on the way and hiding the usage chunk it asked for.
// Once its client has gone, it reads the rest for its usage, writing nothing (drain.go).
func (c *call) stream(resp *http.Response, info reqInfo) {
	pooled := bufPool.Get().(*[]byte)
	defer bufPool.Put(pooled)
	buf := *pooled
	rc := http.NewResponseController(c.w)
	mw := &maskWriter{w: clientWriter{c}, key: c.keyBytes}
	sp := &sseParser{face: c.rt.face, strip: info.injected}
	c.leave.CompareAndSwap(leaveCancels, leaveRelaying)
	c.writeHeader(resp.StatusCode)
	hf := startHeaderFlush(rc)
	defer hf.stop()
	drained := 0
	relayedEnd := false // the client got the stream's last event
	for {
		n, err := resp.Body.Read(buf)
		gone := c.clientHasGone()
		if n > 0 {
			c.watchdog.Reset(c.g.idle)
			out := sp.feed(buf[:n])
			switch {
			case gone:
				if drained += n; drained > maxDrainBytes {
					c.cancel(errDrainCut)
				}
			case len(out) > 0:
				if hf.stop() != nil || mw.Write(out) != nil || flush(rc) != nil {
					c.clientLeft()
					break
				}
				if c.rec.FirstEvent == 0 {
					c.rec.FirstEvent = time.Since(c.rec.Start)
				}
				relayedEnd = sp.done
			}
		}
		if err != nil {
			hf.stop() // a client gone is seen below, in the writes
			c.rec.Usage, c.rec.StreamError = sp.metered(), sp.streamErr
			gone = c.clientHasGone()
			// A client that hangs up once it has the last event (as the SDKs do on [DONE]) may
			// cancel the upstream read before its EOF: the stream is complete all the same.
			if err == io.EOF || sp.done {
				switch {
				case !gone:
					if rest := sp.rest(); len(rest) > 0 {
						mw.Write(rest)
					}
					mw.Flush()
					rc.Flush()
				case !relayedEnd: // read to its end after the client went
					c.clientGone = true
					c.aborted(AbortClient)
				}
				return
			}
			reason := c.abortReason()
			if gone && reason == AbortUpstream {
				reason = AbortClient // the client went first
			}
			c.aborted(reason)
			switch {
			case gone || reason == AbortClient:
				c.clientGone = true
			case reason == AbortKilled:
				c.endStream(mw, rc, &gwError{kind: "permission", msg: c.killedMessage()})
			case reason == AbortIdle:
				c.endStream(mw, rc, &gwError{kind: "timeout", msg: fmt.Sprintf("oz0 gateway: the upstream of record %s sent nothing for %s", c.grant.Record.Name, c.g.idle)})
			default:
				// The upstream cut the stream: the client's connection is cut the same way.
				c.rec.Error = c.mask("the upstream stream was cut short: " + err.Error())
				c.abortConn = true
			}
			return
		}
	}
}

// streamHeaderWait is how long a stream's headers wait for its first events, to go out with them
// in one write. An upstream sends its first event with its headers or right after (Anthropic's
// message_start, OpenAI's first chunk); a flush of the headers alone was one more write to the
// client and one more wake of it, on every stream. An upstream slower than this gets its headers
// to the client on their own, as before.
const streamHeaderWait = 20 * time.Millisecond

// headerFlush flushes a stream's headers after streamHeaderWait, unless stopped first.
type headerFlush struct {
	t     *time.Timer
	fired chan struct{} // closed once the timer's flush is done
	err   error         // the timer's flush's, once fired is closed
	done  bool
}

func startHeaderFlush(rc *http.ResponseController) *headerFlush {
	hf := &headerFlush{fired: make(chan struct{})}
	hf.t = time.AfterFunc(streamHeaderWait, func() {
		hf.err = flush(rc)
		close(hf.fired)
	})
	return hf
}

// stop stops the timer, or waits for its flush when it has fired: from then on the handler may
// write. It returns the flush's error, which says the client has gone.
func (hf *headerFlush) stop() error {
	if hf.done {
		return nil
	}
	hf.done = true
	if hf.t.Stop() {
		return nil
	}
	<-hf.fired
	return hf.err
}

// flush sends what has been written to the client; a writer that cannot flush is not an error.
func flush(rc *http.ResponseController) error {
	if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// endStream ends a begun stream with an error event of the gateway's own.
func (c *call) endStream(mw *maskWriter, rc *http.ResponseController, e *gwError) {
	c.rec.Error = e.msg
	mw.Flush()
	clientWriter{c}.Write(e.event(c.rt.face))
	rc.Flush()
}

// responseUsage reads the usage of a non-streamed answer.
func responseUsage(body []byte, face Format) Usage {
	var u Usage
	v := memberValue(body, "usage")
	if len(v) == 0 || v[0] != '{' {
		return u
	}
	if face == OpenAIChat {
		return openaiUsage(v)
	}
	anthropicUsage(v, &u)
	return u
}

// anthropicUsage sets on u the counts Anthropic's usage object v has, leaving the others (a
// message_delta's usage leaves out the counts that do not change).
func anthropicUsage(v []byte, u *Usage) {
	topLevel(v, func(m member) bool {
		n, ok := atoi(v[m.start:m.end])
		if !ok {
			return true
		}
		switch {
		case m.keyIs("input_tokens"):
			u.InputTokens = n
		case m.keyIs("output_tokens"):
			u.OutputTokens = n
		case m.keyIs("cache_read_input_tokens"):
			u.CacheReadTokens = n
		case m.keyIs("cache_creation_input_tokens"):
			u.CacheCreationTokens = n
		}
		return true
	})
}

// openaiUsage reads OpenAI's usage object v: prompt_tokens counts the cached tokens, which the
// gateway counts apart.
func openaiUsage(v []byte) Usage {
	var u Usage
	var cached int64
	topLevel(v, func(m member) bool {
		val := v[m.start:m.end]
		switch {
		case m.keyIs("prompt_tokens"):
			u.InputTokens, _ = atoi(val)
		case m.keyIs("completion_tokens"):
			u.OutputTokens, _ = atoi(val)
		case m.keyIs("prompt_tokens_details"):
			if len(val) > 0 && val[0] == '{' {
				cached, _ = atoi(memberValue(val, "cached_tokens"))
			}
		}
		return true
	})
	u.CacheReadTokens = cached
	u.InputTokens -= cached
	return u
}
