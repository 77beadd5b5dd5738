// Package recording is what oz0 does with a job's recorded model calls (oz0 dev keeps them): it
// replays them, answering a new run of the job call for call from the recording, offline and
// with no provider key, and it exports them as a fake model script, so a recorded run becomes a
// regression test. The gateway keeps the calls (gateway.Exchange) and the store holds them.
//
// Decisions a reader would otherwise reverse-engineer:
//   - A replayed call matches a recorded one when the method and the path under the gateway are
//     the same and the bodies are the same JSON (key order and spacing aside); headers are not
//     compared (an SDK's version or retry count may change). The live body is masked as the
//     recording was before it is compared, so a secret in a prompt matches its *** in the
//     recording.
//   - A call takes the first recorded call not yet used that matches: a session's calls in the
//     order they were made, and calls made concurrently in whatever order they arrive.
//   - The first call that matches none is the divergence: with Upstream it and every later call
//     go to the record's upstream; without, it and every later call are refused (a 400 that the
//     SDKs do not retry) and the job fails with a readable diff against the recorded call that
//     was next. A session that ends with recorded calls unused has diverged too.
//   - Calls the gateway answered itself (a refusal by a limit, an unreachable upstream: Gateway)
//     are kept for people to read, and left out of a replay: the gateway answers them again.
package recording

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/orchestrator-zero/oz0/gateway"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
)

// Decode reads a job's recorded calls as the store keeps them.
func Decode(raw []json.RawMessage) ([]gateway.Exchange, error) {
	out := make([]gateway.Exchange, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			return nil, fmt.Errorf("recorded model call %d: %w", i+1, err)
		}
	}
	return out, nil
}

// Replay answers a replayed session's calls from a job's recording: a gateway.Replay.
type Replay struct {
	job       string
	exchanges []gateway.Exchange
	mask      func([]byte) []byte
	upstream  bool

	mu       sync.Mutex
	used     []bool
	calls    int    // calls asked so far
	answered int    // calls answered from the recording
	diverged string // why the first unmatched call was refused; "" while none was
	wentLive string // with upstream: where the replay left the recording
}

// NewReplay replays the recorded calls of job. mask is what the recording was masked with (nil:
// nothing); upstream sends the calls from the first divergence on to the record's upstream.
func NewReplay(job string, exchanges []gateway.Exchange, mask func([]byte) []byte, upstream bool) *Replay {
	if mask == nil {
		mask = func(b []byte) []byte { return b }
	}
	return &Replay{job: job, exchanges: exchanges, mask: mask, upstream: upstream, used: make([]bool, len(exchanges))}
}

// Answer implements gateway.Replay.
func (r *Replay) Answer(method, path string, body []byte) (*gateway.Exchange, bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.wentLive != "" {
		return nil, true, ""
	}
	if r.diverged != "" {
		return nil, false, r.diverged
	}
	live := r.mask(body)
	next := -1
	for i := range r.exchanges {
		if r.used[i] || r.exchanges[i].Gateway { // the gateway's own answer: it answers again
			continue
		}
		if next < 0 {
			next = i
		}
		if ex := &r.exchanges[i]; ex.Method == method && ex.Path == path && (ex.Truncated || sameBody([]byte(ex.Request), live)) {
			r.used[i] = true
			if ex.Truncated {
				r.diverged = fmt.Sprintf("model call %d of the recording of job %s was not kept whole (%s), so it cannot be replayed", i+1, r.job, ex.Cut)
				return nil, false, r.diverged
			}
			r.answered++
			return ex, false, ""
		}
	}
	var why string
	if next < 0 {
		n := r.replayable()
		why = fmt.Sprintf("model call %d: the recording of job %s has %d model call%s, and the session makes more", r.calls, r.job, n, plural(n))
	} else {
		ex := &r.exchanges[next]
		// The diff shows values decoded: a secret either body escapes is masked first.
		recorded, _ := jsonutil.MaskDecoded([]byte(ex.Request), r.mask)
		now, _ := jsonutil.MaskDecoded(live, r.mask)
		why = fmt.Sprintf("model call %d differs from call %d of the recording of job %s:\n%s", r.calls, next+1, r.job,
			strings.Join(Diff(ex.Method+" "+ex.Path, method+" "+path, recorded, now), "\n"))
	}
	if r.upstream {
		r.wentLive = why
		return nil, true, ""
	}
	r.diverged = why
	return nil, false, why
}

// Divergence says how the session departed from the recording, once it has ended: the first call
// the recording could not answer, or the recorded calls it never made; "" when it made exactly
// the recorded calls, or went upstream where it departed (Upstream).
func (r *Replay) Divergence() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.diverged != "" {
		return r.diverged
	}
	if n := r.replayable(); r.wentLive == "" && r.answered < n {
		return fmt.Sprintf("the session made %d model call%s; the recording of job %s has %d", r.answered, plural(r.answered), r.job, n)
	}
	return ""
}

// replayable counts the recorded calls the model answered: those a replay answers.
func (r *Replay) replayable() int {
	n := 0
	for _, ex := range r.exchanges {
		if !ex.Gateway {
			n++
		}
	}
	return n
}

// WentUpstream says where a replay with Upstream left the recording for the upstream; "" when it
// did not.
func (r *Replay) WentUpstream() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wentLive
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// sameBody reports whether two request bodies are the same: the same JSON value, or, when either
// is not JSON, the same bytes.
func sameBody(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	va, errA := decode(a)
	vb, errB := decode(b)
	if errA != nil || errB != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("extra data")
	}
	return v, nil
}
