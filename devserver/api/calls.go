package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/devserver/conversation"
	"github.com/orchestrator-zero/oz0/devserver/recording"
	"github.com/orchestrator-zero/oz0/devserver/store"
	"github.com/orchestrator-zero/oz0/gateway"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
)

// calls answers a job's model calls with what was kept of each, read as conversations.
func (b *Backend) calls(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	cs, err := b.Store.Calls(id, 0)
	if err != nil {
		b.jobError(w, err)
		return
	}
	out := apiv1.Calls{Job: id, Calls: make([]apiv1.ModelCall, len(cs))}
	for i, c := range cs {
		out.Calls[i] = wireCall(c, i+1, b.Store.Mask)
	}
	writeJSON(w, http.StatusOK, out)
}

// call answers one model call of a job, by its event's seq.
func (b *Backend) call(w http.ResponseWriter, r *http.Request) {
	c, n, ok := b.findCall(w, r.PathValue("id"), r.PathValue("seq"))
	if ok {
		writeJSON(w, http.StatusOK, wireCall(c, n, b.Store.Mask))
	}
}

// findCall finds a job's model call by its event's seq, and its number among the job's calls.
// What is not found is answered, and ok is false.
func (b *Backend) findCall(w http.ResponseWriter, job, seqText string) (store.Call, int, bool) {
	seq, err := strconv.ParseInt(seqText, 10, 64)
	if err != nil || seq < 1 {
		writeError(w, http.StatusBadRequest, apiv1.CodeBadRequest, fmt.Sprintf("%q is not an event's seq: a model call is named by the seq of its model_call event", seqText))
		return store.Call{}, 0, false
	}
	cs, err := b.Store.Calls(job, 0)
	if err != nil {
		b.jobError(w, err)
		return store.Call{}, 0, false
	}
	for i, c := range cs {
		if c.Seq == seq {
			return c, i + 1, true
		}
	}
	writeError(w, http.StatusNotFound, apiv1.CodeNotFound, fmt.Sprintf("job %s has no model call at event %d; GET /api/v1/jobs/%s/calls lists them", job, seq, job))
	return store.Call{}, 0, false
}

// callNumber finds a job's model call by its number among the job's calls (1, 2, 3…).
func (b *Backend) callNumber(w http.ResponseWriter, job, nText string) (store.Call, int, bool) {
	n, err := strconv.Atoi(nText)
	if err != nil || n < 1 {
		writeError(w, http.StatusBadRequest, apiv1.CodeBadRequest, fmt.Sprintf("%q is not a call's number: the calls of a job are 1, 2, 3…", nText))
		return store.Call{}, 0, false
	}
	cs, err := b.Store.Calls(job, 0)
	if err != nil {
		b.jobError(w, err)
		return store.Call{}, 0, false
	}
	if n > len(cs) {
		writeError(w, http.StatusNotFound, apiv1.CodeNotFound, fmt.Sprintf("job %s has %d model call(s), not %d", job, len(cs), n))
		return store.Call{}, 0, false
	}
	return cs[n-1], n, true
}

// callDiff answers how a call's request differs from another's: ?seq= (its event) or ?n= (its
// number) of the same job, or of ?job=.
func (b *Backend) callDiff(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	to, toN, ok := b.findCall(w, id, r.PathValue("seq"))
	if !ok {
		return
	}
	q := r.URL.Query()
	otherJob := q.Get("job")
	if otherJob == "" {
		otherJob = id
	}
	var from store.Call
	var fromN int
	if q.Has("n") {
		from, fromN, ok = b.callNumber(w, otherJob, q.Get("n"))
	} else {
		from, fromN, ok = b.findCall(w, otherJob, q.Get("seq"))
	}
	if !ok {
		return
	}
	var a, c gateway.Exchange
	if !kept(w, from, otherJob, fromN, &a) || !kept(w, to, id, toN, &c) {
		return
	}
	conversation.MaskExchange(&a, b.Store.Mask)
	conversation.MaskExchange(&c, b.Store.Mask)
	d := apiv1.CallDiff{From: apiv1.CallRef{Job: otherJob, Seq: from.Seq, N: fromN}, To: apiv1.CallRef{Job: id, Seq: to.Seq, N: toN}}
	d.Lines = recording.Diff(a.Method+" "+a.Path, c.Method+" "+c.Path, []byte(a.Request), []byte(c.Request))
	d.Same = len(d.Lines) == 1 && d.Lines[0] == recording.Same
	writeJSON(w, http.StatusOK, d)
}

// kept reads a call's kept exchange; a call whose request was not kept is answered 409.
func kept(w http.ResponseWriter, c store.Call, job string, n int, ex *gateway.Exchange) bool {
	if c.Exchange == nil || json.Unmarshal(c.Exchange, ex) != nil || ex.Request == "" {
		writeError(w, http.StatusConflict, apiv1.CodeNotRecorded, fmt.Sprintf("model call %d of job %s was not kept, so it cannot be compared", n, job))
		return false
	}
	return true
}

// wireCall is a model call as the API answers it: its exchange, with a secret that shows only
// decoded masked (conversation.MaskExchange), and its conversation, masked.
func wireCall(c store.Call, n int, mask func([]byte) []byte) apiv1.ModelCall {
	mc := apiv1.ModelCall{Seq: c.Seq, N: n, Time: c.Time, Meter: c.Data}
	if c.Exchange != nil {
		mc.Exchange = c.Exchange
		var ex gateway.Exchange
		if err := json.Unmarshal(c.Exchange, &ex); err == nil {
			if conversation.MaskExchange(&ex, mask) {
				if b, err := jsonutil.Marshal(&ex); err == nil {
					mc.Exchange = b
				}
			}
			mc.Conversation = conversation.Of(&ex, mask)
		}
	}
	return mc
}
