// Package store is the durable job record of `oz0 dev`: jobs, their ordered event logs and the
// live stream of those logs, in an embedded SQLite database (modernc.org/sqlite, pure Go) in the
// state directory (`<plugin>/.oz0/dev/` unless --state-dir says otherwise; the caller passes it).
//
//	st, err := store.Open(dir)          // creates or migrates dir/oz0.db, locks dir
//	defer st.Close()
//	st.MarkInterrupted("oz0 dev stopped while the job ran") // at start-up
//	st.SetMasker(secrets.Masker())      // secret values never reach the database
//	j, _ := st.CreateJob(store.NewJob{Agent: "acme-triage", Input: in, InputText: text})
//	st.SetStatus(j.ID, store.StatusRunning, "")
//	st.Append(j.ID, store.EventSay, json.RawMessage(`{"text":"Sorting the ticket."}`))
//	st.FinishJob(j.ID, store.StatusSucceeded, "", output)
//	sub, _ := st.Subscribe(ctx, j.ID, lastSeq) // replay, then live, until the terminal event
//	for e := range sub.C { … }
//	w, _ := st.Watch(ctx)               // which jobs and approvals change, store-wide
//	for c := range w.C { … }
//	st.Trace(j.ID, w)                   // the whole record as JSON lines; LoadTrace reads it
//
// # Files
//
// dir/oz0.db (with oz0.db-wal and oz0.db-shm while open), dir/oz0.lock and dir/oz0.reserve, all mode
// 0600 (perm.go), the lock an flock held while a Store is open, so a second `oz0 dev` on the same state directory is refused with the pid of the
// first instead of sharing the database. Open refuses, with an error that names the file and what
// to do, and without touching it: a file that is not SQLite (its first bytes are checked before
// SQLite opens it), an empty one (what it held is lost: a new store in its place would not say
// so), a corrupt one, a SQLite database that is not oz0's (tables but no schema_version), one that
// a newer oz0 migrated (schema_version above SchemaVersion), a state directory or database file
// that cannot be written, and a disk with less than 1 MiB free (a *DiskFullError). A database
// SQLite finds malformed later, in a page a call reads, is said the same way (ErrNotADatabase,
// "is corrupt", move it away), never as SQLite's "database disk image is malformed (11)".
//
// # A full disk
//
// See diskfull.go: oz0.reserve keeps 1 MiB of the disk. The first write that finds the disk full
// fails with a *DiskFullError (ErrDiskFull), gives the reserve back and puts the store in a mode
// where it refuses events and new jobs (without trying) but writes status changes, job ends with
// their last events (FinishJobWith) and approvals from the room the reserve left, so that the
// node can end the jobs whose events it could not record. Once the disk has room again (for the
// reserve, the held-up checkpoint and 1 MiB beside), the reserve is taken again and the store
// writes everything again; Options.OnDiskFull is told of both.
//
// # Schema and migrations
//
// schema_version(version, name, applied_at) records each migration applied. Migrations are an
// ordered, append-only list (migrate.go); Open applies the missing ones in one transaction, so a
// failed migration leaves the database as it was, and applying them again is a no-op. Later
// features (approvals, hook rules) add their tables by appending a migration, and write through
// the writer too (Store.write runs a function in the writer's transaction, within a savepoint).
//
// # Connections
//
// One write connection, owned by a single goroutine (the writer), and a pool of query_only read
// connections (Options.Readers, default 4) plus one for checkpoints. WAL mode lets the readers
// read while the writer writes; a single writer is what SQLite allows anyway, and owning it in one
// goroutine is what makes the group commit and the seq assignment simple and exact. Every
// connection waits up to 10 s for a lock (busy_timeout); foreign keys are on.
//
// # Durability
//
// Every write is a transaction, and a call returns only after its transaction committed. With
// the default synchronous=NORMAL in WAL mode a commit survives any crash of the process (kill -9
// included: TestCrash kills a child that appends in a loop and checks that every acknowledged
// event is there, without gaps); a power loss or OS crash keeps the database consistent but may
// lose the last commits before it. Options.FullSync (synchronous=FULL) makes commits survive that
// too, for one fsync per group commit. Checkpoints (copying the WAL back into the database) run on
// their own connection in the background, so commits do not stall on them.
//
// # Group commit
//
// Append, AppendBatch, CreateJob, SetStatus, FinishJob and MarkInterrupted queue a request for
// the writer and wait. The writer takes everything queued (up to Options.MaxBatch events, 32 MiB
// of data), applies it in one transaction (the events with 64-row INSERTs), commits, publishes
// the committed events to live subscribers in order, then acknowledges each caller. A lone caller
// waits for one commit (no timer); under load the batches grow. A refused request (unknown job,
// illegal transition, ended job) fails alone and writes nothing; a database error fails its whole
// batch, rolled back, and no caller of it is told that anything was written (but a batch that
// found the disk full is written again without its events: A full disk). Validation, masking
// and copying of event data happen in the caller's goroutine, so the writer only writes.
//
// # Jobs and statuses
//
// Job IDs are "job_" and 20 random lowercase base32 characters (100 bits). Lists are newest first
// (insertion order, not the clock), paged with Before = the last ID of a page. Statuses and their
// transitions are in CanTransition: queued → running → (waiting_for_approval ↔ running) → one of
// the terminal succeeded, failed, cancelled, timed_out, interrupted; a queued job may also end
// without running (not succeeded). A status never "changes" to itself, and a terminal job never
// changes again: a late cancel after a finish (or the reverse) gets a *TransitionError matching
// ErrJobEnded. Every status change writes a status event in the same transaction, so the event
// log tells the whole story and ends with the terminal status; a job that has ended takes no more
// events (ErrJobEnded). Usage (model calls, tokens, cost) is summed from the model_call events in
// the transaction that appends them.
//
// # Events
//
// Seq is 1, 2, 3… per job, assigned by the writer, without gaps. Time is the commit's, UTC. Data
// is any JSON value (empty means null), at most MaxData; it is masked, and a value that masking
// made invalid JSON (a secret inside a number) is kept as a JSON string of the masked text. The
// types the dev server writes are the Event* constants; Type is a string, so new ones need no
// change here ("status" is the store's own). Storage: a rowid table in commit order (appends go to
// its end, in full pages) with a unique index on (job, seq). A table clustered by (job, seq)
// (WITHOUT ROWID) inserts in the middle of its b-tree for every job but the newest, splitting
// pages; the rowid table was 1.5–1.8× faster in the benchmarks with several jobs appending.
//
// # Live stream
//
// See subscribe.go: a subscriber is registered before it reads the database and an event is
// published after its commit, and events are passed on only in Seq order (last + 1), so the
// switch from replay to live has no gap and no duplicate. A subscriber that falls
// Options.LiveBuffer events behind is not sent more but goes back to the database and catches up,
// so a slow one never blocks the writer or other subscribers and never loses an event.
//
// # Change feed
//
// See changes.go: Watch is a store-wide feed of which job records (created, a status, usage) and
// approvals changed, published after their commit, for views that keep lists live (the dev UI).
// It carries no data: the watcher reads the record again. One that falls Options.LiveBuffer
// changes behind gets ChangeLost ("read everything again") instead of blocking the writer.
// Write functions (Store.write) return the changes they made. UsageByRecord sums the model calls
// by agent, model record and model.
//
// # Recorded model calls
//
// A recorded job's model calls (AppendBatchWithExchanges) are kept on their model_call events,
// in a column of their own (exchange.go), masked like event data and written in the event's
// commit; Exchanges reads them back. The live stream and the trace never carry a call's megabytes.
//
// # Secrets
//
// SetMasker's function is applied to everything the store writes: event data, the job's input,
// input text, output and reasons. The secrets package provides it.
//
// # Trace
//
// Trace writes {"oz0_trace":1,"job":{…}} and then one Event per line, in Seq order, from one
// read snapshot; LoadTrace reads it back and checks it.
package store
