//go:build linux

package node_test

import (
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/devserver/node"
	"github.com/orchestrator-zero/oz0/devserver/store"
	"github.com/orchestrator-zero/oz0/internal/testbin"
)

// gapData is the data of the warning log event that marks what a job's record lacks.
type gapData struct {
	Level   string `json:"level"`
	Message string `json:"message"`
	Gap     *struct {
		Events int `json:"events"`
		Bytes  int `json:"bytes"`
	} `json:"gap"`
}

// wantGapThenFailed checks that a job's record ends with a gap, its error and its failure, and
// that it has no result; it returns the gap.
func wantGapThenFailed(t *testing.T, evs []store.Event, reason string) gapData {
	t.Helper()
	n := len(evs)
	if n < 3 {
		t.Fatalf("the record: %s", types(evs))
	}
	var gap gapData
	if err := json.Unmarshal(evs[n-3].Data, &gap); err != nil || evs[n-3].Type != store.EventLog || gap.Gap == nil || gap.Level != "warning" {
		t.Fatalf("the record does not end with a gap, its error and its end: %s; %s", types(evs[n-3:]), evs[n-3].Data)
	}
	if evs[n-2].Type != store.EventError || !strings.Contains(string(evs[n-2].Data), reason) || !evs[n-1].Terminal() {
		t.Errorf("after the gap: %s %s", evs[n-2].Data, evs[n-1].Data)
	}
	for _, e := range evs {
		if e.Type == store.EventResult {
			t.Errorf("the record has a result: %s", e.Data)
		}
	}
	return gap
}

// A session whose events cannot be recorded (the disk that holds the store is full) is stopped at
// once and its job fails saying why, its record marking the gap; a job that waits meanwhile is
// cancelled (its end written from the store's reserve); once the disk has room again, jobs run.
func TestEventsNotRecordedFailTheJob(t *testing.T) {
	disk, ok := testbin.SmallDisk(t, 10)
	if !ok {
		return
	}
	p := loadPlugin(t, map[string]string{"flood=saysflood 2000x4096": "", "hang": "", "echo": ""})
	w := newWorldOn(t, p, filepath.Join(disk, "state"), store.Options{}, nil)
	if err := os.WriteFile(filepath.Join(disk, "filler"), make([]byte, 6<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	waiting := w.submit(t, "hang", "wait")
	waitFor(t, "the waiting job's say", func() bool {
		evs, _ := w.store.Events(waiting.ID, 0, 100)
		return strings.Contains(types(evs), "say")
	})

	flood := w.submit(t, "flood", "8 MiB of says")
	evs, j := w.events(t, flood.ID, nil)
	const why = "its events could not be recorded, so its session was stopped: the disk that holds oz0 dev's state directory " // + dir
	if j.Status != store.StatusFailed || !strings.HasPrefix(j.Reason, why) || !strings.Contains(j.Reason, "is full") {
		t.Fatalf("the flood ended %s: %s", j.Status, j.Reason)
	}
	gap := wantGapThenFailed(t, evs, why)
	says := 0
	for _, e := range evs {
		if e.Type == store.EventSay {
			says++
		}
	}
	// The gap counts what was not recorded: says of 4 KiB, and maybe a smaller event or two of the
	// session's end (its stderr, its exit) that came before it was stopped.
	if gap.Gap.Events < 1 || gap.Gap.Bytes < 4096 || says+gap.Gap.Events >= 2000 {
		t.Errorf("%d says recorded, the gap %+v: the session was not stopped at once", says, *gap.Gap)
	}
	t.Logf("the job failed %s after it was submitted, %s after its last recorded event: %d says recorded, %d events (%d bytes) not",
		j.EndedAt.Sub(j.CreatedAt).Round(time.Millisecond), j.EndedAt.Sub(evs[len(evs)-4].Time).Round(time.Millisecond), says, gap.Gap.Events, gap.Gap.Bytes)

	if w.store.DiskFull() == nil {
		t.Fatal("the store does not say the disk is full")
	}
	if _, err := w.node.Submit("echo", "hi"); !errors.Is(err, store.ErrDiskFull) {
		t.Errorf("a job submitted while the disk is full: %v", err)
	}
	// Cancelled while the disk is full: its end is written from the reserve; what its session
	// wrote as it went (on stderr) is a gap before it, but the cancel decided its end.
	if !w.node.Cancel(waiting.ID) {
		t.Fatal("the waiting job is not live")
	}
	if _, j := w.events(t, waiting.ID, nil); j.Status != store.StatusCancelled || j.Reason != node.StoppedOnRequest {
		t.Errorf("the waiting job, cancelled while the disk is full: %s %s", j.Status, j.Reason)
	}

	os.Remove(filepath.Join(disk, "filler"))
	waitFor(t, "the store to see the room again", func() bool { return w.store.DiskFull() == nil })
	if _, j := w.events(t, w.submit(t, "echo", "hello again").ID, nil); j.Status != store.StatusSucceeded {
		t.Errorf("a job once there is room: %s %s", j.Status, j.Reason)
	}
}

// A job's end is decided once. When the store cannot write it (another process holds the
// database's write lock here: every write waits for it, then fails), the node keeps the end and
// tries again; a cancel meanwhile decides nothing, and the job stays as the store last had it.
// Once the store can write, the job ends as it was decided (it failed, its events lost), not
// cancelled.
func TestEndDecidedOnceWhenItCannotBeRecorded(t *testing.T) {
	p := loadPlugin(t, map[string]string{"flood=saysflood 100x4096": ""})
	dir := t.TempDir()
	logs := &logLines{}
	w := newWorldOn(t, p, dir, store.Options{}, func(c *node.Config) { c.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	flood := w.submit(t, "flood", "says")
	waitFor(t, "the job to run", func() bool {
		j, _ := w.store.GetJob(flood.ID)
		return j.Status == store.StatusRunning
	})

	// The lock is taken between the writer's commits: BEGIN IMMEDIATE waits for the one in
	// progress (the flood writes all the time) rather than fail at once with SQLITE_BUSY.
	lock, err := sql.Open("sqlite", filepath.Join(dir, store.DBFile)+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	conn, err := lock.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	waitFor2(t, "the node to give up recording the job's end for now", 2*time.Minute, func() bool {
		return logs.has("could not record a job's end; trying again")
	})
	if !w.node.Cancel(flood.ID) {
		t.Error("Cancel says the job whose end is being recorded is not live (the API then ends it itself)")
	}
	if j, _ := w.store.GetJob(flood.ID); j.Status != store.StatusRunning {
		t.Fatalf("the job is %s before its end could be recorded", j.Status)
	}
	if _, err := conn.ExecContext(t.Context(), `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	evs, j := w.events(t, flood.ID, nil)
	if j.Status != store.StatusFailed || !strings.Contains(j.Reason, "its events could not be recorded") || !strings.Contains(j.Reason, "database is locked") {
		t.Fatalf("the job ended %s: %s", j.Status, j.Reason)
	}
	wantGapThenFailed(t, evs, "its events could not be recorded")
}

// logLines keeps what is logged, for a test to wait for a line.
type logLines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logLines) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(l.b.String(), s)
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, what string, cond func() bool) { waitFor2(t, what, time.Minute, cond) }

func waitFor2(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
