package node

import (
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/orchestrator-zero/oz0/devserver/store"
)

// recorder writes one job's session events to the store in order, batching whatever has queued
// up while the last commit ran: one commit per event caps a chatty harness at the store's commit
// rate, a batch per commit does not. Nothing is shown before it is committed, as the live stream
// reads from the store. What the node writes to the store directly (a status a decider sets)
// comes after what is queued only once flush has returned.
type recorder struct {
	store *store.Store
	job   string
	log   *slog.Logger
	queue chan queued
	done  chan struct{}
	// lost is told of the events the store could not take (err, the first time) and of every
	// event queued after them, which are not tried: the session is stopped and its job fails.
	lost   func(events, bytes int, err error)
	failed bool // owned by run

	mu     sync.Mutex
	room   *sync.Cond
	queued int // the bytes of the events queued and not committed yet
}

// queued is an event to record, or (flushed set) a mark to close once everything before it is
// committed.
type queued struct {
	ev      store.NewEvent
	flushed chan struct{}
}

// maxBatch bounds one commit of a recorder.
const maxBatch = 1024

// maxQueuedBytes bounds the bytes of the events a recorder holds before they are committed: a
// harness that says megabytes (in pieces, harnesskit.PieceSize) waits for the store rather than
// filling the node's memory; thousands of short says fit.
const maxQueuedBytes = 1 << 20

func newRecorder(s *store.Store, job string, log *slog.Logger, lost func(events, bytes int, err error)) *recorder {
	r := &recorder{store: s, job: job, log: log, lost: lost, queue: make(chan queued, 4*maxBatch), done: make(chan struct{})}
	r.room = sync.NewCond(&r.mu)
	go r.run()
	return r
}

// add queues an event; it blocks while the queue is full, in events or in bytes, which slows
// the harness down rather than losing events.
func (r *recorder) add(typ string, data any) {
	b, ok := data.(json.RawMessage) // encoded already (sayJSON)
	if !ok {
		var err error
		if b, err = json.Marshal(data); err != nil {
			r.log.Error("event not encodable", "job", r.job, "type", typ, "err", err)
			return
		}
	}
	r.mu.Lock()
	for r.queued > 0 && r.queued+len(b) > maxQueuedBytes {
		r.room.Wait()
	}
	r.queued += len(b)
	r.mu.Unlock()
	r.queue <- queued{ev: store.NewEvent{Type: typ, Data: b, Given: true}} // made for this event
	if len(b) > maxQueuedBytes {
		// A long event (a tool's result, a call's arguments) is stored before the session goes
		// on, so that it is held only while it takes its place among the node's long lines
		// (supervisor.LongLines), not queued beside other jobs' long ones.
		r.flush()
	}
}

// committed gives back the room of events written (or failed to be).
func (r *recorder) committed(events []store.NewEvent) {
	n := 0
	for _, e := range events {
		n += len(e.Data)
	}
	r.mu.Lock()
	r.queued -= n
	r.mu.Unlock()
	r.room.Broadcast()
}

// flush returns once every event queued before it is committed (or failed to be).
func (r *recorder) flush() {
	done := make(chan struct{})
	r.queue <- queued{flushed: done}
	<-done
}

// sayJSON is a say event's data, the bytes json.Marshal writes, without reflection when the text
// needs no escaping.
func sayJSON(text string) json.RawMessage {
	if !plainJSONText(text) {
		b, _ := json.Marshal(sayData{text}) // a string always encodes
		return b
	}
	b := make([]byte, 0, len(text)+11)
	b = append(b, `{"text":"`...)
	b = append(b, text...)
	return append(b, `"}`...)
}

// plainJSONText reports whether json.Marshal writes s as it is, between quotes.
func plainJSONText(s string) bool {
	high := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		case c >= 0x80:
			high = true
		}
	}
	return !high || utf8.ValidString(s) && !strings.ContainsRune(s, '\u2028') && !strings.ContainsRune(s, '\u2029')
}

// close writes what is queued and stops.
func (r *recorder) close() {
	close(r.queue)
	<-r.done
}

func (r *recorder) run() {
	defer close(r.done)
	batch := make([]store.NewEvent, 0, maxBatch)
	for q := range r.queue {
		var flushed chan struct{}
		batch = batch[:0]
		if q.flushed != nil {
			flushed = q.flushed
		} else {
			batch = append(batch, q.ev)
		}
	drain:
		for flushed == nil && len(batch) < maxBatch {
			select {
			case q, ok := <-r.queue:
				switch {
				case !ok:
					break drain
				case q.flushed != nil:
					flushed = q.flushed // commit what came before it, then tell
				default:
					batch = append(batch, q.ev)
				}
			default:
				break drain
			}
		}
		if len(batch) > 0 {
			r.write(batch)
			r.committed(batch)
		}
		if flushed != nil {
			close(flushed)
		}
	}
}

// write commits a batch; once one could not be, the rest are only counted.
func (r *recorder) write(batch []store.NewEvent) {
	var err error
	if !r.failed {
		if _, err = r.store.AppendBatch(r.job, batch); err == nil || errors.Is(err, store.ErrClosed) {
			return // written, or the server stops under the job (which ends interrupted)
		}
		r.failed = true
		r.log.Error("events not recorded: the job fails", "job", r.job, "events", len(batch), "err", err)
	}
	n := 0
	for _, e := range batch {
		n += len(e.Data)
	}
	r.lost(len(batch), n, err)
}
