package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/render"
	"github.com/orchestrator-zero/oz0/devserver/store"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
)

// feed is GET /api/v1/feed (see apiv1.FeedSnapshot): the store's change feed and, with ?job=, the
// job's live stream, over one server-sent-events stream. Every message is read after the one
// before it was, in one goroutine, so a client that applies them in order never goes back in time.
func (b *Backend) feed(w http.ResponseWriter, r *http.Request) {
	filter, ok := listFilter(w, r)
	if !ok {
		return
	}
	after, ok := afterSeq(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	// The watch starts before the snapshot is read, so that no change falls between the two.
	watch, err := b.Store.Watch(ctx)
	if err != nil {
		b.storeError(w, err)
		return
	}
	defer watch.Close()
	var job *jobText // the followed job's text, with events
	var events <-chan store.Event
	if id := r.URL.Query().Get("job"); id != "" {
		j, err := b.Store.GetJob(id)
		if err != nil {
			b.jobError(w, err)
			return
		}
		// From the first event even when resuming: a say's text depends on the says before it.
		sub, err := b.Store.Subscribe(ctx, id, 0)
		if err != nil {
			b.jobError(w, err)
			return
		}
		defer sub.Close()
		job, events = newJobText(j.Agent), sub.C
	}
	out := newSSE(w)
	snapshot := func() error {
		jobs, err := b.Store.ListJobs(filter)
		if err != nil {
			return err
		}
		pending, err := b.Store.ListApprovals(store.ApprovalPending)
		if err != nil {
			return err
		}
		return out.send(apiv1.FeedSnapshot, "", apiv1.FeedState{Jobs: wireJobs(jobs), Approvals: wireApprovals(pending)})
	}
	if err := snapshot(); err != nil {
		return
	}
	for {
		var err error
		select {
		case c, ok := <-watch.C:
			if !ok {
				return
			}
			err = b.sendChange(out, c, snapshot)
		case ev, ok := <-events:
			if !ok {
				events = nil // the job has ended; its record's changes still come
				continue
			}
			text := job.render(ev)
			if ev.Seq > after {
				err = out.send(apiv1.FeedEvent, strconv.FormatInt(ev.Seq, 10), apiv1.FeedEventData{Event: wireEvent(ev), Text: text})
			}
		case <-ctx.Done():
			return
		case <-b.Stopping:
			return
		}
		if err != nil {
			return
		}
	}
}

// sendChange sends the record a change names, as it is now; a lost change sends a new snapshot.
func (b *Backend) sendChange(out *sse, c store.Change, snapshot func() error) error {
	switch c.Kind {
	case store.ChangeJob:
		j, err := b.Store.GetJob(c.ID)
		if err != nil {
			return err
		}
		return out.send(apiv1.FeedJob, "", wireJob(j))
	case store.ChangeApproval:
		a, err := b.Store.ApprovalSummary(c.ID) // as the snapshot's list: long arguments clipped
		if err != nil {
			return err
		}
		return out.send(apiv1.FeedApproval, "", wireApproval(a))
	case store.ChangeEvalRun:
		if b.Evals == nil {
			return nil
		}
		id, _ := strconv.ParseInt(c.ID, 10, 64)
		run, err := b.Evals.Run(id)
		if errors.Is(err, store.ErrNotFound) {
			return nil // gone past the runs kept
		}
		if err != nil {
			return err
		}
		run.Report = nil // the page reads it when it shows the run
		return out.send(apiv1.FeedEvalRun, "", run)
	case store.ChangeLost:
		return snapshot()
	}
	return nil
}

// jobText renders a job's events as `oz0 run` writes them, event by event.
type jobText struct {
	buf bytes.Buffer
	r   *render.Stream
}

func newJobText(agent string) *jobText {
	t := &jobText{}
	t.r = render.New(&t.buf, agent)
	return t
}

// render returns the text of one event: `oz0 run` ends an open say line before its note that the
// job waits for approval, and at the job's end.
func (t *jobText) render(ev store.Event) string {
	t.buf.Reset()
	e := wireEvent(ev)
	if e.Type == apiv1.EventStatus {
		var st apiv1.StatusData
		if json.Unmarshal(e.Data, &st) == nil && (st.Status == apiv1.StatusWaitingForApproval || st.Status.Terminal()) {
			t.r.Close()
		}
	}
	_ = t.r.Event(e) // an event the renderer cannot read shows no text, as in `oz0 run`'s stream
	return t.buf.String()
}

// sse writes server-sent events, each flushed as it is written.
type sse struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf []byte
}

func newSSE(w http.ResponseWriter) *sse {
	sseHead(w)
	return &sse{w: w, rc: http.NewResponseController(w)}
}

// sseHead starts a server-sent events answer: its headers (no cache, no proxy buffering), 200.
func sseHead(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
}

func (s *sse) send(event, id string, v any) error {
	data, err := jsonutil.Marshal(v)
	if err != nil {
		return err
	}
	b := s.buf[:0]
	if id != "" {
		b = append(append(append(b, "id: "...), id...), '\n')
	}
	b = append(append(append(b, "event: "...), event...), '\n')
	b = append(append(append(b, "data: "...), bytes.TrimRight(data, "\n")...), "\n\n"...)
	s.buf = b
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}
