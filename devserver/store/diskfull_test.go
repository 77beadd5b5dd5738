//go:build linux

package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/internal/testbin"
)

// The full disk is a real one: a tmpfs of a few MiB (testbin.SmallDisk).

// Starting on a full disk says so, how much is free and what to do, whether the store is new or
// was there (SQLite said `disk I/O error (4874)`: a -shm it could not grow); nothing is half made.
func TestOpenOnAFullDisk(t *testing.T) {
	disk, ok := testbin.SmallDisk(t, 4)
	if !ok {
		return
	}
	for _, existing := range []bool{false, true} {
		dir := filepath.Join(disk, fmt.Sprint("state-", existing))
		if existing {
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			newJob(t, s)
			s.Close()
		}
		testbin.Fill(t, disk, "filler")
		_, err := Open(dir)
		var full *DiskFullError
		if !errors.As(err, &full) || !full.AtOpen || !errors.Is(err, ErrDiskFull) {
			t.Fatalf("existing %v: got %v", existing, err)
		}
		for _, want := range []string{"the disk that holds the state directory " + dir + " is full (", " free): oz0 dev needs 1 MiB free there; free some space on it, or choose another --state-dir"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("existing %v: %q lacks %q", existing, err, want)
			}
		}
		os.Remove(filepath.Join(disk, "filler"))
		s, err := Open(dir)
		if err != nil {
			t.Fatalf("existing %v: Open once there is room: %v", existing, err)
		}
		if jobs, _ := s.ListJobs(ListFilter{}); len(jobs) != map[bool]int{false: 0, true: 1}[existing] {
			t.Errorf("existing %v: %d jobs", existing, len(jobs))
		}
		s.Close()
	}
}

// A store whose disk fills up: the write that found it full fails saying so, and from then on the
// store takes no event and no new job, but writes the ends of jobs (with their last events) from
// its reserve; once the disk has room again, it writes everything again.
func TestDiskFullEndsJobsThenCarriesOn(t *testing.T) {
	disk, ok := testbin.SmallDisk(t, 10)
	if !ok {
		return
	}
	dir := filepath.Join(disk, "state")
	var told []error
	notes := make(chan error, 10)
	s, err := OpenWith(dir, Options{OnDiskFull: func(full error) { notes <- full }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := os.WriteFile(filepath.Join(disk, "filler"), make([]byte, 6<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	flood, other := newJob(t, s), newJob(t, s)
	for _, j := range []Job{flood, other} {
		if err := s.SetStatus(j.ID, StatusRunning, ""); err != nil {
			t.Fatal(err)
		}
	}
	// One short say a commit: the write that finds the disk full has next to nothing of it (a
	// larger one would leave what it took of the disk to the writes after it).
	say := json.RawMessage(`{"text":"` + strings.Repeat("x", 1000) + `"}`)
	var full error
	for i := 0; full == nil; i++ {
		if i > 100000 {
			t.Fatal("10 MiB took 100 MB of says")
		}
		_, full = s.Append(flood.ID, EventSay, say)
	}
	var dfe *DiskFullError
	if !errors.As(full, &dfe) || dfe.AtOpen || dfe.Dir != dir {
		t.Fatalf("the write that found the disk full: %v", full)
	}
	if !strings.Contains(full.Error(), "the disk that holds oz0 dev's state directory "+dir+" is full (") ||
		!strings.Contains(full.Error(), "free some space on it (oz0 dev carries on once it can write)") {
		t.Errorf("the error: %v", full)
	}
	told = append(told, <-notes)
	if !errors.Is(told[0], ErrDiskFull) || s.DiskFull() == nil {
		t.Fatalf("told %v, DiskFull %v", told[0], s.DiskFull())
	}
	if _, err := os.Stat(filepath.Join(dir, ReserveFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the reserve is still there: %v", err)
	}

	// Events and new jobs are refused, without a try: a short say as much as a long one.
	if _, err := s.Append(other.ID, EventSay, json.RawMessage(`{"text":"hi"}`)); !errors.Is(err, ErrDiskFull) {
		t.Errorf("an event while the disk is full: %v", err)
	}
	if _, err := s.CreateJob(NewJob{Agent: "a"}); !errors.Is(err, ErrDiskFull) {
		t.Errorf("a new job while the disk is full: %v", err)
	}
	// The ends are written, their last events with them.
	gap := NewEvent{Type: EventLog, Data: json.RawMessage(`{"level":"warning","message":"3 events were not recorded","gap":{"events":3,"bytes":3000}}`)}
	if err := s.FinishJobWith(flood.ID, StatusFailed, "its events could not be recorded", nil, gap); err != nil {
		t.Fatalf("a job's end while the disk is full: %v", err)
	}
	if err := s.FinishJob(other.ID, StatusSucceeded, "", json.RawMessage(`"done"`)); err != nil {
		t.Fatalf("another job's end while the disk is full: %v", err)
	}
	evs, err := s.Events(flood.ID, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(evs); n < 3 || evs[n-2].Type != EventLog || !strings.Contains(string(evs[n-2].Data), `"gap"`) || !evs[n-1].Terminal() {
		t.Errorf("the record does not end with the gap, then the end: %v", evs[max(0, n-2):])
	}
	if j, _ := s.GetJob(other.ID); j.Status != StatusSucceeded || string(j.Output) != `"done"` {
		t.Errorf("the other job: %+v", j)
	}

	// Room again: the store says so, takes its reserve again, and writes everything again.
	os.Remove(filepath.Join(disk, "filler"))
	select {
	case n := <-notes:
		if n != nil {
			t.Fatalf("told %v, want room again", n)
		}
	case <-time.After(time.Minute):
		t.Fatal("the store never saw the room again")
	}
	if s.DiskFull() != nil {
		t.Errorf("DiskFull once told of room: %v", s.DiskFull())
	}
	if fi, err := os.Stat(filepath.Join(dir, ReserveFile)); err != nil || fi.Size() != reserveSize {
		t.Errorf("the reserve is not back: %v %v", fi, err)
	}
	j := newJob(t, s)
	s.SetStatus(j.ID, StatusRunning, "")
	if _, err := s.Append(j.ID, EventSay, say); err != nil {
		t.Fatalf("an event once there is room: %v", err)
	}
	if err := s.FinishJob(j.ID, StatusSucceeded, "", nil); err != nil {
		t.Fatal(err)
	}
}
