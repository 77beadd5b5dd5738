package store

import (
	"encoding/json"
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
