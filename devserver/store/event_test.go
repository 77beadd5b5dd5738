package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestAppendSeqs(t *testing.T) {
	s := newStore(t)
	a, b := newJob(t, s), newJob(t, s)
	for i := range 5 {
		e, err := s.Append(a.ID, EventSay, json.RawMessage(fmt.Sprintf(`{"text":"%d"}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		if e.Seq != int64(i+2) || e.Job != a.ID || e.Type != EventSay || e.Time.IsZero() {
			t.Fatalf("%+v", e)
		}
	}
	e, _ := s.Append(b.ID, EventLog, json.RawMessage(`{"level":"info","message":"m"}`))
	if e.Seq != 2 {
		t.Fatalf("b's seq %d", e.Seq)
	}
	evs, err := s.Events(a.ID, 3, 2)
	if err != nil || len(evs) != 2 || evs[0].Seq != 4 || evs[1].Seq != 5 || string(evs[0].Data) != `{"text":"2"}` {
		t.Fatalf("page: %+v %v", evs, err)
	}
	if _, err := s.Events("job_aaaaaaaaaaaaaaaaaaaa", 0, 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("Events of no job: %v", err)
	}
	// The times never go back.
	all, _ := s.Events(a.ID, 0, 0)
	for i := 1; i < len(all); i++ {
		if all[i].Time.Before(all[i-1].Time) {
			t.Errorf("time went back at seq %d", all[i].Seq)
		}
	}
}

func TestAppendRefusals(t *testing.T) {
	s := newStore(t)
	j := newJob(t, s)
	cases := []struct {
		name string
		typ  string
		data string
		want error
	}{
		{"unknown job", EventSay, `{}`, ErrNotFound},
		{"status is the store's", EventStatus, `{"status":"succeeded"}`, ErrInvalid},
		{"empty type", "", `{}`, ErrInvalid},
		{"bad type", "Say Hi", `{}`, ErrInvalid},
		{"bad JSON", EventSay, `{"text":`, ErrInvalid},
		{"two values", EventSay, `{} {}`, ErrInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			job := j.ID
			if c.want == ErrNotFound {
				job = "job_aaaaaaaaaaaaaaaaaaaa"
			}
			if _, err := s.Append(job, c.typ, json.RawMessage(c.data)); !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %v", c.name, err, c.want)
			}
		})
	}
	big := make([]byte, MaxData+1)
	if _, err := s.Append(j.ID, EventSay, big); !errors.Is(err, ErrInvalid) {
		t.Errorf("too big: %v", err)
	}
	e, err := s.Append(j.ID, "custom.type_2", nil)
	if err != nil || string(e.Data) != "null" || e.Seq != 2 {
		t.Fatalf("no data: %+v %v", e, err)
	}
}

func TestAppendCopiesData(t *testing.T) {
	s := newStore(t)
	j := newJob(t, s)
	sub, err := s.Subscribe(t.Context(), j.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	buf := []byte(`{"text":"one"}`)
	e, _ := s.Append(j.ID, EventSay, buf)
	copy(buf, `{"text":"two"}`)
	if string(e.Data) != `{"text":"one"}` {
		t.Fatalf("the returned event shares the caller's buffer: %s", e.Data)
	}
	if got := <-sub.C; string(got.Data) != `{"text":"one"}` {
		t.Fatalf("the published event shares the caller's buffer: %s", got.Data)
	}
	sub.Close()
}

// Data given to the store is kept as it is, not copied (a tool's result of megabytes was held
// twice while it was written), unless masking changed it; data not given is copied
// (TestAppendCopiesData).
func TestAppendBatchKeepsGivenData(t *testing.T) {
	s := newStore(t)
	s.SetMasker(func(b []byte) []byte {
		if !bytes.Contains(b, []byte("hunter2")) {
			return b
		}
		return bytes.ReplaceAll(b, []byte("hunter2"), []byte("***"))
	})
	j := newJob(t, s)
	kept, secret := []byte(`{"result":"`+strings.Repeat("r", 1<<20)+`"}`), []byte(`{"result":"hunter2"}`)
	evs, err := s.AppendBatch(j.ID, []NewEvent{{Type: EventToolResult, Data: kept, Given: true}, {Type: EventToolResult, Data: secret, Given: true}})
	if err != nil {
		t.Fatal(err)
	}
	if &evs[0].Data[0] != &kept[0] {
		t.Error("the store copied data it was given")
	}
	if string(evs[1].Data) != `{"result":"***"}` || string(secret) != `{"result":"hunter2"}` {
		t.Errorf("masked: %s, and the caller's data became %s", evs[1].Data, secret)
	}
}

func TestAppendBatch(t *testing.T) {
	s := newStore(t)
	j := newJob(t, s)
	evs, err := s.AppendBatch(j.ID, []NewEvent{{Type: EventSay, Data: json.RawMessage(`{"text":"a"}`)}, {Type: EventLog, Data: nil}, {Type: EventSay, Data: json.RawMessage(`{"text":"b"}`)}})
	if err != nil || len(evs) != 3 || evs[0].Seq != 2 || evs[2].Seq != 4 {
		t.Fatalf("%+v %v", evs, err)
	}
	// One bad event refuses the whole batch.
	_, err = s.AppendBatch(j.ID, []NewEvent{{Type: EventSay, Data: json.RawMessage(`{}`)}, {Type: EventSay, Data: json.RawMessage(`{`)}})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "event 1") {
		t.Fatalf("bad batch: %v", err)
	}
	if evs, err := s.AppendBatch(j.ID, nil); err != nil || evs != nil {
		t.Fatalf("empty batch: %v %v", evs, err)
	}
	all, _ := s.Events(j.ID, 0, 0)
	if len(all) != 4 {
		t.Fatalf("%d events", len(all))
	}
}

func TestConcurrentAppendsNoGaps(t *testing.T) {
	s := newStore(t, Options{MaxBatch: 64})
	jobs := make([]Job, 4)
	for i := range jobs {
		jobs[i] = newJob(t, s)
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			j := jobs[g%len(jobs)]
			for i := range 200 {
				var err error
				if i%10 == 0 {
					_, err = s.AppendBatch(j.ID, []NewEvent{{Type: EventSay, Data: json.RawMessage(`{"b":1}`)}, {Type: EventSay, Data: json.RawMessage(`{"b":2}`)}})
				} else {
					_, err = s.Append(j.ID, EventSay, json.RawMessage(fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)))
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, j := range jobs {
		evs, err := s.Events(j.ID, 0, 10000)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1+4*(180+40) {
			t.Errorf("%s: %d events", j.ID, len(evs))
		}
		for i, e := range evs {
			if e.Seq != int64(i+1) {
				t.Fatalf("%s: event %d has seq %d", j.ID, i, e.Seq)
			}
		}
	}
}

// A masked value never reaches the database: not its file, not its WAL.
func TestMaskedValuesNeverReachTheDB(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	secret := "sk-ant-SECRET-0123456789"
	s.SetMasker(func(b []byte) []byte {
		if !bytes.Contains(b, []byte(secret)) {
			return b
		}
		return bytes.ReplaceAll(b, []byte(secret), []byte("***"))
	})
	j, err := s.CreateJob(NewJob{Agent: "a", Input: json.RawMessage(`{"key":"` + secret + `"}`), InputText: "my key is " + secret})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(j.Input)+j.InputText, secret) {
		t.Fatalf("CreateJob returned the secret: %+v", j)
	}
	s.SetStatus(j.ID, StatusRunning, "")
	e, _ := s.Append(j.ID, EventStderr, json.RawMessage(`{"line":"export KEY=`+secret+`"}`))
	if string(e.Data) != `{"line":"export KEY=***"}` {
		t.Fatalf("returned %s", e.Data)
	}
	s.AppendBatch(j.ID, []NewEvent{{Type: EventLog, Data: json.RawMessage(`{"message":"` + secret + secret + `"}`)}})
	s.FinishJob(j.ID, StatusFailed, "upstream rejected "+secret, json.RawMessage(`"`+secret+`"`))
	// A secret that masking would leave as broken JSON is kept as a JSON string.
	j2, _ := s.CreateJob(NewJob{Agent: "a"})
	s.SetMasker(func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("12345"), []byte("***")) })
	e, err = s.Append(j2.ID, EventLog, json.RawMessage(`{"n":123456}`))
	if err != nil || string(e.Data) != `"{\"n\":***6}"` {
		t.Fatalf("masked number: %s %v", e.Data, err)
	}

	g, _ := s.GetJob(j.ID)
	var buf bytes.Buffer
	s.Trace(j.ID, &buf)
	if strings.Contains(buf.String(), secret) || !strings.Contains(buf.String(), "***") {
		t.Fatalf("trace: %s", buf.String())
	}
	if g.Reason != "upstream rejected ***" || string(g.Output) != `"***"` {
		t.Fatalf("job %+v", g)
	}
	// Look at the bytes while the store is open (the WAL holds the recent writes) and after.
	check := func(when string) {
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		seen := 0
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte("export KEY=***")) {
				seen++
			}
			if bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte(secret[:12])) {
				t.Errorf("%s: %s holds the secret", when, filepath.Base(f))
			}
		}
		if seen == 0 {
			t.Errorf("%s: the masked event is in none of %v: the test looks in the wrong place", when, files)
		}
	}
	check("open")
	if _, err := os.Stat(filepath.Join(dir, DBFile+"-wal")); err != nil {
		t.Errorf("no WAL while open: %v", err)
	}
	s.Close()
	check("closed")
}

// A database error fails the batch, rolls it back and resets the writer's cache: a job deleted
// under the writer's feet (no code does that, but a later migration might) is then unknown.
func TestBatchFailureRollsBack(t *testing.T) {
	s := newStore(t)
	j := newJob(t, s)
	other := newJob(t, s)
	s.Append(j.ID, EventSay, nil) // the writer caches j
	err := s.write(t.Context(), func(tx execer) ([]Change, error) {
		_, err := tx.ExecContext(t.Context(), `DELETE FROM jobs WHERE id = ?`, j.ID)
		return nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Append(j.ID, EventSay, nil)
	if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "FOREIGN KEY") {
		t.Fatalf("append to the deleted job, from the cache: %v", err)
	}
	if _, err := s.Append(j.ID, EventSay, nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after the failed batch: %v", err)
	}
	e, err := s.Append(other.ID, EventSay, nil)
	if err != nil || e.Seq != 2 {
		t.Fatalf("another job after the failed batch: %+v %v", e, err)
	}
}

// A page of events read to be sent on stops after the one that takes its data past the bound:
// a live reader that fell behind a job of tools' results of megabytes each read them all at once
// (a page was 512 events), held while they were sent.
func TestEventPagesBoundedInBytes(t *testing.T) {
	s := newStore(t)
	j := newJob(t, s)
	big := json.RawMessage(`"` + strings.Repeat("r", 3<<20) + `"`)
	for range 4 {
		if _, err := s.Append(j.ID, EventToolResult, big); err != nil {
			t.Fatal(err)
		}
		s.Append(j.ID, EventSay, json.RawMessage(`{"text":"x"}`))
	}
	n, _, err := s.jobRef(s.ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	var pages []int
	for last := int64(0); ; {
		evs, more, err := s.readEvents(s.ctx, s.rdb, j.ID, n, last, replayPage, maxLiveBytes, nil)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, len(evs))
		last = evs[len(evs)-1].Seq
		if !more {
			break
		}
	}
	// 9 events: the status, then 3 MiB and a say four times; 8 MiB is past after the third.
	if fmt.Sprint(pages) != "[6 3]" {
		t.Errorf("pages of %v events, want [6 3]", pages)
	}
	evs, err := s.Events(j.ID, 0, 0)
	if err != nil || len(evs) != 9 {
		t.Errorf("Events, unbounded in bytes: %d events, %v", len(evs), err)
	}
}

// An error event's traceback is kept as the job's, masked like the event, in its transaction; an
// error without one leaves the job's as it was.
func TestErrorTracebackKeptOnTheJob(t *testing.T) {
	s := newStore(t)
	s.SetMasker(func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("sk-secret"), []byte("***")) })
	j := newJob(t, s)
	if got, _ := s.GetJob(j.ID); got.Traceback != nil {
		t.Fatalf("a new job's traceback: %s", got.Traceback)
	}
	tb := `["Traceback (most recent call last):","  File \"src/a.py\", line 3, in f","KeyError: 'sk-secret'"]`
	if _, err := s.Append(j.ID, EventError, json.RawMessage(`{"message":"KeyError","traceback":`+tb+`}`)); err != nil {
		t.Fatal(err)
	}
	s.Append(j.ID, EventError, json.RawMessage(`{"message":"another error, without one"}`))
	got, err := s.GetJob(j.ID)
	if want := strings.ReplaceAll(tb, "sk-secret", "***"); err != nil || string(got.Traceback) != want {
		t.Errorf("traceback %s, want %s (%v)", got.Traceback, want, err)
	}
}
