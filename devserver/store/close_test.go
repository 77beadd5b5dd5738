package store

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A clean Close leaves no write-ahead log beside the database: what it held is checkpointed into
// the database, and the file is gone (or empty). It held 8 MiB of events here; after a flood,
// hundreds.
func TestCloseLeavesNoWAL(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	j := newJob(t, s)
	data := json.RawMessage(`{"text":"` + strings.Repeat("s", 256<<10) + `"}`)
	for range 32 {
		if _, err := s.Append(j.ID, EventSay, data); err != nil {
			t.Fatal(err)
		}
	}
	// A reader in the middle of the log, as a live stream or the UI leaves one.
	if _, err := s.Events(j.ID, 0, 10); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{DBFile + "-wal", DBFile + "-shm"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err == nil && fi.Size() > 0 {
			t.Errorf("%s is %d bytes after a clean Close; want it gone", name, fi.Size())
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Error(err)
		}
	}
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := s.Events(j.ID, 0, 100)
	if err != nil || len(evs) != 33 {
		t.Fatalf("after reopening: %d events, %v; want the 33 written", len(evs), err)
	}
}
