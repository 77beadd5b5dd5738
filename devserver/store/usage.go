package store

import (
	"strings"
)

// UsageFilter selects the model calls UsageByRecord sums.
type UsageFilter struct {
	Job   string // "": every job
	Agent string // "": every agent
	ByJob bool   // a row per job too, not only per agent
}

// UsageRow sums the model calls of one agent (and one job, with ByJob) under one model record
// and model.
type UsageRow struct {
	Agent  string
	Job    string // with ByJob
	Record string
	Model  string
	Usage
}

// UsageByRecord sums the model_call events by agent, model record and model (and job, with
// ByJob), as the job's Usage sums them: every call's tokens and cost, and the calls that were not
// refused. Rows are ordered by agent, job (newest first), record and model.
func (s *Store) UsageByRecord(f UsageFilter) ([]UsageRow, error) {
	jobCol, order := `''`, `j.agent, e.job DESC`
	if f.ByJob {
		jobCol = `j.id`
	}
	num := func(field string) string {
		return `coalesce(sum(CAST(json_extract(e.data, '$.` + field + `') AS INTEGER)), 0)`
	}
	q := `SELECT j.agent, ` + jobCol + `, coalesce(json_extract(e.data, '$.record'), ''), coalesce(json_extract(e.data, '$.model'), ''),
		sum(coalesce(json_extract(e.data, '$.refused'), '') = ''), ` +
		num("input_tokens") + `, ` + num("output_tokens") + `, ` + num("cache_read_input_tokens") + `, ` + num("cache_creation_input_tokens") + `,
		coalesce(sum(CAST(json_extract(e.data, '$.cost_usd') AS REAL)), 0)
		FROM events e JOIN jobs j ON j.n = e.job`
	where, args := []string{`e.type = ?`}, []any{EventModelCall}
	if f.Job != "" {
		where, args = append(where, `j.id = ?`), append(args, f.Job)
	}
	if f.Agent != "" {
		where, args = append(where, `j.agent = ?`), append(args, f.Agent)
	}
	q += ` WHERE ` + strings.Join(where, ` AND `)
	if f.ByJob {
		q += ` GROUP BY j.agent, e.job, 3, 4 ORDER BY ` + order + `, 3, 4`
	} else {
		q += ` GROUP BY j.agent, 3, 4 ORDER BY j.agent, 3, 4`
	}
	rows, err := s.rdb.QueryContext(s.ctx, q, args...)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	out := []UsageRow{}
	for rows.Next() {
		var r UsageRow
		if err := rows.Scan(&r.Agent, &r.Job, &r.Record, &r.Model, &r.ModelCalls, &r.InputTokens, &r.OutputTokens,
			&r.CacheReadTokens, &r.CacheCreationTokens, &r.CostUSD); err != nil {
			return nil, s.readErr(err)
		}
		out = append(out, r)
	}
	return out, s.readErr(rows.Err())
}
