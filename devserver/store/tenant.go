package store

import (
	"context"
	"time"
)

// MeteredCall is what the tenant's quotas count of a model call: when it was metered, of which
// agent and record, what it used and cost, whether it was a step that reached a model.
type MeteredCall struct {
	Time     time.Time
	Agent    string
	Record   string
	Usage    Usage // ModelCalls 1 for a call that was not refused, as a job's Usage counts it
	Step     bool
	Replayed bool // answered from a recording: it reached no provider
}

// MeteredCalls are the model calls metered at since or later, oldest first. The type is written
// as a literal: SQLite uses the partial index events_model_calls_by_time only for a query whose
// condition names its type so.
func (s *Store) MeteredCalls(since time.Time) ([]MeteredCall, error) {
	rows, err := s.rdb.QueryContext(s.ctx, `SELECT e.time, j.agent, coalesce(json_extract(e.data, '$.record'), ''),
		coalesce(json_extract(e.data, '$.refused'), '') = '',
		coalesce(CAST(json_extract(e.data, '$.input_tokens') AS INTEGER), 0), coalesce(CAST(json_extract(e.data, '$.output_tokens') AS INTEGER), 0),
		coalesce(CAST(json_extract(e.data, '$.cache_read_input_tokens') AS INTEGER), 0), coalesce(CAST(json_extract(e.data, '$.cache_creation_input_tokens') AS INTEGER), 0),
		coalesce(CAST(json_extract(e.data, '$.cost_usd') AS REAL), 0),
		coalesce(CAST(json_extract(e.data, '$.step') AS INTEGER), 0) > 0, coalesce(json_extract(e.data, '$.replayed'), 0)
		FROM events e JOIN jobs j ON j.n = e.job
		WHERE e.type = 'model_call' AND e.time >= ? ORDER BY e.time, e.id`, since.UnixNano())
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	var out []MeteredCall
	for rows.Next() {
		var c MeteredCall
		var at int64
		var ok bool
		if err := rows.Scan(&at, &c.Agent, &c.Record, &ok, &c.Usage.InputTokens, &c.Usage.OutputTokens,
			&c.Usage.CacheReadTokens, &c.Usage.CacheCreationTokens, &c.Usage.CostUSD, &c.Step, &c.Replayed); err != nil {
			return nil, s.readErr(err)
		}
		c.Time = fromNanos(at)
		if ok {
			c.Usage.ModelCalls = 1
		}
		c.Step = c.Step && ok
		out = append(out, c)
	}
	return out, s.readErr(rows.Err())
}

// TenantKill is a kill switch thrown: of the tenant (Record "") or of one record.
type TenantKill struct {
	Record string
	At     time.Time
}

// TenantKills are the kill switches thrown, by record ("" first).
func (s *Store) TenantKills() ([]TenantKill, error) {
	rows, err := s.rdb.QueryContext(s.ctx, `SELECT record, killed_at FROM tenant_kills ORDER BY record`)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	var out []TenantKill
	for rows.Next() {
		var k TenantKill
		var at int64
		if err := rows.Scan(&k.Record, &at); err != nil {
			return nil, s.readErr(err)
		}
		k.At = fromNanos(at)
		out = append(out, k)
	}
	return out, s.readErr(rows.Err())
}

// KillTenant records the kill switch of record thrown at at; thrown already, it keeps its time,
// which it returns.
func (s *Store) KillTenant(record string, at time.Time) (time.Time, error) {
	err := s.write(context.Background(), func(x execer) ([]Change, error) {
		if _, err := x.ExecContext(context.Background(), `INSERT INTO tenant_kills (record, killed_at) VALUES (?, ?) ON CONFLICT (record) DO NOTHING`, record, at.UnixNano()); err != nil {
			return nil, err
		}
		var n int64
		if err := x.QueryRowContext(context.Background(), `SELECT killed_at FROM tenant_kills WHERE record = ?`, record).Scan(&n); err != nil {
			return nil, err
		}
		at = fromNanos(n)
		return nil, nil
	})
	return at, err
}

// ResumeTenant removes the kill switch of record; false when it was not thrown.
func (s *Store) ResumeTenant(record string) (bool, error) {
	var n int64
	err := s.write(context.Background(), func(x execer) ([]Change, error) {
		r, err := x.ExecContext(context.Background(), `DELETE FROM tenant_kills WHERE record = ?`, record)
		if err != nil {
			return nil, err
		}
		n, err = r.RowsAffected()
		return nil, err
	})
	return n > 0, err
}
