package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// File names inside the state directory.
const (
	DBFile   = "oz0.db"   // the database; SQLite adds oz0.db-wal and oz0.db-shm beside it
	LockFile = "oz0.lock" // held (flock) while a Store is open, so two processes never share a state dir
)

// Errors that callers test with errors.Is.
var (
	ErrNotFound          = errors.New("not found")
	ErrIllegalTransition = errors.New("illegal status transition")
	ErrJobEnded          = errors.New("the job has ended")
	ErrClosed            = errors.New("the store is closed")
	ErrInvalid           = errors.New("invalid argument")
	ErrNewerSchema       = errors.New("the state database was written by a newer oz0")
	ErrNotADatabase      = errors.New("not an oz0 state database")
	ErrStateDir          = errors.New("unusable state directory")
	ErrLocked            = errors.New("the state directory is in use by another oz0 process")
)

// Options tune a Store. The zero value is what `oz0 dev` uses.
type Options struct {
	// FullSync makes every commit fsync the WAL (SQLite synchronous=FULL): an acknowledged event
	// then survives a power loss too, at the cost of one fsync (≈ 1 ms on a VM disk) per group
	// commit. The default (synchronous=NORMAL) survives any crash of the process, kill -9
	// included, and the database stays consistent after a power loss, which may lose the last
	// commits before it.
	FullSync bool
	// NoSync never fsyncs (SQLite synchronous=OFF; it wins over FullSync), for a state that does
	// not outlive the process (oz0 dev --ephemeral removes it at the stop): a fresh database's
	// first commits were a third of its open, in fsyncs alone.
	NoSync bool
	// Readers is the size of the read pool (default 4).
	Readers int
	// MaxBatch bounds how many events one group commit holds (default 4096).
	MaxBatch int
	// LiveBuffer is how many live events a subscriber may fall behind before it is switched back to
	// catching up from the database, and how many changes a watcher of the change feed may fall
	// behind before it is told to read everything again (default twice MaxBatch).
	LiveBuffer int
	// OnDiskFull is told, from the store's goroutines, when a write finds the disk full (a
	// *DiskFullError: from then on the store writes only what ends jobs) and when the disk has
	// room again (nil). It must not block.
	OnDiskFull func(full error)
}

func (o *Options) defaults() {
	if o.Readers <= 0 {
		o.Readers = 4
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 4096
	}
	if o.LiveBuffer <= 0 {
		// Twice a group commit: a batch the writer publishes at once never overflows a
		// subscriber that keeps up (with less, a chatty harness's every large batch sent its
		// live streams back to reading the database).
		o.LiveBuffer = 2 * o.MaxBatch
	}
}

// Store is the dev server's durable job record. It is safe for concurrent use.
type Store struct {
	dir  string
	path string
	opts Options
	lock *os.File

	wdb *sql.DB // the writer pool: one connection, used only by the writer goroutine
	rdb *sql.DB // the reader pool: query_only connections
	cdb *sql.DB // the checkpointer's connection

	reqs    chan *op
	sendMu  sync.RWMutex // held shared while sending to reqs, exclusively by Close
	closed  bool         // under sendMu
	writerW sync.WaitGroup

	ctx    context.Context // cancelled by Close; ends subscriptions
	cancel context.CancelFunc
	subsW  sync.WaitGroup

	hub    hub
	masker atomic.Pointer[func([]byte) []byte]
	full   atomic.Pointer[DiskFullError] // set while the disk is full (diskfull.go)
	stats  struct{ batches, ops, events, checkpoints, lags atomic.Int64 }

	// Owned by the writer goroutine.
	w writerState

	closeOnce sync.Once
	closeErr  error
}

// Open opens (creating it if need be) the store in dir, migrates its schema and takes the state
// directory's lock. The caller must Close it.
func Open(dir string) (*Store, error) { return OpenWith(dir, Options{}) }

// OpenWith is Open with options.
func OpenWith(dir string, opts Options) (*Store, error) {
	opts.defaults()
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrStateDir, dir, err)
	}
	if err := checkDir(abs); err != nil {
		return nil, err
	}
	lock, err := lockDir(abs)
	if err != nil {
		return nil, err
	}
	s := &Store{dir: abs, path: filepath.Join(abs, DBFile), opts: opts, lock: lock}
	if err := s.open(); err != nil {
		s.closeDBs()
		unlockDir(lock)
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.hub.init()
	s.reqs = make(chan *op, 1024)
	s.w.init(s)
	s.writerW.Add(1)
	go s.writer()
	s.subsW.Add(1)
	go s.checkpointer()
	return s, nil
}

// Dir is the state directory, absolute.
func (s *Store) Dir() string { return s.dir }

// Path is the database file.
func (s *Store) Path() string { return s.path }

// checkDir creates dir (0700) if need be and proves that it can create files there.
func checkDir(dir string) error {
	hint := "fix its permissions or choose another with --state-dir"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("%w: cannot create the state directory %s: %v; %s", ErrStateDir, dir, unwrapPath(err), hint)
	}
	f, err := os.CreateTemp(dir, ".oz0-probe-*")
	if err != nil {
		return fmt.Errorf("%w: the state directory %s is not writable: %v; %s", ErrStateDir, dir, unwrapPath(err), hint)
	}
	name := f.Name()
	f.Close()
	os.Remove(name)
	return nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

var sqliteMagic = []byte("SQLite format 3\x00")

// checkFile refuses a database file that is not SQLite or that cannot be written, before SQLite
// touches it.
func (s *Store) checkFile() error {
	f, err := os.OpenFile(s.path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: cannot open %s for writing: %v; fix its permissions, or move it away or choose another --state-dir", ErrStateDir, s.path, unwrapPath(err))
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	n, err := io.ReadFull(f, head)
	if n == 0 && (err == io.EOF) {
		// What the store held is gone (a disk that filled up under a copy, a file cut short):
		// starting on it as on a new store would say nothing of that. (A first start killed
		// between making the file and SQLite's first write leaves one too, in a moment's window.)
		return &stateFileError{fmt.Sprintf("the job store %s is empty (0 bytes): whatever it held is lost; %s", s.path, s.moveAway())}
	}
	if !bytes.Equal(head[:n], sqliteMagic) {
		return s.notADB("it is not a SQLite database")
	}
	return nil
}

func (s *Store) notADB(why string) error {
	return fmt.Errorf("%w: %s: %s; %s", ErrNotADatabase, s.path, why, s.moveAway())
}

// corrupt is the error of a database SQLite finds malformed, at the open or later (a page is read
// when a call needs it, so a damaged one may show only then).
func (s *Store) corrupt() error {
	return &stateFileError{fmt.Sprintf("the job store %s is corrupt (SQLite: database disk image is malformed); %s", s.path, s.moveAway())}
}

// moveAway is the mend of a database oz0 cannot use: a new one in its place. Its write-ahead log
// goes with it: SQLite would apply it to the new one.
func (s *Store) moveAway() string {
	return "move it away, with the " + filepath.Base(s.path) + "-wal beside it if there is one (oz0 dev starts a new store), or choose another --state-dir"
}

// stateFileError is a database file oz0 cannot use: errors.Is matches ErrNotADatabase.
type stateFileError struct{ msg string }

func (e *stateFileError) Error() string { return e.msg }
func (e *stateFileError) Unwrap() error { return ErrNotADatabase }

type connKind int

const (
	writerConn connKind = iota
	readerConn
	checkpointConn
)

// dsn is the data source of one kind of connection. Every connection waits up to 10 s for a
// lock. The writer's turns on WAL and foreign keys, keeps temporary data (statement journals) in
// memory, begins its transactions IMMEDIATE, and leaves checkpoints to the checkpointer (see
// checkpointer) unless the WAL passes 16384 pages (64 MiB); readers are query_only.
func (s *Store) dsn(kind connKind) string {
	u := (&url.URL{Path: s.path}).EscapedPath()
	sync := "NORMAL"
	switch {
	case s.opts.NoSync:
		sync = "OFF"
	case s.opts.FullSync:
		sync = "FULL"
	}
	q := []string{"_pragma=busy_timeout(10000)"}
	switch kind {
	case readerConn:
		q = append(q, "_pragma=query_only(1)")
	case writerConn:
		// synchronous before journal_mode: a new database's switch to WAL is its first write.
		q = append(q, "_pragma=foreign_keys(1)", "_pragma=synchronous("+sync+")", "_pragma=journal_mode(WAL)",
			"_pragma=temp_store(MEMORY)", "_pragma=wal_autocheckpoint(16384)", "_pragma=journal_size_limit(67108864)", "_txlock=immediate")
	case checkpointConn:
		q = append(q, "_pragma=synchronous("+sync+")")
	}
	return "file:" + u + "?" + strings.Join(q, "&")
}

func (s *Store) open() error {
	if err := s.checkFile(); err != nil {
		return err
	}
	if err := s.checkRoom(); err != nil {
		return err
	}
	if err := s.private(); err != nil {
		return err
	}
	var err error
	s.wdb, err = sql.Open("sqlite", s.dsn(writerConn))
	if err != nil {
		return fmt.Errorf("open %s: %w", s.path, err)
	}
	s.wdb.SetMaxOpenConns(1)
	s.wdb.SetMaxIdleConns(1)
	s.wdb.SetConnMaxLifetime(0)
	s.wdb.SetConnMaxIdleTime(0)
	if err := s.wdb.Ping(); err != nil {
		return s.openErr(err)
	}
	var mode string
	if err := s.wdb.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		return s.openErr(err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("%w: %s: cannot use WAL mode (journal_mode is %s); put the state directory on a local disk with --state-dir", ErrStateDir, s.path, mode)
	}
	if err := migrate(s.wdb, s.path); err != nil {
		if e := s.dbError(err, true); e != nil {
			return e
		}
		return err
	}
	s.rdb, err = sql.Open("sqlite", s.dsn(readerConn))
	if err != nil {
		return fmt.Errorf("open %s: %w", s.path, err)
	}
	s.rdb.SetMaxOpenConns(s.opts.Readers)
	s.rdb.SetMaxIdleConns(s.opts.Readers)
	// The readers and the checkpointer connect on their first use, not here: the writer's
	// connection has proved the file, and each connection made at the open was a sixth of it.
	s.cdb, err = sql.Open("sqlite", s.dsn(checkpointConn))
	if err != nil {
		return fmt.Errorf("open %s: %w", s.path, err)
	}
	s.cdb.SetMaxOpenConns(1)
	return nil
}

// openErr turns SQLite's errors at open into errors that say what to do.
func (s *Store) openErr(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_NOTADB:
			return s.notADB("it is not a SQLite database")
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR:
			if e := s.dbError(err, true); e != nil {
				return e
			}
		case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM:
			return fmt.Errorf("%w: cannot open %s for writing: %v; fix its permissions or choose another --state-dir", ErrStateDir, s.path, err)
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fmt.Errorf("%w: %s is locked: %v", ErrLocked, s.path, err)
		}
	}
	return fmt.Errorf("open %s: %w", s.path, err)
}

// Stats are counters of the writer since Open.
type Stats struct {
	Commits  int64 // group commits (batches)
	Requests int64 // requests committed: appends, AppendBatch calls, status changes…
	Events   int64 // rows of the requests (an AppendBatch counts its events)
	// Lags counts the times a live subscriber fell Options.LiveBuffer events behind and was sent
	// back to catch up from the database, or a watcher of the change feed as many changes behind
	// and was told to read everything again.
	Lags int64
	// Checkpoints counts the background checkpoints.
	Checkpoints int64
}

// Stats returns the writer's counters: Events/Commits is the mean group commit.
func (s *Store) Stats() Stats {
	return Stats{Commits: s.stats.batches.Load(), Requests: s.stats.ops.Load(), Events: s.stats.events.Load(),
		Lags: s.stats.lags.Load(), Checkpoints: s.stats.checkpoints.Load()}
}

// SetMasker sets the function applied to every text the store writes (event data, job input,
// input text, output and reasons) before it is written, so that secret values never reach the
// database. It must not modify its argument, may return it unchanged when there is nothing to
// mask, and must be safe for concurrent use. nil removes it.
func (s *Store) SetMasker(m func([]byte) []byte) {
	if m == nil {
		s.masker.Store(nil)
		return
	}
	s.masker.Store(&m)
}

// Mask applies the store's masker (SetMasker) to b, as the store does to what it writes: for
// those that show what they read decoded, where a secret escaped in the bytes kept shows again.
func (s *Store) Mask(b []byte) []byte { return s.mask(b) }

func (s *Store) mask(b []byte) []byte {
	if p := s.masker.Load(); p != nil && len(b) > 0 {
		return (*p)(b)
	}
	return b
}

func (s *Store) maskString(v string) string {
	if p := s.masker.Load(); p != nil && v != "" {
		return string((*p)([]byte(v)))
	}
	return v
}

// Close stops accepting writes, commits what was queued, ends every subscription (their Err is
// ErrClosed), closes the database and releases the state directory.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.sendMu.Lock()
		s.closed = true
		close(s.reqs)
		s.sendMu.Unlock()
		s.writerW.Wait()
		s.cancel()
		s.subsW.Wait()
		// Everything is written and no reader is left: the write-ahead log goes into the
		// database and is cut to nothing, even if a process outside holds the database open
		// (then SQLite cannot remove it when the last connection here closes, as it does).
		_, _ = s.cdb.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
		s.closeErr = s.closeDBs()
		unlockDir(s.lock)
	})
	return s.closeErr
}

func (s *Store) closeDBs() error {
	var errs []error
	if s.cdb != nil {
		errs = append(errs, s.cdb.Close())
	}
	if s.rdb != nil {
		errs = append(errs, s.rdb.Close())
	}
	if s.wdb != nil {
		errs = append(errs, s.wdb.Close())
	}
	return errors.Join(errs...)
}
