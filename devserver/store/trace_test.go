package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestTraceRoundTrip(t *testing.T) {
	s := newStore(t)
	j := newJob(t, s)
	s.SetStatus(j.ID, StatusRunning, "")
	s.Append(j.ID, EventSay, json.RawMessage(`{"text":"Sorting the ticket. <b>&</b>\u2028"}`))
	s.Append(j.ID, EventPermissionRequest, json.RawMessage(`{"id":"p1","tool":"notify_team","arguments":{"team":"billing"}}`))
	s.Append(j.ID, EventPermissionDecision, json.RawMessage(`{"id":"p1","decision":"allow","arguments":{"team":"billing"},"by":"hook:audit"}`))
	s.Append(j.ID, EventModelCall, json.RawMessage(`{"record":"fake","model":"m","status":200,"input_tokens":12,"output_tokens":3,"latency_ms":4.5}`))
	s.Append(j.ID, EventStrayOutput, json.RawMessage(`{"line":"not json"}`))
	s.Append(j.ID, EventStderr, json.RawMessage("{\n  \"line\": \"pretty\"\n}")) // newlines inside: the trace still has one line per event
	big := strings.Repeat("y", 700_000)
	s.Append(j.ID, EventToolResult, json.RawMessage(`{"id":"p1","result":"`+big+`"}`))
	for i := range 1200 { // more than a page
		s.Append(j.ID, EventLog, json.RawMessage(fmt.Sprintf(`{"level":"info","message":"%d"}`, i)))
	}
	s.Append(j.ID, EventResult, json.RawMessage(`{"output":"billing: refunded"}`))
	s.FinishJob(j.ID, StatusSucceeded, "", json.RawMessage(`"billing: refunded"`))

	var buf bytes.Buffer
	if err := s.Trace(j.ID, &buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	wantJob, _ := s.GetJob(j.ID)
	wantEvs, _ := s.Events(j.ID, 0, 10000)
	if len(lines) != 1+len(wantEvs) {
		t.Fatalf("%d lines for %d events", len(lines), len(wantEvs))
	}
	if !strings.HasPrefix(lines[0], `{"oz0_trace":1,"job":{"id":"`+j.ID+`"`) {
		t.Fatalf("header %s", lines[0][:100])
	}
	if !strings.HasPrefix(lines[1], `{"job":"`+j.ID+`","seq":1,"time":"`) {
		t.Fatalf("first event %s", lines[1])
	}
	if !strings.Contains(buf.String(), `<b>&</b>`) {
		t.Error("the trace escapes HTML")
	}
	job, evs, err := LoadTrace(&buf)
	if err != nil {
		t.Fatal(err)
	}
	norm := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	if norm(job) != norm(wantJob) {
		t.Errorf("job\n got %s\nwant %s", norm(job), norm(wantJob))
	}
	if len(evs) != len(wantEvs) {
		t.Fatalf("%d events, want %d", len(evs), len(wantEvs))
	}
	for i := range evs {
		var a, b any
		json.Unmarshal(evs[i].Data, &a)
		json.Unmarshal(wantEvs[i].Data, &b)
		if evs[i].Seq != wantEvs[i].Seq || evs[i].Type != wantEvs[i].Type || !evs[i].Time.Equal(wantEvs[i].Time) || !reflect.DeepEqual(a, b) {
			t.Fatalf("event %d\n got %+v\nwant %+v", i, evs[i], wantEvs[i])
		}
	}
	if !evs[len(evs)-1].Terminal() {
		t.Error("the trace does not end with the terminal event")
	}
	if err := s.Trace("job_aaaaaaaaaaaaaaaaaaaa", &buf); !errors.Is(err, ErrNotFound) {
		t.Errorf("trace of no job: %v", err)
	}
}

func TestTraceOfRunningJob(t *testing.T) {
	s := newStore(t)
	j := newJob(t, s)
	s.Append(j.ID, EventSay, nil)
	var buf bytes.Buffer
	if err := s.Trace(j.ID, &buf); err != nil {
		t.Fatal(err)
	}
	job, evs, err := LoadTrace(&buf)
	if err != nil || job.Status != StatusQueued || len(evs) != 2 {
		t.Fatalf("%+v %v %v", job, evs, err)
	}
}

func TestLoadTraceErrors(t *testing.T) {
	head := `{"oz0_trace":1,"job":{"id":"job_a","agent":"x","status":"running"}}`
	ev := func(job string, seq int) string {
		return fmt.Sprintf(`{"job":%q,"seq":%d,"time":"2026-01-01T00:00:00Z","type":"say","data":{}}`, job, seq)
	}
	cases := map[string]string{
		"":                                         "empty",
		`{"job":"job_a","seq":1}`:                  "line 1: not an oz0 trace header",
		`{"oz0_trace":2,"job":{"id":"job_a"}}`:     "format 2 is newer",
		head + "\n" + ev("job_a", 2):               "line 2: seq 2 where 1 was due",
		head + "\n" + ev("job_a", 1) + "\n{":       "line 3",
		head + "\n" + ev("job_b", 1):               `an event of job "job_b"`,
		head + "\n" + ev("job_a", 1) + "\n" + "[]": "line 3",
		head + "\n\n" + ev("job_a", 2):             "line 3: seq 2",
	}
	for in, want := range cases {
		_, _, err := LoadTrace(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	// Blank lines and a missing final newline are fine.
	job, evs, err := LoadTrace(strings.NewReader("\n" + head + "\n\n" + ev("job_a", 1) + "\n" + ev("job_a", 2)))
	if err != nil || job.ID != "job_a" || len(evs) != 2 {
		t.Fatalf("%+v %v %v", job, evs, err)
	}
}
