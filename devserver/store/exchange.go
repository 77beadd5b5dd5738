package store

import (
	"context"
	"encoding/json"
)

// A job's recorded model calls (oz0 dev --record): one row each, numbered 1, 2, 3… in the order
// they were kept, their data a JSON value (the gateway's Exchange) masked like event data. They
// are not events: a call's request and answer can be megabytes, which the live stream and the
// trace do not carry.

// AppendExchange keeps one recorded model call of a job, after the job's others.
func (s *Store) AppendExchange(job string, data json.RawMessage) error {
	d, err := s.prepJSON("the recorded model call", data)
	if err != nil {
		return err
	}
	return s.write(context.Background(), func(x execer) error {
		var n int64
		err := x.QueryRowContext(context.Background(), `SELECT n FROM jobs WHERE id = ?`, job).Scan(&n)
		if err == errNoRows {
			return s.notFound(job)
		}
		if err != nil {
			return err
		}
		_, err = x.ExecContext(context.Background(),
			`INSERT INTO exchanges (job, n, data) VALUES (?, (SELECT coalesce(max(n), 0) + 1 FROM exchanges WHERE job = ?), ?)`, n, n, bytesString(d))
		return err
	})
}

// Exchanges returns a job's recorded model calls in the order they were kept; none for a job
// that was not recorded.
func (s *Store) Exchanges(job string) ([]json.RawMessage, error) {
	n, _, err := s.jobRef(s.ctx, job)
	if err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(s.ctx, `SELECT data FROM exchanges WHERE job = ? ORDER BY n`, n)
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
