package store

import (
	"database/sql"
	"fmt"
	"time"
)

// A migration brings the schema from version N-1 to N, where N is its 1-based index in
// migrations. Append only: a migration that has shipped is never edited or reordered, since
// databases out there have recorded it as applied. Later features (approvals, hook rules) add
// their tables by appending here.
type migration struct {
	name  string
	stmts []string
}

var migrations = []migration{
	{"jobs and events", []string{
		`CREATE TABLE jobs (
			n             INTEGER PRIMARY KEY,          -- insertion order: the list order and the events' key
			id            TEXT    NOT NULL UNIQUE,      -- job_ + 20 base32 characters
			agent         TEXT    NOT NULL,
			plugin        TEXT    NOT NULL DEFAULT '',
			input         TEXT    NOT NULL DEFAULT 'null', -- JSON, as it came (masked)
			input_text    TEXT    NOT NULL DEFAULT '',
			model_record  TEXT    NOT NULL DEFAULT '',
			model_name    TEXT    NOT NULL DEFAULT '',
			status        TEXT    NOT NULL,
			reason        TEXT    NOT NULL DEFAULT '',
			output        TEXT,                         -- JSON; NULL until the job ends with one
			created_at    INTEGER NOT NULL,             -- Unix nanoseconds, UTC
			started_at    INTEGER,
			ended_at      INTEGER,
			max_steps     INTEGER NOT NULL DEFAULT 0,
			timeout_ms    INTEGER NOT NULL DEFAULT 0,
			model_calls   INTEGER NOT NULL DEFAULT 0,
			input_tokens  INTEGER NOT NULL DEFAULT 0,
			output_tokens INTEGER NOT NULL DEFAULT 0,
			cache_read_tokens     INTEGER NOT NULL DEFAULT 0,
			cache_creation_tokens INTEGER NOT NULL DEFAULT 0,
			cost_usd      REAL    NOT NULL DEFAULT 0
		)`,
		`CREATE INDEX jobs_by_status ON jobs (status, n)`,
		`CREATE INDEX jobs_by_agent ON jobs (agent, n)`,
		`CREATE TABLE events (
			id   INTEGER PRIMARY KEY,                   -- commit order: appends go to the table's end
			job  INTEGER NOT NULL REFERENCES jobs (n) ON DELETE CASCADE,
			seq  INTEGER NOT NULL,                      -- 1, 2, 3… per job, no gaps
			time INTEGER NOT NULL,                      -- Unix nanoseconds, UTC; the commit's
			type TEXT    NOT NULL,
			data TEXT    NOT NULL                       -- JSON (masked)
		)`,
		// A job's events, in order; also max(seq) and ON DELETE CASCADE.
		`CREATE UNIQUE INDEX events_by_job ON events (job, seq)`,
	}},
	{"approvals and approval rules", []string{
		`CREATE TABLE approvals (
			n          INTEGER PRIMARY KEY,
			id         TEXT    NOT NULL UNIQUE,         -- apr_ + 12 base32 characters
			job        TEXT    NOT NULL,
			agent      TEXT    NOT NULL,
			harness    TEXT    NOT NULL,
			tool       TEXT    NOT NULL,
			request    TEXT    NOT NULL,                -- the permission request's id in the session
			arguments  TEXT    NOT NULL,                -- JSON (masked)
			why        TEXT    NOT NULL DEFAULT '',
			status     TEXT    NOT NULL,                -- pending, approved, denied, withdrawn, interrupted
			scope      TEXT    NOT NULL DEFAULT '',     -- once, job, always (approved)
			reason     TEXT    NOT NULL DEFAULT '',     -- a denial's or a withdrawal's
			created_at INTEGER NOT NULL,
			decided_at INTEGER
		)`,
		`CREATE INDEX approvals_by_status ON approvals (status, n)`,
		`CREATE TABLE approval_rules (
			n          INTEGER PRIMARY KEY,
			id         TEXT    NOT NULL UNIQUE,         -- rule_ + 12 base32 characters
			target     TEXT    NOT NULL UNIQUE,         -- <harness>.<tool>
			approval   TEXT    NOT NULL DEFAULT '',     -- the approval whose "always" made it
			created_at INTEGER NOT NULL
		)`,
	}},
	{"recorded model calls", []string{
		// A recorded model call's request and answer, on its model_call event; NULL for others.
		`ALTER TABLE events ADD COLUMN exchange TEXT`,
	}},
	{"session starts", []string{
		// How the job's session was made: its session event's data (JSON); NULL before.
		`ALTER TABLE jobs ADD COLUMN session TEXT`,
	}},
	{"tracebacks", []string{
		// The traceback the job's harness failed with: its error event's traceback (a JSON array
		// of lines); NULL for a job that has none.
		`ALTER TABLE jobs ADD COLUMN traceback TEXT`,
	}},
	{"the tenant's quotas and kill switches", []string{
		// The model calls by the time they were metered: the tenant's quotas are counted from
		// the calls of the last month (MeteredCalls), which oz0 dev reads at its start.
		`CREATE INDEX events_model_calls_by_time ON events (time) WHERE type = 'model_call'`,
		// The kill switches thrown (oz0 tenant kill): of the tenant (record '') or of one record.
		`CREATE TABLE tenant_kills (
			record    TEXT    PRIMARY KEY,
			killed_at INTEGER NOT NULL              -- Unix nanoseconds, UTC
		)`,
	}},
	{"job origins", []string{
		// The job a job was made from (run again, replayed from its recording); NULL for others.
		`ALTER TABLE jobs ADD COLUMN from_job TEXT`,
		`ALTER TABLE jobs ADD COLUMN from_how TEXT`,
	}},
	{"eval runs", []string{
		// The dev UI's runs of the plugins' eval cases, the newest kept (MaxEvalRuns): what was
		// run (JSON), how many cases and how many have ended, the report (oz0 eval --json's: the
		// cases ended so far while it runs), the notes while it runs, why it failed.
		`CREATE TABLE eval_runs (
			id INTEGER PRIMARY KEY AUTOINCREMENT,
			started_at INTEGER NOT NULL,
			ended_at INTEGER,
			request TEXT NOT NULL,
			status TEXT NOT NULL,
			cases INTEGER NOT NULL,
			done INTEGER NOT NULL DEFAULT 0,
			report TEXT,
			notes TEXT,
			error TEXT
		)`,
	}},
}

// SchemaVersion is the schema version this oz0 writes.
func SchemaVersion() int { return len(migrations) }

// migrate brings the database to len(ms), in one transaction: a failed migration leaves the
// database as it was.
func migrate(db *sql.DB, path string, ms ...migration) error {
	if ms == nil {
		ms = migrations
	}
	tx, err := db.Begin() // BEGIN IMMEDIATE (the writer's _txlock)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", path, err)
	}
	defer tx.Rollback()
	var hasVersion int
	if err := tx.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'`).Scan(&hasVersion); err != nil {
		return fmt.Errorf("migrate %s: %w", path, err)
	}
	if hasVersion == 0 {
		var others int
		if err := tx.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'`).Scan(&others); err != nil {
			return fmt.Errorf("migrate %s: %w", path, err)
		}
		if others > 0 {
			return fmt.Errorf("%w: %s: it is a SQLite database, but not one of oz0's (it has no schema_version table); move it away (oz0 starts a new one) or choose another --state-dir", ErrNotADatabase, path)
		}
		if _, err := tx.Exec(`CREATE TABLE schema_version (
			version    INTEGER PRIMARY KEY,
			name       TEXT    NOT NULL,
			applied_at INTEGER NOT NULL -- Unix nanoseconds
		)`); err != nil {
			return fmt.Errorf("migrate %s: %w", path, err)
		}
	}
	var current int
	if err := tx.QueryRow(`SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&current); err != nil {
		return fmt.Errorf("migrate %s: %w", path, err)
	}
	if current > len(ms) {
		return fmt.Errorf("%w: %s has schema version %d and this oz0 knows up to %d; upgrade oz0, or choose another --state-dir", ErrNewerSchema, path, current, len(ms))
	}
	if current == len(ms) {
		return nil
	}
	for v := current + 1; v <= len(ms); v++ {
		m := ms[v-1]
		for _, stmt := range m.stmts {
			if _, err := tx.Exec(stmt); err != nil {
				return fmt.Errorf("migrate %s to schema version %d (%s): %w", path, v, m.name, err)
			}
		}
		if _, err := tx.Exec(`INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)`, v, m.name, time.Now().UnixNano()); err != nil {
			return fmt.Errorf("migrate %s: %w", path, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate %s: %w", path, err)
	}
	return nil
}
