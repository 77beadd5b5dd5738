package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/orchestrator-zero/oz0/internal/textclip"
)

// A full disk. SQLite cannot write a byte once the disk is full, not even a job's end, so the
// store keeps a reserve: ReserveFile, reserveSize of the disk taken at the open. The first write
// that finds the disk full gives it back, and from then on the store writes only what ends jobs
// (status changes, FinishJobWith's last events, approvals), from that room: events and new jobs
// are refused with a *DiskFullError, so the node fails the jobs whose events it could not store
// and records their ends. The checkpointer looks at the disk meanwhile; once it has room for the
// reserve, for the checkpoint that was held up, and lowWater beside, the reserve is taken again and
// the store writes everything again.

// ReserveFile is the reserve's file in the state directory.
const ReserveFile = "oz0.reserve"

const (
	// reserveSize is what the reserve holds: a job's end is a few pages, so this is the ends of
	// hundreds of jobs, or of a few with a long reason each.
	reserveSize = 1 << 20
	// lowWater is the least free room (beside the reserve) the store opens with, and takes as
	// room again after a full disk; an I/O error with less than this free is the disk's fullness
	// (SQLite says so for a -shm file it cannot grow as a disk I/O error).
	lowWater = 1 << 20
)

// ErrDiskFull is matched (errors.Is) by a *DiskFullError.
var ErrDiskFull = errors.New("the disk is full")

// DiskFullError is a write the disk that holds the state directory had no room for.
type DiskFullError struct {
	Dir    string
	Free   int64 // the bytes free there when it was seen; -1: unknown
	AtOpen bool  // Open's error: the store did not open
}

func (e *DiskFullError) Error() string {
	free := ""
	if e.Free >= 0 {
		free = " (" + textclip.SizeName(e.Free) + " free)"
	}
	if e.AtOpen {
		return fmt.Sprintf("the disk that holds the state directory %s is full%s: oz0 dev needs %s free there; free some space on it, or choose another --state-dir",
			e.Dir, free, textclip.SizeName(lowWater))
	}
	return fmt.Sprintf("the disk that holds oz0 dev's state directory %s is full%s; free some space on it (oz0 dev carries on once it can write)", e.Dir, free)
}

// Is makes errors.Is(err, ErrDiskFull) true.
func (e *DiskFullError) Is(target error) bool { return target == ErrDiskFull }

func (s *Store) diskFull(atOpen bool) *DiskFullError {
	return &DiskFullError{Dir: s.dir, Free: freeSpace(s.dir), AtOpen: atOpen}
}

// DiskFull is the error of the disk's fullness while the store writes only what ends jobs; nil
// when it writes everything.
func (s *Store) DiskFull() error {
	if e := s.full.Load(); e != nil {
		return e
	}
	return nil
}

// dbError is what a database error means, in a person's words: the disk's fullness, a corrupt
// database; nil when it is neither.
func (s *Store) dbError(err error, atOpen bool) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return s.diskFull(atOpen)
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return nil
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_FULL:
		return s.diskFull(atOpen)
	case sqlite3.SQLITE_IOERR:
		// SQLite's I/O errors do not carry errno; a -shm it cannot grow (SQLITE_IOERR_SHMSIZE,
		// 4874), a write that failed short, on a disk with (nearly) nothing free, are its fullness.
		if free := freeSpace(s.dir); free >= 0 && free < lowWater {
			return s.diskFull(atOpen)
		}
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return s.corrupt()
	}
	return nil
}

// writeErr is the error of a write that failed: in a person's words where dbError has them.
func (s *Store) writeErr(err error) error {
	if e := s.dbError(err, false); e != nil {
		return e
	}
	return fmt.Errorf("write %s: %w", s.path, err)
}

// enterFull is the writer's, on the first write that found the disk full: the reserve is given
// back, for the writes that end jobs, and events and new jobs are refused until there is room.
func (s *Store) enterFull(e *DiskFullError) {
	if !s.full.CompareAndSwap(nil, e) {
		return
	}
	os.Remove(filepath.Join(s.dir, ReserveFile))
	if f := s.opts.OnDiskFull; f != nil {
		f(e)
	}
}

// roomAgain is the checkpointer's, while the disk is full: once there is room for the reserve,
// for the write-ahead log's pages to go into the database (the checkpoint the disk's fullness
// held up), and lowWater beside, the reserve is taken again and the store writes everything
// again.
func (s *Store) roomAgain() bool {
	var wal int64
	if fi, err := os.Stat(s.path + "-wal"); err == nil {
		wal = fi.Size()
	}
	if free := freeSpace(s.dir); free >= 0 && free < reserveSize+lowWater+wal {
		return false
	}
	if err := s.makeReserve(); err != nil {
		return false
	}
	s.full.Store(nil)
	if f := s.opts.OnDiskFull; f != nil {
		f(nil)
	}
	return true
}

// makeReserve takes the reserve's room on the disk, unless ReserveFile holds it already.
func (s *Store) makeReserve() error {
	path := filepath.Join(s.dir, ReserveFile)
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Size() >= reserveSize {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, filePerm)
	if err != nil {
		return fmt.Errorf("%w: cannot make %s: %v; fix the directory's permissions or choose another --state-dir", ErrStateDir, path, unwrapPath(err))
	}
	err = allocate(f, reserveSize)
	f.Close()
	if err != nil {
		os.Remove(path)
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			return s.diskFull(true)
		}
		return fmt.Errorf("%w: cannot make %s: %v; choose another --state-dir", ErrStateDir, path, unwrapPath(err))
	}
	return nil
}

// writeReserve fills f with n bytes that no filesystem compresses or shares, where it cannot be
// allocated without writing (allocate).
func writeReserve(f *os.File, n int) error {
	buf := make([]byte, 64<<10)
	var seed [32]byte
	r := rand.NewChaCha8(seed)
	for done := 0; done < n; done += len(buf) {
		r.Read(buf)
		if _, err := f.Write(buf[:min(len(buf), n-done)]); err != nil {
			return err
		}
	}
	return nil
}

// checkRoom refuses to open on a disk with less than lowWater free, beside the reserve.
func (s *Store) checkRoom() error {
	if err := s.makeReserve(); err != nil {
		return err
	}
	if free := freeSpace(s.dir); free >= 0 && free < lowWater {
		return s.diskFull(true)
	}
	return nil
}
