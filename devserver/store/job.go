package store

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
)

// Status is a job's state. The store keeps the control API's statuses (apiv1 is their one
// definition, with Terminal and Valid), so what it writes and what clients read cannot drift.
type Status = apiv1.Status

// The statuses, by their store names. A job starts queued; the terminal ones never change again;
// interrupted is what a job live when the dev server stopped (or crashed) becomes.
const (
	StatusQueued             = apiv1.StatusQueued
	StatusRunning            = apiv1.StatusRunning
	StatusWaitingForApproval = apiv1.StatusWaitingForApproval
	StatusSucceeded          = apiv1.StatusSucceeded
	StatusFailed             = apiv1.StatusFailed
	StatusCancelled          = apiv1.StatusCancelled
	StatusTimedOut           = apiv1.StatusTimedOut
	StatusInterrupted        = apiv1.StatusInterrupted
)

// CanTransition reports whether a job in status from may move to status to:
//
//	queued               → running, failed, cancelled, timed_out, interrupted
//	running              → waiting_for_approval, or any terminal status
//	waiting_for_approval → running, or any terminal status
//	terminal             → nothing
//
// A status never "moves" to itself.
func CanTransition(from, to Status) bool {
	if !to.Valid() || from == to || from.Terminal() {
		return false
	}
	switch from {
	case StatusQueued:
		return to != StatusWaitingForApproval && to != StatusSucceeded
	case StatusRunning:
		return to == StatusWaitingForApproval || to.Terminal()
	case StatusWaitingForApproval:
		return to == StatusRunning || to.Terminal()
	}
	return false
}

// TransitionError is the error of an illegal status change. errors.Is matches it with
// ErrIllegalTransition, and with ErrJobEnded when the job had already ended.
type TransitionError struct {
	Job      string
	From, To Status
}

func (e *TransitionError) Error() string {
	if e.From.Terminal() {
		return fmt.Sprintf("job %s has ended (%s); it cannot become %s", e.Job, e.From, e.To)
	}
	return fmt.Sprintf("job %s cannot go from %s to %s", e.Job, e.From, e.To)
}

// Unwrap makes errors.Is work.
func (e *TransitionError) Unwrap() []error {
	if e.From.Terminal() {
		return []error{ErrIllegalTransition, ErrJobEnded}
	}
	return []error{ErrIllegalTransition}
}

// Limits are a job's limits.
type Limits struct {
	MaxSteps int           // the most model calls; 0: none
	Timeout  time.Duration // 0: none
}

type limitsJSON struct {
	MaxSteps int     `json:"max_steps"`
	TimeoutS float64 `json:"timeout_s"`
}

// MarshalJSON writes {"max_steps":10,"timeout_s":600}, as in the session request.
func (l Limits) MarshalJSON() ([]byte, error) {
	return json.Marshal(limitsJSON{l.MaxSteps, l.Timeout.Seconds()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (l *Limits) UnmarshalJSON(b []byte) error {
	var v limitsJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	l.MaxSteps = v.MaxSteps
	l.Timeout = time.Duration(math.Round(v.TimeoutS * float64(time.Second)))
	return nil
}

// Usage sums a job's model_call events (see EventModelCall).
type Usage struct {
	ModelCalls          int64   `json:"model_calls"`
	InputTokens         int64   `json:"input_tokens"`
	OutputTokens        int64   `json:"output_tokens"`
	CacheReadTokens     int64   `json:"cache_read_input_tokens"`
	CacheCreationTokens int64   `json:"cache_creation_input_tokens"`
	CostUSD             float64 `json:"cost_usd"`
}

// Job is a job's record.
type Job struct {
	ID          string          `json:"id"`
	Agent       string          `json:"agent"`
	Plugin      string          `json:"plugin,omitempty"`
	Input       json.RawMessage `json:"input"`      // as it came
	InputText   string          `json:"input_text"` // the input as text
	ModelRecord string          `json:"model_record,omitempty"`
	ModelName   string          `json:"model_name,omitempty"`
	Status      Status          `json:"status"`
	Reason      string          `json:"reason,omitempty"` // why the job is in its status (failures, cancels)
	Output      json.RawMessage `json:"output,omitempty"` // set when it ends with one
	CreatedAt   time.Time       `json:"created_at"`
	StartedAt   time.Time       `json:"started_at,omitzero"` // when it first became running
	EndedAt     time.Time       `json:"ended_at,omitzero"`
	Limits      Limits          `json:"limits"`
	Usage       Usage           `json:"usage"`
	Session     json.RawMessage `json:"session,omitempty"`   // its session event's data, once it has one
	Traceback   json.RawMessage `json:"traceback,omitempty"` // the traceback its harness failed with (an error event's): a JSON array of lines
	Origin      *Origin         `json:"from,omitempty"`      // the job it was made from
}

// Origin is the job a job was made from, and how.
type Origin struct {
	Job string `json:"job"`
	How string `json:"how"` // OriginRunAgain or OriginReplay
}

// The ways a job is made from another.
const (
	OriginRunAgain = "run again" // the same agent, its input as given (edited or not), on the live model
	OriginReplay   = "replay"    // its model calls answered from the other's recording
)

// NewJob is what CreateJob needs.
type NewJob struct {
	Agent       string
	Plugin      string
	Input       json.RawMessage // JSON; empty means null
	InputText   string
	ModelRecord string
	ModelName   string
	Limits      Limits
	Origin      *Origin
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewJobID returns "job_" and 20 random lowercase base32 characters (100 bits).
func NewJobID() string {
	var b [13]byte
	rand.Read(b[:])
	return apiv1.JobIDPrefix + idEncoding.EncodeToString(b[:])[:20]
}

// ValidJobID reports whether id has the shape NewJobID gives.
func ValidJobID(id string) bool {
	if len(id) != 24 || !strings.HasPrefix(id, apiv1.JobIDPrefix) {
		return false
	}
	for _, c := range id[4:] {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// ListFilter selects jobs for ListJobs.
type ListFilter struct {
	Status []Status // any of these; none: all
	Agent  string   // "": all
	Limit  int      // default 50, at most 1000
	Before string   // a job ID: only jobs created before it (the cursor of the next page)
}

const (
	maxReason = 64 << 10
	maxName   = 256
)

func (s *Store) notFound(id string) error {
	return fmt.Errorf("%w: job %s", ErrNotFound, id)
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
}

// prepJSON validates a JSON value, masks it and copies it, so that the store owns what it keeps.
// Empty means null. A value that masking made invalid JSON (a secret that was part of a number,
// say) is kept as a JSON string of the masked text.
func (s *Store) prepJSON(what string, b []byte) (json.RawMessage, error) {
	return s.prepData(what, b, false)
}

// prepData is prepJSON of data the caller gives the store (given: kept, not copied, unless
// masking changed it).
func (s *Store) prepData(what string, b []byte, given bool) (json.RawMessage, error) {
	if len(b) == 0 {
		return json.RawMessage("null"), nil
	}
	if len(b) > MaxData {
		return nil, invalid("%s is %d bytes, over the limit of %d", what, len(b), MaxData)
	}
	if !json.Valid(b) {
		return nil, invalid("%s is not valid JSON", what)
	}
	m := s.mask(b)
	if sameSlice(m, b) {
		if given {
			return b, nil
		}
		return append(json.RawMessage(nil), b...), nil
	}
	if !json.Valid(m) {
		q, _ := json.Marshal(string(m))
		return q, nil
	}
	return m, nil
}

func sameSlice(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func (s *Store) prepReason(reason string) (string, error) {
	if len(reason) > maxReason {
		return "", invalid("reason is %d bytes, over the limit of %d", len(reason), maxReason)
	}
	return s.maskString(reason), nil
}

// CreateJob records a new queued job, with its first event (status queued), and returns it.
func (s *Store) CreateJob(nj NewJob) (Job, error) {
	if nj.Agent == "" {
		return Job{}, invalid("a job needs an agent")
	}
	if nj.Limits.MaxSteps < 0 || nj.Limits.Timeout < 0 {
		return Job{}, invalid("limits cannot be negative")
	}
	for what, v := range map[string]string{"agent": nj.Agent, "plugin": nj.Plugin, "model record": nj.ModelRecord, "model name": nj.ModelName} {
		if len(v) > maxName {
			return Job{}, invalid("the %s is %d bytes, over the limit of %d", what, len(v), maxName)
		}
	}
	if len(nj.InputText) > MaxData {
		return Job{}, invalid("the input text is %d bytes, over the limit of %d", len(nj.InputText), MaxData)
	}
	input, err := s.prepJSON("input", nj.Input)
	if err != nil {
		return Job{}, err
	}
	j := Job{
		ID: NewJobID(), Agent: nj.Agent, Plugin: nj.Plugin, Input: input,
		InputText: s.maskString(nj.InputText), ModelRecord: nj.ModelRecord, ModelName: nj.ModelName,
		Status: StatusQueued, Limits: nj.Limits, Origin: nj.Origin,
	}
	if o := nj.Origin; o != nil && (len(o.Job) > maxName || len(o.How) > maxName) {
		return Job{}, invalid("the job's origin is over the limit of %d bytes", maxName)
	}
	o := &op{kind: opCreate, job: j.ID, create: &j}
	if err := s.do(o); err != nil {
		return Job{}, err
	}
	return j, nil
}

// SetStatus moves a job to status st, if that is a legal transition (see CanTransition; else a
// *TransitionError), and records a status event. reason says why (it may be empty); it replaces
// the job's reason. Ending a job this way leaves its output unset: see FinishJob.
func (s *Store) SetStatus(id string, st Status, reason string) error {
	if !st.Valid() {
		return invalid("unknown status %q", st)
	}
	reason, err := s.prepReason(reason)
	if err != nil {
		return err
	}
	return s.do(&op{kind: opStatus, job: id, status: st, reason: reason})
}

// FinishJob ends a job: st must be terminal. output (JSON; empty: none) is the job's answer.
func (s *Store) FinishJob(id string, st Status, reason string, output json.RawMessage) error {
	return s.FinishJobWith(id, st, reason, output)
}

// FinishJobWith is FinishJob with the job's last events, written before its end in the same
// commit, or not at all when the end is refused. They are written while the disk is full too
// (what Append refuses then), from the store's reserve: keep them few and small (a job's error,
// a note of what could not be recorded).
func (s *Store) FinishJobWith(id string, st Status, reason string, output json.RawMessage, last ...NewEvent) error {
	if !st.Terminal() {
		return invalid("FinishJob needs a terminal status, not %q", st)
	}
	reason, err := s.prepReason(reason)
	if err != nil {
		return err
	}
	var out json.RawMessage
	if len(output) > 0 {
		if out, err = s.prepJSON("output", output); err != nil {
			return err
		}
	}
	o := &op{kind: opStatus, job: id, status: st, reason: reason, output: out}
	for i, ne := range last {
		pe, err := s.prepEvent(ne.Type, ne.Data, ne.Given)
		if err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
		o.events = append(o.events, pe)
	}
	return s.do(o)
}

// MarkInterrupted ends every live job (queued, running or waiting for approval) as interrupted,
// with reason, and returns their IDs, oldest first. `oz0 dev` calls it once at start-up: jobs that
// were live when the last process stopped or crashed cannot go on.
func (s *Store) MarkInterrupted(reason string) ([]string, error) {
	reason, err := s.prepReason(reason)
	if err != nil {
		return nil, err
	}
	o := &op{kind: opInterrupt, reason: reason}
	if err := s.do(o); err != nil {
		return nil, err
	}
	return o.ids, nil
}

const jobColumns = `id, agent, plugin, input, input_text, model_record, model_name, status, reason, output,
	created_at, started_at, ended_at, max_steps, timeout_ms,
	model_calls, input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens, cost_usd, session, traceback, from_job, from_how`

type scanner interface{ Scan(...any) error }

func scanJob(r scanner) (Job, error) {
	var j Job
	var input string
	var output, session, traceback, fromJob, fromHow *string
	var created int64
	var started, ended *int64
	var timeoutMS int64
	err := r.Scan(&j.ID, &j.Agent, &j.Plugin, &input, &j.InputText, &j.ModelRecord, &j.ModelName, &j.Status, &j.Reason, &output,
		&created, &started, &ended, &j.Limits.MaxSteps, &timeoutMS,
		&j.Usage.ModelCalls, &j.Usage.InputTokens, &j.Usage.OutputTokens, &j.Usage.CacheReadTokens, &j.Usage.CacheCreationTokens, &j.Usage.CostUSD, &session, &traceback, &fromJob, &fromHow)
	if err != nil {
		return Job{}, err
	}
	j.Input = json.RawMessage(input)
	if output != nil {
		j.Output = json.RawMessage(*output)
	}
	if session != nil {
		j.Session = json.RawMessage(*session)
	}
	if traceback != nil {
		j.Traceback = json.RawMessage(*traceback)
	}
	if fromJob != nil {
		j.Origin = &Origin{Job: *fromJob}
		if fromHow != nil {
			j.Origin.How = *fromHow
		}
	}
	j.CreatedAt = fromNanos(created)
	if started != nil {
		j.StartedAt = fromNanos(*started)
	}
	if ended != nil {
		j.EndedAt = fromNanos(*ended)
	}
	j.Limits.Timeout = time.Duration(timeoutMS) * time.Millisecond
	return j, nil
}

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// GetJob returns a job's record, or an error that matches ErrNotFound.
func (s *Store) GetJob(id string) (Job, error) {
	j, err := scanJob(s.rdb.QueryRowContext(s.ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ?`, id))
	if errors.Is(err, errNoRows) {
		return Job{}, s.notFound(id)
	}
	if err != nil {
		return Job{}, s.readErr(err)
	}
	return j, nil
}

// ListJobs returns jobs newest first. For the next page, pass the last job's ID as Before.
func (s *Store) ListJobs(f ListFilter) ([]Job, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	f.Limit = min(f.Limit, 1000)
	var where []string
	var args []any
	if len(f.Status) > 0 {
		ph := make([]string, len(f.Status))
		for i, st := range f.Status {
			if !st.Valid() {
				return nil, invalid("unknown status %q", st)
			}
			ph[i] = "?"
			args = append(args, string(st))
		}
		where = append(where, "status IN ("+strings.Join(ph, ", ")+")")
	}
	if f.Agent != "" {
		where = append(where, "agent = ?")
		args = append(args, f.Agent)
	}
	if f.Before != "" {
		var n int64
		err := s.rdb.QueryRowContext(s.ctx, `SELECT n FROM jobs WHERE id = ?`, f.Before).Scan(&n)
		if errors.Is(err, errNoRows) {
			return nil, s.notFound(f.Before)
		}
		if err != nil {
			return nil, s.readErr(err)
		}
		where = append(where, "n < ?")
		args = append(args, n)
	}
	q := `SELECT ` + jobColumns + ` FROM jobs`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY n DESC LIMIT ?"
	args = append(args, f.Limit)
	rows, err := s.rdb.QueryContext(s.ctx, q, args...)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	jobs := []Job{}
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, s.readErr(err)
		}
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr(err)
	}
	return jobs, nil
}
