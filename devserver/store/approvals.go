package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
)

// ApprovalStatus is where a request for a person's approval stands: the control API's statuses
// (apiv1 is their one definition), by their store names. All but pending are final.
type ApprovalStatus = apiv1.ApprovalStatus

const (
	ApprovalPending     = apiv1.ApprovalPending
	ApprovalApproved    = apiv1.ApprovalApproved
	ApprovalDenied      = apiv1.ApprovalDenied
	ApprovalWithdrawn   = apiv1.ApprovalWithdrawn   // the job ended (cancelled, timed out) first
	ApprovalInterrupted = apiv1.ApprovalInterrupted // oz0 dev stopped while it waited
)

// Approval scopes, for an approved request: this call only, the rest of the job, or always (a
// rule for the <harness>.<tool>).
const (
	ScopeOnce   = apiv1.ScopeOnce
	ScopeJob    = apiv1.ScopeJob
	ScopeAlways = apiv1.ScopeAlways
)

// ErrDecided is wrapped by the error for answering an approval that is no longer pending.
var ErrDecided = errors.New("the approval is no longer pending")

// Approval is a tool call waiting for (or answered by) a person.
type Approval struct {
	ID        string          `json:"id"`
	Job       string          `json:"job"`
	Agent     string          `json:"agent"`
	Harness   string          `json:"harness"`
	Tool      string          `json:"tool"`
	Request   string          `json:"request"` // the permission request's id in the session
	Arguments json.RawMessage `json:"arguments"`
	Why       string          `json:"why"`
	Status    ApprovalStatus  `json:"status"`
	Scope     string          `json:"scope,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	DecidedAt time.Time       `json:"decided_at,omitzero"`

	// ArgumentsBytes is the size of the arguments' JSON. A list clips arguments longer than
	// ListArgumentBytes: Arguments is then a JSON string, the start of their JSON text and "…",
	// and ArgumentsClipped is set; GetApproval has them whole.
	ArgumentsBytes   int  `json:"arguments_bytes"`
	ArgumentsClipped bool `json:"arguments_clipped,omitempty"`
}

// Target is how hooks and rules name the call: <harness>.<tool>.
func (a Approval) Target() string { return a.Harness + "." + a.Tool }

// ApprovalRule is an "always" answer: calls of Target are approved without asking.
type ApprovalRule struct {
	ID        string    `json:"id"`
	Target    string    `json:"target"`
	Approval  string    `json:"approval,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

func newID(prefix string) string {
	var b [8]byte
	rand.Read(b[:])
	return prefix + idEncoding.EncodeToString(b[:])[:12]
}

const approvalColumns = `id, job, agent, harness, tool, request, arguments, why, status, scope, reason, created_at, decided_at`

// ListArgumentBytes is the most of an approval's arguments a list holds (ListApprovals,
// ApprovalSummary): past it, the first ListPreviewChars characters of their JSON text. A list is
// read whole by every terminal and browser that shows the inbox, so it must not grow with what a
// harness sends; the one approval (GetApproval) has them whole.
const (
	ListArgumentBytes = 4096
	ListPreviewChars  = 1024
)

// listColumns are approvalColumns with long arguments clipped, in SQLite: a list never reads them
// whole.
var listColumns = strings.Replace(approvalColumns, "arguments", fmt.Sprintf(
	"CASE WHEN length(CAST(arguments AS BLOB)) > %d THEN substr(arguments, 1, %d) ELSE arguments END, length(CAST(arguments AS BLOB))",
	ListArgumentBytes, ListPreviewChars), 1)

func scanApproval(r scanner) (Approval, error) { return scanApprovalAs(r, false) }

func scanApprovalAs(r scanner, list bool) (Approval, error) {
	var a Approval
	var args string
	var created int64
	var decided sql.NullInt64
	dest := []any{&a.ID, &a.Job, &a.Agent, &a.Harness, &a.Tool, &a.Request, &args, &a.Why, &a.Status, &a.Scope, &a.Reason, &created, &decided}
	if list {
		dest = slices.Insert(dest, 7, any(&a.ArgumentsBytes))
	}
	if err := r.Scan(dest...); err != nil {
		return a, err
	}
	a.Arguments = json.RawMessage(args)
	if !list {
		a.ArgumentsBytes = len(args)
	} else if a.ArgumentsBytes > ListArgumentBytes {
		preview, _ := json.Marshal(args + "…")
		a.Arguments, a.ArgumentsClipped = preview, true
	}
	a.CreatedAt = fromNanos(created)
	if decided.Valid {
		a.DecidedAt = fromNanos(decided.Int64)
	}
	return a, nil
}

// CreateApproval records a pending approval and returns it with its id.
func (s *Store) CreateApproval(a Approval) (Approval, error) {
	args, err := s.prepJSON("arguments", a.Arguments)
	if err != nil {
		return Approval{}, err
	}
	a.ID, a.Arguments, a.Status, a.CreatedAt = newID(apiv1.ApprovalIDPrefix), args, ApprovalPending, time.Now().UTC()
	a.ArgumentsBytes, a.ArgumentsClipped = len(args), false
	a.Why = s.maskString(a.Why)
	err = s.write(context.Background(), func(x execer) ([]Change, error) {
		_, err := x.ExecContext(context.Background(), `INSERT INTO approvals (`+approvalColumns+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,NULL)`,
			a.ID, a.Job, a.Agent, a.Harness, a.Tool, a.Request, string(a.Arguments), a.Why, a.Status, "", "", a.CreatedAt.UnixNano())
		return []Change{{ChangeApproval, a.ID}}, err
	})
	return a, err
}

// GetApproval reads an approval.
func (s *Store) GetApproval(id string) (Approval, error) {
	a, err := scanApproval(s.rdb.QueryRow(`SELECT `+approvalColumns+` FROM approvals WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("%w: approval %s", ErrNotFound, id)
	}
	return a, s.readErr(err)
}

// ApprovalSummary reads an approval as a list shows it: its arguments clipped past
// ListArgumentBytes.
func (s *Store) ApprovalSummary(id string) (Approval, error) {
	a, err := scanApprovalAs(s.rdb.QueryRow(`SELECT `+listColumns+` FROM approvals WHERE id = ?`, id), true)
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("%w: approval %s", ErrNotFound, id)
	}
	return a, s.readErr(err)
}

// ListApprovals lists approvals, newest first, as ListJobs lists jobs (a script that takes the
// first of either takes the latest); only those of the given statuses, if any. Their arguments
// are clipped past ListArgumentBytes (GetApproval has them whole).
func (s *Store) ListApprovals(statuses ...ApprovalStatus) ([]Approval, error) {
	q := `SELECT ` + listColumns + ` FROM approvals`
	var args []any
	if len(statuses) > 0 {
		q += ` WHERE status IN (?` + strings.Repeat(",?", len(statuses)-1) + `)`
		for _, st := range statuses {
			args = append(args, st)
		}
	}
	rows, err := s.rdb.Query(q+` ORDER BY n DESC`, args...)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	var out []Approval
	for rows.Next() {
		a, err := scanApprovalAs(rows, true)
		if err != nil {
			return nil, s.readErr(err)
		}
		out = append(out, a)
	}
	return out, s.readErr(rows.Err())
}

// DecideApproval moves a pending approval to a final status, with the scope of an approval or
// the reason of a denial. Answering one that is not pending is an error matching ErrDecided
// that says what became of it.
func (s *Store) DecideApproval(id string, to ApprovalStatus, scope, reason string) (Approval, error) {
	if to == ApprovalPending {
		return Approval{}, invalid("an approval cannot go back to pending")
	}
	reason, err := s.prepReason(reason)
	if err != nil {
		return Approval{}, err
	}
	now := time.Now().UTC().UnixNano()
	err = s.write(context.Background(), func(x execer) ([]Change, error) {
		res, err := x.ExecContext(context.Background(), `UPDATE approvals SET status = ?, scope = ?, reason = ?, decided_at = ? WHERE id = ? AND status = 'pending'`, to, scope, reason, now, id)
		if err != nil {
			return nil, err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return []Change{{ChangeApproval, id}}, nil
		}
		var st ApprovalStatus
		if err := x.QueryRowContext(context.Background(), `SELECT status FROM approvals WHERE id = ?`, id).Scan(&st); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return nil, fmt.Errorf("%w: approval %s", ErrNotFound, id)
			}
			return nil, err
		}
		return nil, fmt.Errorf("%w: approval %s is %s", ErrDecided, id, st)
	})
	if err != nil {
		return Approval{}, err
	}
	return s.GetApproval(id)
}

// EndApprovals gives every pending approval of job (or of every job, for job "") a final
// status, withdrawn or interrupted, with a reason; it returns their ids.
func (s *Store) EndApprovals(job string, to ApprovalStatus, reason string) ([]string, error) {
	var ids []string
	now := time.Now().UTC().UnixNano()
	err := s.write(context.Background(), func(x execer) ([]Change, error) {
		q, args := `SELECT id FROM approvals WHERE status = 'pending'`, []any{}
		if job != "" {
			q, args = q+` AND job = ?`, append(args, job)
		}
		rows, err := x.QueryContext(context.Background(), q, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, err
			}
			ids = append(ids, id)
		}
		rows.Close()
		changes := make([]Change, len(ids))
		for i, id := range ids {
			if _, err := x.ExecContext(context.Background(), `UPDATE approvals SET status = ?, reason = ?, decided_at = ? WHERE id = ?`, to, reason, now, id); err != nil {
				return nil, err
			}
			changes[i] = Change{ChangeApproval, id}
		}
		return changes, nil
	})
	return ids, err
}

// AddRule records an "always" rule for target (<harness>.<tool>); adding one that exists
// returns the existing rule.
func (s *Store) AddRule(target, approval string) (ApprovalRule, error) {
	r := ApprovalRule{ID: newID(apiv1.RuleIDPrefix), Target: target, Approval: approval, CreatedAt: time.Now().UTC()}
	err := s.write(context.Background(), func(x execer) ([]Change, error) {
		_, err := x.ExecContext(context.Background(), `INSERT INTO approval_rules (id, target, approval, created_at) VALUES (?,?,?,?) ON CONFLICT (target) DO NOTHING`,
			r.ID, r.Target, r.Approval, r.CreatedAt.UnixNano())
		return nil, err
	})
	if err != nil {
		return r, err
	}
	rules, err := s.Rules()
	for _, existing := range rules {
		if existing.Target == target {
			return existing, nil
		}
	}
	return r, err
}

// Rules lists the "always" rules, oldest first.
func (s *Store) Rules() ([]ApprovalRule, error) {
	rows, err := s.rdb.Query(`SELECT id, target, approval, created_at FROM approval_rules ORDER BY n`)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	var out []ApprovalRule
	for rows.Next() {
		var r ApprovalRule
		var created int64
		if err := rows.Scan(&r.ID, &r.Target, &r.Approval, &created); err != nil {
			return nil, s.readErr(err)
		}
		r.CreatedAt = fromNanos(created)
		out = append(out, r)
	}
	return out, s.readErr(rows.Err())
}

// RevokeRule removes a rule by its id (or its target).
func (s *Store) RevokeRule(idOrTarget string) (ApprovalRule, error) {
	var r ApprovalRule
	err := s.write(context.Background(), func(x execer) ([]Change, error) {
		var created int64
		err := x.QueryRowContext(context.Background(), `SELECT id, target, approval, created_at FROM approval_rules WHERE id = ? OR target = ?`, idOrTarget, idOrTarget).
			Scan(&r.ID, &r.Target, &r.Approval, &created)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("%w: rule %s", ErrNotFound, idOrTarget)
		}
		if err != nil {
			return nil, err
		}
		r.CreatedAt = fromNanos(created)
		_, err = x.ExecContext(context.Background(), `DELETE FROM approval_rules WHERE id = ?`, r.ID)
		return nil, err
	})
	return r, err
}
