package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// Every write goes through one goroutine, the writer, which owns the single write connection. It
// takes whatever requests are queued (up to Options.MaxBatch events or maxBatchBytes of data),
// applies them in one transaction, commits, publishes the committed events to live subscribers
// and only then acknowledges each caller. While one batch commits the next one queues up, so
// batches grow with the load and a lone caller waits for one commit only: no timer, no added
// latency. A request that is refused (an unknown job, an illegal transition) fails alone, having
// written nothing; an error of the database (I/O) fails its whole batch, which is rolled back,
// and no caller of it is told that anything was written. A batch that finds the disk full is
// rolled back and written again with its events and new jobs refused (diskfull.go).

type opKind uint8

const (
	opAppend opKind = iota
	opCreate
	opStatus
	opInterrupt
	opFunc
)

type op struct {
	kind   opKind
	job    string
	events []pendingEvent
	create *Job
	status Status
	reason string
	output json.RawMessage
	fn     func(execer) ([]Change, error)

	changes []Change // what fn changed, for the change feed once committed

	out  []Event
	ids  []string
	err  error
	done chan struct{}
}

func (o *op) size() (events, bytes int) {
	for _, e := range o.events {
		bytes += len(e.data) + len(e.exchange)
	}
	if o.kind != opAppend {
		return 1 + len(o.events), bytes + len(o.reason) + len(o.output)
	}
	return len(o.events), bytes
}

var opPool = sync.Pool{New: func() any { return &op{done: make(chan struct{}, 1)} }}

func getOp() *op { return opPool.Get().(*op) }

func putOp(o *op) {
	*o = op{done: o.done, events: o.events[:0], out: o.out[:0]}
	opPool.Put(o)
}

// do queues o for the writer and waits until it is committed or refused.
func (s *Store) do(o *op) error {
	if o.done == nil {
		o.done = make(chan struct{}, 1)
	}
	s.sendMu.RLock()
	if s.closed {
		s.sendMu.RUnlock()
		return ErrClosed
	}
	s.reqs <- o
	s.sendMu.RUnlock()
	<-o.done
	return o.err
}

const maxBatchBytes = 32 << 20

type jobState struct {
	id     string
	n      int64
	seq    int64 // the last committed (or, within a batch, written) seq
	status Status
	usage  usageDelta // this batch's model calls, not yet written
	dirty  bool       // usage to write
}

// insertChunks are the row counts of the prepared multi-row INSERTs, largest first: a batch's
// events are written 64 rows a statement, then 8, then 1. Against one statement a row, that is
// 1.4–1.7× the events per second for large batches (BenchmarkAppendSubscribe, batch=100).
var insertChunks = []int{64, 8, 1}

type writerState struct {
	s    *Store
	conn *sql.Conn            // the one write connection, held for the store's life
	jobs map[string]*jobState // live jobs only; rebuilt from the database on a miss

	beginStmt, commitStmt, rollbackStmt *sql.Stmt
	insEvents                           map[int]*sql.Stmt // by row count
	insExchange                         *sql.Stmt         // one event with its recorded model call
	selJob, maxSeq, updStatus           *sql.Stmt
	insJob, updUsage                    *sql.Stmt
	updSession, updTraceback            *sql.Stmt // prepared on first use: one a job
	batch                               []*op
	refuseEvents                        bool // the disk is full: this batch's events and new jobs are refused
	lastNow                             time.Time
	touched                             []*jobState
	rows                                []row // events written by the batch's ops, not yet inserted
	args                                []any
}

type row struct {
	job, seq, time int64
	typ            string
	data, exchange json.RawMessage
}

func (w *writerState) init(s *Store) {
	w.s = s
	w.jobs = map[string]*jobState{}
}

func (w *writerState) prepare() error {
	ctx := context.Background()
	var err error
	if w.conn, err = w.s.wdb.Conn(ctx); err != nil {
		return err
	}
	p := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = w.conn.PrepareContext(ctx, q)
		return st
	}
	// Transactions are run with prepared BEGIN and COMMIT on the held connection rather than
	// database/sql's Tx, which compiles "begin immediate" anew for each one.
	w.beginStmt = p(`BEGIN IMMEDIATE`)
	w.commitStmt = p(`COMMIT`)
	w.rollbackStmt = p(`ROLLBACK`)
	// The multi-row INSERTs are prepared when first used (insertStmt): compiling the 64-row one
	// was the largest part of the store's open, on oz0 dev's way to its first answer.
	w.insEvents = map[int]*sql.Stmt{}
	w.insExchange = p(`INSERT INTO events (job, seq, time, type, data, exchange) VALUES (?, ?, ?, ?, ?, ?)`)
	w.selJob = p(`SELECT n, status FROM jobs WHERE id = ?`)
	w.maxSeq = p(`SELECT coalesce(max(seq), 0) FROM events WHERE job = ?`)
	w.updStatus = p(`UPDATE jobs SET status = ?, reason = ?, started_at = coalesce(started_at, ?), ended_at = ?, output = coalesce(?, output) WHERE n = ?`)
	w.insJob = p(`INSERT INTO jobs (id, agent, plugin, input, input_text, model_record, model_name, status, created_at, max_steps, timeout_ms, from_job, from_how) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	w.updUsage = p(`UPDATE jobs SET model_calls = model_calls + ?, input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,
		cache_read_tokens = cache_read_tokens + ?, cache_creation_tokens = cache_creation_tokens + ?, cost_usd = cost_usd + ? WHERE n = ?`)
	return err
}

// setSession keeps a session event's data as the job's session start.
func (w *writerState) setSession(n int64, data json.RawMessage) error {
	if w.updSession == nil {
		st, err := w.conn.PrepareContext(context.Background(), `UPDATE jobs SET session = ? WHERE n = ?`)
		if err != nil {
			return err
		}
		w.updSession = st
	}
	_, err := w.updSession.Exec(string(data), n)
	return err
}

// setTraceback keeps an error event's traceback as the job's.
func (w *writerState) setTraceback(n int64, tb json.RawMessage) error {
	if w.updTraceback == nil {
		st, err := w.conn.PrepareContext(context.Background(), `UPDATE jobs SET traceback = ? WHERE n = ?`)
		if err != nil {
			return err
		}
		w.updTraceback = st
	}
	_, err := w.updTraceback.Exec(string(tb), n)
	return err
}

// insertStmt is the INSERT of k events, prepared on its first use.
func (w *writerState) insertStmt(k int) (*sql.Stmt, error) {
	if st := w.insEvents[k]; st != nil {
		return st, nil
	}
	q := `INSERT INTO events (job, seq, time, type, data) VALUES (?, ?, ?, ?, ?)` + strings.Repeat(`, (?, ?, ?, ?, ?)`, k-1)
	st, err := w.conn.PrepareContext(context.Background(), q)
	if err != nil {
		return nil, err
	}
	w.insEvents[k] = st
	return st, nil
}

func (w *writerState) close() {
	// The statements first: a connection closed with statements left open is not closed by
	// SQLite, which then neither checkpoints nor removes the write-ahead log.
	stmts := []*sql.Stmt{w.beginStmt, w.commitStmt, w.rollbackStmt, w.insExchange, w.selJob, w.maxSeq, w.updStatus, w.insJob, w.updUsage}
	for _, st := range []*sql.Stmt{w.updSession, w.updTraceback} {
		if st != nil {
			stmts = append(stmts, st)
		}
	}
	for _, st := range w.insEvents {
		stmts = append(stmts, st)
	}
	for _, st := range stmts {
		if st != nil {
			st.Close()
		}
	}
	if w.conn != nil {
		w.conn.Close()
	}
}

func (s *Store) writer() {
	defer s.writerW.Done()
	w := &s.w
	prepErr := w.prepare()
	defer w.close()
	last := 0
	for {
		if last > 1 {
			// The callers just acknowledged were made runnable on this P: let them run and
			// queue their next requests, so that the next batch is as large as the last,
			// instead of taking the first one or two that arrive. A lone caller (last == 1)
			// never waits for this.
			runtime.Gosched()
		}
		first, ok := <-s.reqs
		if !ok {
			return
		}
		w.batch = append(w.batch[:0], first)
		n, b := first.size()
	drain:
		for n < s.opts.MaxBatch && b < maxBatchBytes {
			select {
			case o, ok := <-s.reqs:
				if !ok {
					break drain
				}
				w.batch = append(w.batch, o)
				dn, db := o.size()
				n, b = n+dn, b+db
			default:
				break drain
			}
		}
		if prepErr != nil {
			w.finish(s.writeErr(prepErr))
			continue
		}
		last = len(w.batch)
		s.stats.batches.Add(1)
		s.stats.ops.Add(int64(len(w.batch)))
		s.stats.events.Add(int64(n))
		w.commit()
	}
}

// finish fails every request of the batch with err.
func (w *writerState) finish(err error) {
	for _, o := range w.batch {
		o.err = err
		o.out = o.out[:0]
		o.done <- struct{}{}
	}
	clear(w.batch)
}

// refusal is an error of one request that wrote nothing; every other error fails the batch.
type refusal struct{ error }

func (r refusal) Unwrap() error { return r.error }

// commit writes the batch and acknowledges its callers. A batch that finds the disk full is
// written again with its events and new jobs refused (diskfull.go): its status changes and job
// ends are written from the reserve the store then gives back.
func (w *writerState) commit() {
	err := w.tryCommit()
	if err == nil {
		return
	}
	var full *DiskFullError
	if errors.As(err, &full) && w.s.full.Load() == nil {
		w.s.enterFull(full)
		if err = w.tryCommit(); err == nil {
			return
		}
	}
	w.finish(err)
}

// tryCommit writes the batch in one transaction. Committed, it publishes its events and
// acknowledges its callers; else it rolls back and returns the database's error (in a person's
// words where writeErr has them), the batch left to be failed or tried again.
func (w *writerState) tryCommit() error {
	s := w.s
	w.refuseEvents = s.full.Load() != nil
	fatal := func(err error) error {
		w.rollbackStmt.Exec()           // an error may have rolled back already: then this fails, harmlessly
		w.jobs = map[string]*jobState{} // the cache may hold what was rolled back
		w.touched = w.touched[:0]
		w.rows = w.rows[:0]
		return s.writeErr(err)
	}
	if _, err := w.beginStmt.Exec(); err != nil {
		return fatal(err)
	}
	now := time.Now().UTC()
	if now.Before(w.lastNow) {
		now = w.lastNow // the wall clock stepped back: a job's event times never do
	}
	w.lastNow = now
	bt := &batchTx{w: w, now: now}
	w.touched = w.touched[:0]
	w.rows = w.rows[:0]
	for _, o := range w.batch {
		o.out = o.out[:0]
		err := bt.apply(o)
		var r refusal
		if errors.As(err, &r) {
			o.err = r.error
			o.out = o.out[:0]
			continue
		}
		if err != nil {
			return fatal(err)
		}
		o.err = nil
	}
	if err := w.flushRows(); err != nil {
		return fatal(err)
	}
	for _, js := range w.touched {
		if js.dirty {
			u := js.usage
			if _, err := w.updUsage.Exec(u.calls, u.input, u.output, u.cacheRead, u.cacheCreation, u.cost, js.n); err != nil {
				return fatal(err)
			}
			js.usage, js.dirty = usageDelta{}, false
		}
	}
	if _, err := w.commitStmt.Exec(); err != nil {
		return fatal(err)
	}
	for _, js := range w.touched {
		if js.status.Terminal() {
			delete(w.jobs, js.id)
		}
	}
	// Publish, then acknowledge: a caller whose Append returned finds its event in every live
	// subscriber's buffer already.
	s.hub.publish(w.batch)
	s.hub.publishChanges(w.batch)
	for _, o := range w.batch {
		o.done <- struct{}{}
	}
	clear(w.batch)
	return nil
}

// flushRows inserts the pending rows, as few statements as insertChunks allow.
func (w *writerState) flushRows() error {
	// Events with a recorded model call go one by one, the others in chunks that bind no
	// exchange: the order of rows in the table is not the events' order (seq is).
	rows := w.rows[:0]
	for _, r := range w.rows {
		if r.exchange == nil {
			rows = append(rows, r)
			continue
		}
		if _, err := w.insExchange.Exec(r.job, r.seq, r.time, r.typ, bytesString(r.data), bytesString(r.exchange)); err != nil {
			return err
		}
	}
	for len(rows) > 0 {
		for _, k := range insertChunks {
			for len(rows) >= k {
				args := w.args[:0]
				for _, r := range rows[:k] {
					args = append(args, r.job, r.seq, r.time, r.typ, bytesString(r.data))
				}
				w.args = args
				st, err := w.insertStmt(k)
				if err != nil {
					return err
				}
				if _, err := st.Exec(args...); err != nil {
					return err
				}
				rows = rows[k:]
			}
		}
	}
	clear(w.args)
	clear(w.rows)
	w.rows = w.rows[:0]
	return nil
}

type batchTx struct {
	w   *writerState
	now time.Time
}

func (bt *batchTx) touch(js *jobState) {
	for _, t := range bt.w.touched {
		if t == js {
			return
		}
	}
	bt.w.touched = append(bt.w.touched, js)
}

// lookup finds a job, from the cache or the database; a job that is not there is a refusal.
func (bt *batchTx) lookup(id string) (*jobState, error) {
	w := bt.w
	if js := w.jobs[id]; js != nil {
		return js, nil
	}
	js := &jobState{id: id}
	err := w.selJob.QueryRow(id).Scan(&js.n, &js.status)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, refusal{w.s.notFound(id)}
	}
	if err != nil {
		return nil, err
	}
	if err := w.maxSeq.QueryRow(js.n).Scan(&js.seq); err != nil {
		return nil, err
	}
	if !js.status.Terminal() {
		w.jobs[id] = js
	}
	return js, nil
}

// insert assigns the next seq of js's job to an event and queues its row.
func (bt *batchTx) insert(o *op, js *jobState, typ string, data, exchange json.RawMessage) {
	js.seq++
	bt.w.rows = append(bt.w.rows, row{js.n, js.seq, bt.now.UnixNano(), typ, data, exchange})
	o.out = append(o.out, Event{Job: js.id, Seq: js.seq, Time: bt.now, Type: typ, Data: data})
}

func (bt *batchTx) apply(o *op) error {
	w := bt.w
	switch o.kind {
	case opAppend:
		js, err := bt.lookup(o.job)
		if err != nil {
			return err
		}
		if js.status.Terminal() {
			return refusal{fmt.Errorf("%w: job %s is %s and takes no more events", ErrJobEnded, o.job, js.status)}
		}
		if w.refuseEvents {
			return refusal{w.s.DiskFull()}
		}
		bt.touch(js)
		for _, pe := range o.events {
			bt.insert(o, js, pe.typ, pe.data, pe.exchange)
			if pe.usage != nil {
				js.usage.add(pe.usage)
				js.dirty = true
			}
			if pe.session() {
				if err := w.setSession(js.n, pe.data); err != nil {
					return err
				}
			}
			if tb := pe.traceback(); tb != nil {
				if err := w.setTraceback(js.n, tb); err != nil {
					return err
				}
			}
		}
		return nil

	case opCreate:
		if w.refuseEvents {
			return refusal{w.s.DiskFull()}
		}
		j := o.create
		j.CreatedAt = bt.now
		res, err := w.insJob.Exec(j.ID, j.Agent, j.Plugin, string(j.Input), j.InputText, j.ModelRecord, j.ModelName,
			string(j.Status), bt.now.UnixNano(), j.Limits.MaxSteps, j.Limits.Timeout.Milliseconds(), originJob(j.Origin), originHow(j.Origin))
		if err != nil {
			return err
		}
		js := &jobState{id: j.ID, status: j.Status}
		if js.n, err = res.LastInsertId(); err != nil {
			return err
		}
		w.jobs[j.ID] = js
		bt.touch(js)
		data, _ := json.Marshal(statusData{Status: j.Status})
		bt.insert(o, js, EventStatus, data, nil)
		return nil

	case opStatus:
		js, err := bt.lookup(o.job)
		if err != nil {
			return err
		}
		if len(o.events) > 0 {
			// A job's last events (FinishJobWith), before its end, and only with it.
			if !CanTransition(js.status, o.status) {
				return refusal{&TransitionError{Job: js.id, From: js.status, To: o.status}}
			}
			bt.touch(js)
			for _, pe := range o.events {
				bt.insert(o, js, pe.typ, pe.data, nil)
				if pe.usage != nil {
					js.usage.add(pe.usage)
					js.dirty = true
				}
			}
		}
		return bt.setStatus(o, js, o.status, o.reason, o.output)

	case opInterrupt:
		rows, err := w.conn.QueryContext(context.Background(), `SELECT id FROM jobs WHERE status IN (?, ?, ?) ORDER BY n`, StatusQueued, StatusRunning, StatusWaitingForApproval)
		if err != nil {
			return err
		}
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, id := range ids {
			js, err := bt.lookup(id)
			if err != nil {
				return err // the job was there a moment ago: not a refusal
			}
			if err := bt.setStatus(o, js, StatusInterrupted, o.reason, nil); err != nil {
				return err
			}
		}
		o.ids = ids
		return nil

	case opFunc:
		ctx := context.Background()
		if err := w.flushRows(); err != nil { // what fn reads must be there
			return err
		}
		if _, err := w.conn.ExecContext(ctx, `SAVEPOINT op`); err != nil {
			return err
		}
		changes, err := o.fn(w.conn)
		if err != nil {
			if _, err := w.conn.ExecContext(ctx, `ROLLBACK TO op`); err != nil {
				return err
			}
			if _, err := w.conn.ExecContext(ctx, `RELEASE op`); err != nil {
				return err
			}
			return refusal{err}
		}
		o.changes = changes
		_, err = w.conn.ExecContext(ctx, `RELEASE op`)
		return err
	}
	return fmt.Errorf("unknown op %d", o.kind)
}

func (bt *batchTx) setStatus(o *op, js *jobState, to Status, reason string, output json.RawMessage) error {
	from := js.status
	if !CanTransition(from, to) {
		return refusal{&TransitionError{Job: js.id, From: from, To: to}}
	}
	now := bt.now.UnixNano()
	var started, ended, out any
	if to == StatusRunning {
		started = now
	}
	if to.Terminal() {
		ended = now
	}
	if output != nil {
		out = string(output)
	}
	if _, err := bt.w.updStatus.Exec(string(to), reason, started, ended, out, js.n); err != nil {
		return err
	}
	js.status = to
	bt.touch(js)
	data, _ := json.Marshal(statusData{Status: to, From: from, Reason: reason})
	bt.insert(o, js, EventStatus, data, nil)
	return nil
}

// execer is what a write function gets: the write connection, inside the batch's transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// write runs fn in the writer's transaction, within a savepoint: an error from fn undoes what it
// wrote and is returned, the rest of the batch commits. For the tables of later features
// (approvals, hook rules), whose writes must go through the one write connection too. fn returns
// the changes it made, which the change feed publishes once they are committed.
func (s *Store) write(ctx context.Context, fn func(execer) ([]Change, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.do(&op{kind: opFunc, fn: fn})
}

// checkpointInterval is how often the checkpointer looks for new commits.
const checkpointInterval = 200 * time.Millisecond

// checkpointer copies the WAL's pages back into the database on its own connection, a PASSIVE
// checkpoint every checkpointInterval after commits: it never blocks the writer or a reader, so
// the writer's commits do not stall on SQLite's automatic checkpoint (with its fsync) every 1000
// pages. Once a checkpoint has copied everything, the next commit starts the WAL over, so the WAL
// stays as large as the writes of a few intervals. The writer's own automatic checkpoint remains,
// at 64 MiB, for a checkpointer that cannot keep up (a reader holding an old snapshot). While the
// disk is full it looks for room instead (diskfull.go).
func (s *Store) checkpointer() {
	defer s.subsW.Done()
	t := time.NewTicker(checkpointInterval)
	defer t.Stop()
	var done int64
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		if s.full.Load() != nil {
			// A checkpoint would grow the database into the room the reserve gave back for
			// jobs' ends: none until there is room again.
			if !s.roomAgain() {
				continue
			}
		}
		n := s.stats.batches.Load()
		if n == done {
			continue
		}
		var busy, log, copied int
		if err := s.cdb.QueryRowContext(s.ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &copied); err == nil {
			s.stats.checkpoints.Add(1)
			done = n
		}
	}
}

// bytesString is b as a string without a copy: the rows' data is the store's own copy, never
// modified once prepared, and SQLite copies what it binds.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// originJob and originHow are a job's origin's columns: NULL for none.
func originJob(o *Origin) any {
	if o == nil {
		return nil
	}
	return o.Job
}

func originHow(o *Origin) any {
	if o == nil {
		return nil
	}
	return o.How
}
