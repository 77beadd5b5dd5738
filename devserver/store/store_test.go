package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func newStore(t testing.TB, opts ...Options) *Store {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	s, err := OpenWith(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func newJob(t testing.TB, s *Store) Job {
	t.Helper()
	j, err := s.CreateJob(NewJob{Agent: "acme-triage", Plugin: "acme", Input: json.RawMessage(`"hello"`), InputText: "hello",
		ModelRecord: "fake", ModelName: "claude-x", Limits: Limits{MaxSteps: 10, Timeout: 10 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestOpenCreatesAndReopens(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", ".oz0", "dev")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	j := newJob(t, s)
	if s.Dir() != dir || s.Path() != filepath.Join(dir, DBFile) {
		t.Errorf("Dir %s Path %s", s.Dir(), s.Path())
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("state dir mode %v, %v; want 0700", fi.Mode(), err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Append(j.ID, EventSay, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: %v, want ErrClosed", err)
	}
	if _, err := s.GetJob(j.ID); !errors.Is(err, ErrClosed) {
		t.Errorf("GetJob after Close: %v, want ErrClosed", err)
	}
	if err := s.SetStatus(j.ID, StatusRunning, ""); !errors.Is(err, ErrClosed) {
		t.Errorf("SetStatus after Close: %v, want ErrClosed", err)
	}
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.GetJob(j.ID)
	if err != nil || got.ID != j.ID {
		t.Fatalf("reopened: %+v %v", got, err)
	}
	var mode string
	s.rdb.QueryRow("PRAGMA journal_mode").Scan(&mode)
	if mode != "wal" {
		t.Errorf("journal_mode %q", mode)
	}
}

func TestForeignKeys(t *testing.T) {
	s := newStore(t)
	err := s.write(t.Context(), func(tx execer) ([]Change, error) {
		_, err := tx.ExecContext(t.Context(), `INSERT INTO events (job, seq, time, type, data) VALUES (12345, 1, 0, 'say', '{}')`)
		return nil, err
	})
	if err == nil || !strings.Contains(err.Error(), "FOREIGN KEY") {
		t.Fatalf("insert of an event of no job: %v, want a foreign key error", err)
	}
	// The refused op wrote nothing and the store goes on.
	j := newJob(t, s)
	if _, err := s.Append(j.ID, EventSay, json.RawMessage(`{"text":"x"}`)); err != nil {
		t.Fatal(err)
	}
	err = s.write(t.Context(), func(tx execer) ([]Change, error) {
		var v string
		return nil, tx.QueryRowContext(t.Context(), `PRAGMA synchronous`).Scan(&v)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestMigrationsIdempotent(t *testing.T) {
	dir := t.TempDir()
	for range 3 {
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		var n, max int
		if err := s.rdb.QueryRow(`SELECT count(*), max(version) FROM schema_version`).Scan(&n, &max); err != nil {
			t.Fatal(err)
		}
		if n != len(migrations) || max != SchemaVersion() {
			t.Fatalf("schema_version has %d rows, max %d; want %d", n, max, len(migrations))
		}
		s.Close()
	}
}

func TestMigrateAppliesOnlyNewOnes(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	j := newJob(t, s)
	s.Close()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, DBFile)+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	later := append(append([]migration(nil), migrations...), migration{"later feature", []string{
		`CREATE TABLE later_feature (id TEXT PRIMARY KEY, job INTEGER NOT NULL REFERENCES jobs (n))`,
	}})
	for range 2 {
		if err := migrate(db, "x", later...); err != nil {
			t.Fatal(err)
		}
	}
	var v int
	db.QueryRow(`SELECT max(version) FROM schema_version`).Scan(&v)
	if v != len(later) {
		t.Fatalf("version %d", v)
	}
	var id string
	if err := db.QueryRow(`SELECT id FROM jobs`).Scan(&id); err != nil || id != j.ID {
		t.Fatalf("the job did not survive the migration: %q %v", id, err)
	}
	// A failing migration leaves the database as it was.
	bad := append(append([]migration(nil), later...), migration{"bad", []string{`CREATE TABLE x (a)`, `NOT SQL`}})
	if err := migrate(db, "x", bad...); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("schema version %d (bad)", len(bad))) {
		t.Fatalf("bad migration: %v", err)
	}
	var x int
	db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'x'`).Scan(&x)
	db.QueryRow(`SELECT max(version) FROM schema_version`).Scan(&v)
	if x != 0 || v != len(later) {
		t.Fatalf("a failed migration left table x (%d) or version %d", x, v)
	}
	// And this oz0 refuses the database that a later one migrated.
	db.Close()
	if _, err := Open(dir); !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), fmt.Sprintf("schema version %d and this oz0 knows up to %d", len(later), len(migrations))) {
		t.Fatalf("Open of a newer database: %v", err)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	s.write(t.Context(), func(tx execer) ([]Change, error) {
		_, err := tx.ExecContext(t.Context(), `INSERT INTO schema_version (version, name, applied_at) VALUES (99, 'future', 0)`)
		return nil, err
	})
	s.Close()
	_, err = Open(dir)
	if !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{filepath.Join(dir, DBFile), "newer oz0", "99", "upgrade oz0", "--state-dir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestOpenRefusesNotADatabase(t *testing.T) {
	for name, content := range map[string]string{
		"text":      "this is my shopping list\n",
		"json":      `{"jobs":[]}`,
		"truncated": "SQLite form",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, DBFile)
			os.WriteFile(path, []byte(content), 0o600)
			_, err := Open(dir)
			if !errors.Is(err, ErrNotADatabase) {
				t.Fatalf("got %v", err)
			}
			for _, want := range []string{path, "not a SQLite database", "move it away", "--state-dir"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if b, _ := os.ReadFile(path); string(b) != content {
				t.Errorf("the file was changed: %q", b)
			}
		})
	}
	t.Run("corrupt", func(t *testing.T) {
		// A SQLite header followed by garbage.
		dir := t.TempDir()
		path := filepath.Join(dir, DBFile)
		junk := append([]byte("SQLite format 3\x00"), []byte(strings.Repeat("\xff\x01garbage", 1000))...)
		os.WriteFile(path, junk, 0o600)
		_, err := Open(dir)
		if !errors.Is(err, ErrNotADatabase) || !strings.Contains(err.Error(), path) {
			t.Fatalf("got %v", err)
		}
		if b, _ := os.ReadFile(path); string(b) != string(junk) {
			t.Errorf("the file was changed")
		}
	})
	t.Run("foreign sqlite", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, DBFile)
		db, _ := sql.Open("sqlite", path)
		if _, err := db.Exec(`CREATE TABLE recipes (name TEXT)`); err != nil {
			t.Fatal(err)
		}
		db.Close()
		_, err := Open(dir)
		if !errors.Is(err, ErrNotADatabase) || !strings.Contains(err.Error(), "not one of oz0's") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("empty file", func(t *testing.T) {
		// What a disk that filled up under a copy leaves, or a file cut short: what the store
		// held is gone, which a new store in its place would not say.
		dir := t.TempDir()
		path := filepath.Join(dir, DBFile)
		os.WriteFile(path, nil, 0o600)
		_, err := Open(dir)
		if !errors.Is(err, ErrNotADatabase) {
			t.Fatalf("got %v", err)
		}
		for _, want := range []string{path + " is empty (0 bytes): whatever it held is lost", "move it away", "--state-dir"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
		if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
			t.Errorf("the file was changed: %v %v", fi, err)
		}
	})
}

// A database whose pages SQLite finds malformed, at the open (its schema, the migration's reads)
// or later (the jobs' pages, read when a call needs them), is refused with an error that says so
// and what to do, never SQLite's "database disk image is malformed (11)".
func TestCorruptDatabaseSaysWhatToDo(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 20 {
		j := newJob(t, s)
		s.SetStatus(j.ID, StatusRunning, "")
		for range 20 {
			s.Append(j.ID, EventSay, json.RawMessage(`{"text":"`+strings.Repeat("x", 200)+`"}`))
		}
		s.FinishJob(j.ID, StatusSucceeded, "", json.RawMessage(`"done"`))
		ids = append(ids, j.ID)
	}
	s.Close()
	good, err := os.ReadFile(filepath.Join(dir, DBFile))
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	refused := 0
	check := func(where string, err error) {
		t.Helper()
		if err == nil {
			return
		}
		refused++
		if !errors.Is(err, ErrNotADatabase) || !strings.Contains(err.Error(), "is corrupt") || !strings.Contains(err.Error(), "move it away") ||
			strings.Contains(err.Error(), "(11)") {
			t.Errorf("%s: %v", where, err)
		}
	}
	for p := 1; p < len(good)/page; p++ { // page 1, the header, is TestOpenRefusesNotADatabase's
		bad := slices.Clone(good)
		for i := p * page; i < (p+1)*page; i++ {
			bad[i] = 0xff
		}
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, DBFile), bad, 0o600)
		s, err := Open(d)
		check(fmt.Sprintf("page %d: Open", p+1), err)
		if err != nil {
			continue
		}
		_, err = s.MarkInterrupted("stopped")
		check(fmt.Sprintf("page %d: MarkInterrupted", p+1), err)
		_, err = s.ListJobs(ListFilter{Limit: 1000})
		check(fmt.Sprintf("page %d: ListJobs", p+1), err)
		for _, id := range ids {
			_, err := s.Events(id, 0, 1000)
			check(fmt.Sprintf("page %d: Events", p+1), err)
		}
		_, err = s.CreateJob(NewJob{Agent: "a"})
		check(fmt.Sprintf("page %d: CreateJob", p+1), err)
		s.Close()
	}
	if refused == 0 {
		t.Fatal("no corrupt page was noticed: the test corrupts nothing SQLite reads")
	}
}

func TestOpenRefusesUnusableDir(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "file")
	os.WriteFile(file, []byte("x"), 0o600)
	_, err := Open(filepath.Join(file, "dev"))
	if !errors.Is(err, ErrStateDir) || !strings.Contains(err.Error(), "--state-dir") || !strings.Contains(err.Error(), file) {
		t.Fatalf("state dir under a file: %v", err)
	}
	_, err = Open(file)
	if !errors.Is(err, ErrStateDir) {
		t.Fatalf("state dir that is a file: %v", err)
	}
	if os.Geteuid() == 0 {
		t.Log("running as root: permission bits do not stop root; the read-only cases are skipped")
		return
	}
	ro := filepath.Join(base, "ro")
	os.Mkdir(ro, 0o500)
	t.Cleanup(func() { os.Chmod(ro, 0o700) })
	_, err = Open(ro)
	if !errors.Is(err, ErrStateDir) || !strings.Contains(err.Error(), "not writable") {
		t.Fatalf("read-only dir: %v", err)
	}
	rw := filepath.Join(base, "rw")
	s, err := Open(rw)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	os.Chmod(filepath.Join(rw, DBFile), 0o400)
	_, err = Open(rw)
	if !errors.Is(err, ErrStateDir) || !strings.Contains(err.Error(), DBFile) {
		t.Fatalf("read-only database file: %v", err)
	}
}

func TestOpenRefusesSecondOpen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "held by process") {
		t.Fatalf("second Open: %v", err)
	}
	s.Close()
	s, err = Open(dir)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s.Close()
}

func TestPathWithOddCharacters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my state?dir #1 %20")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	newJob(t, s)
	s.Close()
	if _, err := os.Stat(filepath.Join(dir, DBFile)); err != nil {
		t.Fatalf("the database is not where it belongs: %v", err)
	}
}
