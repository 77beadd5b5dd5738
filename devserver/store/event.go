package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
)

// Event types: the control API's (apiv1 documents each with its data). Type is a string so that
// the dev server can add types without touching the store. What the store does itself with them:
// it writes every EventStatus, never Append, one for each status change in the same transaction as
// the change, and a status event with a terminal status is a job's last (a live stream ends after
// it; Append refuses the job from then on); it adds an EventModelCall's tokens and cost to the
// job's Usage in the same transaction, and counts it in Usage.ModelCalls unless "refused" is set
// (a refused call never reached a model); and it keeps an EventSession's data as the job's
// Session, and an EventError's traceback (its data's "traceback", an array of lines) as the job's
// Traceback, in the same transaction.
const (
	EventStatus             = apiv1.EventStatus
	EventSay                = apiv1.EventSay
	EventPermissionRequest  = apiv1.EventPermissionRequest
	EventPermissionDecision = apiv1.EventPermissionDecision
	EventToolResult         = apiv1.EventToolResult
	EventModelCall          = apiv1.EventModelCall
	EventStrayOutput        = apiv1.EventStrayOutput
	EventViolation          = apiv1.EventViolation
	EventLog                = apiv1.EventLog
	EventStderr             = apiv1.EventStderr
	EventResult             = apiv1.EventResult
	EventError              = apiv1.EventError
	EventSpan               = apiv1.EventSpan
	EventSession            = apiv1.EventSession
)

// MaxData is the largest JSON value (event data, job input or output) the store takes: the
// protocol's 8 MiB line, twice over.
const MaxData = 16 << 20

// Event is one entry of a job's ordered event log.
type Event struct {
	Job  string          `json:"job"`
	Seq  int64           `json:"seq"`  // 1, 2, 3… per job, assigned by the store, without gaps
	Time time.Time       `json:"time"` // the commit's time, UTC; never decreases along a job's events
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// NewEvent is an event to append.
type NewEvent struct {
	Type string
	Data json.RawMessage // JSON; empty means null
	// Given hands Data to the store, which keeps it rather than a copy: the caller made it for
	// this event and never changes it. A long event (a tool's result: megabytes) is then held
	// once, by the store, while it is written and sent to the live stream.
	Given bool
}

// statusData is the data of a status event.
type statusData = apiv1.StatusData

// Terminal reports whether e is its job's last event: a status event with a terminal status.
func (e Event) Terminal() bool {
	if e.Type != EventStatus {
		return false
	}
	var d statusData
	return json.Unmarshal(e.Data, &d) == nil && d.Status.Terminal()
}

func validType(t string) bool {
	if len(t) == 0 || len(t) > 64 || t[0] < 'a' || t[0] > 'z' {
		return false
	}
	for i := 1; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

type pendingEvent struct {
	typ      string
	data     json.RawMessage
	usage    *usageDelta
	exchange json.RawMessage
}

// session says whether the event is the job's session start, which the job keeps.
func (pe pendingEvent) session() bool { return pe.typ == EventSession }

// traceback is the traceback of an error event, which the job keeps; nil for another event, or
// an error without one.
func (pe pendingEvent) traceback() json.RawMessage {
	if pe.typ != EventError || !bytes.Contains(pe.data, []byte(`"traceback"`)) {
		return nil
	}
	var d struct {
		Traceback json.RawMessage `json:"traceback"`
	}
	if json.Unmarshal(pe.data, &d) != nil || len(d.Traceback) == 0 || d.Traceback[0] != '[' {
		return nil
	}
	return d.Traceback
}

type usageDelta struct {
	calls                                   int64
	input, output, cacheRead, cacheCreation int64
	cost                                    float64
}

func (u *usageDelta) add(v *usageDelta) {
	u.calls += v.calls
	u.input += v.input
	u.output += v.output
	u.cacheRead += v.cacheRead
	u.cacheCreation += v.cacheCreation
	u.cost += v.cost
}

func modelCallUsage(data []byte) *usageDelta {
	if u, refused, ok := scanUsage(data); ok {
		if !refused {
			u.calls = 1
		}
		return &u
	}
	return modelCallUsageJSON(data)
}

// modelCallUsageJSON is modelCallUsage by encoding/json, for what scanUsage does not read.
func modelCallUsageJSON(data []byte) *usageDelta {
	var m struct {
		InputTokens         int64   `json:"input_tokens"`
		OutputTokens        int64   `json:"output_tokens"`
		CacheReadTokens     int64   `json:"cache_read_input_tokens"`
		CacheCreationTokens int64   `json:"cache_creation_input_tokens"`
		CostUSD             float64 `json:"cost_usd"`
		Refused             string  `json:"refused"`
	}
	if json.Unmarshal(data, &m) != nil {
		return &usageDelta{calls: 1}
	}
	u := &usageDelta{input: m.InputTokens, output: m.OutputTokens, cacheRead: m.CacheReadTokens,
		cacheCreation: m.CacheCreationTokens, cost: m.CostUSD}
	if m.Refused == "" {
		u.calls = 1
	}
	return u
}

// prepEvent validates, masks and copies one event (not copied: given, see NewEvent), in the
// caller's goroutine, so that the writer only writes.
func (s *Store) prepEvent(typ string, data []byte, given bool) (pendingEvent, error) {
	if typ == EventStatus {
		return pendingEvent{}, invalid("status events are the store's own: use SetStatus or FinishJob")
	}
	if !validType(typ) {
		return pendingEvent{}, invalid("event type %q: want a lowercase name of letters, digits, _ and . (at most 64)", typ)
	}
	d, err := s.prepData(typ+" event data", data, given)
	if err != nil {
		return pendingEvent{}, err
	}
	pe := pendingEvent{typ: typ, data: d}
	if typ == EventModelCall {
		pe.usage = modelCallUsage(data)
	}
	return pe, nil
}

// Append writes one event to a job's log and returns it, with its Seq and Time, once it is
// committed: it is durable before any subscriber sees it. Appends from all callers are group
// committed. The data is masked (SetMasker) before it is written. A job that has ended takes no
// more events (an error that matches ErrJobEnded).
func (s *Store) Append(job, typ string, data json.RawMessage) (Event, error) {
	pe, err := s.prepEvent(typ, data, false)
	if err != nil {
		return Event{}, err
	}
	o := getOp()
	o.kind, o.job = opAppend, job
	o.events = append(o.events[:0], pe)
	err = s.do(o)
	var e Event
	if err == nil {
		e = o.out[0]
	}
	putOp(o)
	return e, err
}

// AppendBatch appends events to one job in order, atomically (all or none), with consecutive
// Seqs, in one commit: the fastest way to write many.
func (s *Store) AppendBatch(job string, events []NewEvent) ([]Event, error) {
	return s.AppendBatchWithExchanges(job, events, nil)
}

// AppendBatchWithExchanges is AppendBatch with recorded model calls: exchanges[i], when not
// empty, is the request and answer of the model call events[i] (any JSON, masked like event
// data), kept with the event in the same commit and read back by Exchanges; the live stream and
// the trace never carry it.
func (s *Store) AppendBatchWithExchanges(job string, events []NewEvent, exchanges []json.RawMessage) ([]Event, error) {
	if len(events) == 0 {
		return nil, nil
	}
	o := &op{kind: opAppend, job: job, events: make([]pendingEvent, len(events))}
	for i, ne := range events {
		pe, err := s.prepEvent(ne.Type, ne.Data, ne.Given)
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", i, err)
		}
		if i < len(exchanges) && len(exchanges[i]) > 0 {
			if pe.exchange, err = s.prepJSON("the recorded model call", exchanges[i]); err != nil {
				return nil, fmt.Errorf("event %d: %w", i, err)
			}
		}
		o.events[i] = pe
	}
	if err := s.do(o); err != nil {
		return nil, err
	}
	return o.out, nil
}

var errNoRows = sql.ErrNoRows

func (s *Store) readErr(err error) error {
	if err == nil {
		return nil
	}
	if s.ctx.Err() != nil { // Close cancelled it: the reads in flight fail
		return ErrClosed
	}
	if e := s.dbError(err, false); e != nil {
		return e
	}
	return fmt.Errorf("read %s: %w", s.path, err)
}

// jobRef finds a job's row number and status.
func (s *Store) jobRef(ctx context.Context, id string) (n int64, st Status, err error) {
	err = s.rdb.QueryRowContext(ctx, `SELECT n, status FROM jobs WHERE id = ?`, id).Scan(&n, &st)
	if errors.Is(err, errNoRows) {
		return 0, "", s.notFound(id)
	}
	if err != nil {
		return 0, "", s.readErr(err)
	}
	return n, st, nil
}

// Events returns up to limit (default 1000, at most 10000) of a job's events with Seq > afterSeq,
// in order.
func (s *Store) Events(job string, afterSeq int64, limit int) ([]Event, error) {
	n, _, err := s.jobRef(s.ctx, job)
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 1000
	}
	limit = min(limit, 10000)
	evs, _, err := s.readEvents(s.ctx, s.rdb, job, n, afterSeq, limit, 0, nil)
	return evs, err
}

type querier interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

// readEvents reads up to limit of a job's events after afterSeq, in order, and, with maxBytes,
// stops after the one that takes their data past maxBytes: a page of a job's events is held
// whole while it is sent on, and a few of them may be megabytes each (tools' results). more
// reports that the page stopped before the job's last event (at either bound).
func (s *Store) readEvents(ctx context.Context, q querier, job string, n, afterSeq int64, limit, maxBytes int, buf []Event) (_ []Event, more bool, _ error) {
	rows, err := q.QueryContext(ctx, `SELECT seq, time, type, data FROM events WHERE job = ? AND seq > ? ORDER BY seq LIMIT ?`, n, afterSeq, limit)
	if err != nil {
		return nil, false, s.readErr(err)
	}
	defer rows.Close()
	evs := buf[:0]
	size := 0
	for rows.Next() {
		if maxBytes > 0 && size > maxBytes {
			return evs, true, nil
		}
		e := Event{Job: job}
		var t int64
		var data []byte
		if err := rows.Scan(&e.Seq, &t, &e.Type, &data); err != nil {
			return nil, false, s.readErr(err)
		}
		e.Time = fromNanos(t)
		e.Data = data
		evs = append(evs, e)
		size += len(data)
	}
	if err := rows.Err(); err != nil {
		return nil, false, s.readErr(err)
	}
	return evs, len(evs) == limit, nil
}
