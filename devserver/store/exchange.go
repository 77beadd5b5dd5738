package store

import (
	"encoding/json"
	"time"
)

// A job's recorded model calls (oz0 dev --record) are kept on their model_call events
// (AppendBatchWithExchanges), in a column the live stream and the trace never read: a call's request and
// answer can be megabytes, and keeping them in the event's row writes them in the event's commit.

// Exchanges returns a job's recorded model calls, in the order of their events; none for a job
// that was not recorded.
func (s *Store) Exchanges(job string) ([]json.RawMessage, error) {
	n, _, err := s.jobRef(s.ctx, job)
	if err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(s.ctx, `SELECT exchange FROM events WHERE job = ? AND exchange IS NOT NULL ORDER BY seq`, n)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	var out []json.RawMessage
	for rows.Next() {
		var d []byte
		if err := rows.Scan(&d); err != nil {
			return nil, s.readErr(err)
		}
		out = append(out, d)
	}
	return out, s.readErr(rows.Err())
}

// Call is one model_call event of a job with what was kept of the call.
type Call struct {
	Seq      int64
	Time     time.Time
	Data     json.RawMessage // the event's data: the gateway's meter
	Exchange json.RawMessage // the kept request and answer; nil when not kept
}

// Calls returns a job's model_call events with their kept exchanges, in order; seq > 0 returns
// that event alone (none when it is not a model call).
func (s *Store) Calls(job string, seq int64) ([]Call, error) {
	n, _, err := s.jobRef(s.ctx, job)
	if err != nil {
		return nil, err
	}
	q := `SELECT seq, time, data, exchange FROM events WHERE job = ? AND type = ? ORDER BY seq`
	args := []any{n, EventModelCall}
	if seq > 0 {
		q = `SELECT seq, time, data, exchange FROM events WHERE job = ? AND type = ? AND seq = ?`
		args = append(args, seq)
	}
	rows, err := s.rdb.QueryContext(s.ctx, q, args...)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	var out []Call
	for rows.Next() {
		var c Call
		var t int64
		var data, ex []byte
		if err := rows.Scan(&c.Seq, &t, &data, &ex); err != nil {
			return nil, s.readErr(err)
		}
		c.Time = fromNanos(t)
		c.Data = data
		if ex != nil {
			c.Exchange = ex
		}
		out = append(out, c)
	}
	return out, s.readErr(rows.Err())
}
