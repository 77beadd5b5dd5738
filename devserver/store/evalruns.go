package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// MaxEvalRuns is how many eval runs the store keeps: a new one past it removes the oldest.
const MaxEvalRuns = 50

// EvalRun is a run of eval cases from the dev UI: what was asked (Request, JSON), its status
// (EvalRunning until it ends; then EvalDone, EvalFailed or EvalInterrupted), its cases and how
// many have ended, its report (oz0 eval --json's, JSON: the cases ended so far while it runs),
// what a person should know while it runs (Notes), or why it could not go on (Error).
type EvalRun struct {
	ID        int64
	StartedAt time.Time
	EndedAt   time.Time
	Request   json.RawMessage
	Status    string
	Cases     int
	Done      int
	Report    json.RawMessage
	Notes     []string
	Error     string
}

// The statuses of an eval run.
const (
	EvalRunning     = "running"
	EvalDone        = "done"        // every case ran (some may have failed)
	EvalFailed      = "failed"      // the run could not go on (a recording that cannot be read)
	EvalInterrupted = "interrupted" // stopped before its cases ended (oz0 dev stopping, Stop)
)

// CreateEvalRun keeps a new run of request's cases, running, and removes the oldest past
// MaxEvalRuns.
func (s *Store) CreateEvalRun(request json.RawMessage, cases int) (EvalRun, error) {
	if len(request) > MaxData {
		return EvalRun{}, invalid("an eval run's request is %d bytes, over the limit of %d", len(request), MaxData)
	}
	r := EvalRun{StartedAt: time.Now().UTC(), Request: request, Status: EvalRunning, Cases: cases}
	err := s.write(context.Background(), func(x execer) ([]Change, error) {
		res, err := x.ExecContext(context.Background(), `INSERT INTO eval_runs (started_at, request, status, cases) VALUES (?, ?, ?, ?)`,
			r.StartedAt.UnixNano(), string(request), r.Status, cases)
		if err != nil {
			return nil, err
		}
		if r.ID, err = res.LastInsertId(); err != nil {
			return nil, err
		}
		_, err = x.ExecContext(context.Background(), `DELETE FROM eval_runs WHERE id <= ?`, r.ID-MaxEvalRuns)
		return []Change{evalRunChange(r.ID)}, err
	})
	return r, err
}

func evalRunChange(id int64) Change {
	return Change{Kind: ChangeEvalRun, ID: strconv.FormatInt(id, 10)}
}

// EvalRunProgress keeps how far run id is: done cases ended, the report of those, the notes.
func (s *Store) EvalRunProgress(id int64, done int, report json.RawMessage, notes []string) error {
	if len(report) > maxEvalReport {
		return invalid("an eval run's report is %d bytes, over the limit of %d", len(report), maxEvalReport)
	}
	ns, _ := json.Marshal(notes)
	return s.updateEvalRun(id, `UPDATE eval_runs SET done = ?, report = ?, notes = ? WHERE id = ? AND status = ?`, done, string(report), string(ns), id, EvalRunning)
}

// FinishEvalRun ends run id with its status, its report (nil: the one kept so far) and the
// cases it has, or the error that stopped it.
func (s *Store) FinishEvalRun(id int64, status string, done int, report json.RawMessage, runErr string) error {
	if len(report) > maxEvalReport {
		return invalid("an eval run's report is %d bytes, over the limit of %d", len(report), maxEvalReport)
	}
	var rep any
	if report != nil {
		rep = string(report)
	}
	return s.updateEvalRun(id, `UPDATE eval_runs SET ended_at = ?, status = ?, done = max(done, ?), report = coalesce(?, report), error = ? WHERE id = ?`,
		time.Now().UTC().UnixNano(), status, done, rep, runErr, id)
}

func (s *Store) updateEvalRun(id int64, query string, args ...any) error {
	return s.write(context.Background(), func(x execer) ([]Change, error) {
		res, err := x.ExecContext(context.Background(), query, args...)
		if err != nil {
			return nil, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil, fmt.Errorf("%w: eval run %d, running", ErrNotFound, id)
		}
		return []Change{evalRunChange(id)}, nil
	})
}

// maxEvalReport bounds a run's report: its cases' results, each bounded by the engine.
const maxEvalReport = 16 << 20

// EvalRuns lists the kept runs, newest first.
func (s *Store) EvalRuns() ([]EvalRun, error) {
	rows, err := s.rdb.QueryContext(s.ctx, `SELECT `+evalRunColumns+` FROM eval_runs ORDER BY id DESC`)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	var out []EvalRun
	for rows.Next() {
		r, err := scanEvalRun(rows)
		if err != nil {
			return nil, s.readErr(err)
		}
		out = append(out, r)
	}
	return out, s.readErr(rows.Err())
}

// GetEvalRun reads run id.
func (s *Store) GetEvalRun(id int64) (EvalRun, error) {
	r, err := scanEvalRun(s.rdb.QueryRowContext(s.ctx, `SELECT `+evalRunColumns+` FROM eval_runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("%w: eval run %d", ErrNotFound, id)
	}
	return r, s.readErr(err)
}

// InterruptEvalRuns marks the runs a stopped oz0 dev left running as interrupted. It is for the
// server's start, before anyone watches: it publishes no change.
func (s *Store) InterruptEvalRuns() error {
	return s.write(context.Background(), func(x execer) ([]Change, error) {
		_, err := x.ExecContext(context.Background(), `UPDATE eval_runs SET status = ?, ended_at = ?, error = ? WHERE status = ?`,
			EvalInterrupted, time.Now().UTC().UnixNano(), "oz0 dev stopped before the run ended", EvalRunning)
		return nil, err
	})
}

const evalRunColumns = `id, started_at, ended_at, request, status, cases, done, report, notes, error`

func scanEvalRun(r scanner) (EvalRun, error) {
	var e EvalRun
	var started int64
	var ended *int64
	var request string
	var report, notes, errText *string
	if err := r.Scan(&e.ID, &started, &ended, &request, &e.Status, &e.Cases, &e.Done, &report, &notes, &errText); err != nil {
		return e, err
	}
	if notes != nil {
		_ = json.Unmarshal([]byte(*notes), &e.Notes)
	}
	e.StartedAt = fromNanos(started)
	if ended != nil {
		e.EndedAt = fromNanos(*ended)
	}
	e.Request = json.RawMessage(request)
	if report != nil {
		e.Report = json.RawMessage(*report)
	}
	if errText != nil {
		e.Error = *errText
	}
	return e, nil
}
