package eval

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/lint/evalfile"
)

// A job that called notify_team (a person approved it) and answered text.
func sampleJob() (apiv1.Job, []apiv1.Event, apiv1.Calls) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	job := apiv1.Job{ID: "job_abc", Agent: "acme-triage", Input: json.RawMessage(`"I was charged twice for my order"`),
		InputText: "I was charged twice for my order", ModelRecord: "fake", ModelName: "fake-1", Status: apiv1.StatusSucceeded,
		Output: json.RawMessage(`"billing: Sorry about the double charge"`), StartedAt: t0, EndedAt: t0.Add(1500 * time.Millisecond),
		Usage: apiv1.Usage{ModelCalls: 2}}
	ev := func(typ, data string) apiv1.Event { return apiv1.Event{Type: typ, Data: json.RawMessage(data)} }
	events := []apiv1.Event{
		ev(apiv1.EventPermissionRequest, `{"id":"p1","tool":"notify_team","arguments":{"team":"billing","summary":"charged twice"}}`),
		ev(apiv1.EventPermissionDecision, `{"id":"p1","tool":"notify_team","decision":"allow","by":"person"}`),
		ev(apiv1.EventPermissionRequest, `{"id":"p2","tool":"refund","arguments":{"amount":500}}`),
		ev(apiv1.EventPermissionDecision, `{"id":"p2","tool":"refund","decision":"deny","by":"node"}`),
	}
	calls := apiv1.Calls{Job: job.ID, Calls: []apiv1.ModelCall{
		{N: 1, Exchange: json.RawMessage(`{"method":"POST","path":"/anthropic/v1/messages","status":200}`)},
		{N: 2, Exchange: json.RawMessage(`{"method":"POST","path":"/anthropic/v1/messages","status":200}`)},
	}}
	return job, events, calls
}

const triage = `# The triage.
agent: acme-triage
approvals: {notify_team: approve}
cases:
  - name: billing
    input: I was charged twice for my order
    assert:
      - contains: billing
# the end
`

func TestProposeAppendsTheCaseTheFileReads(t *testing.T) {
	job, events, calls := sampleJob()
	p, err := Propose(job, events, calls, CaseRequest{File: "triage.yaml"}, []byte(triage), "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.YAML, triage) {
		t.Errorf("the file's lines are not kept as they were:\n%s", p.YAML)
	}
	want := `  - name: i-was-charged-twice
    input: I was charged twice for my order
    assert:
      - called: {name: notify_team, arguments: {summary: charged twice, team: billing}}
      - refused: refund
      - equals: 'billing: Sorry about the double charge'
`
	if p.CaseYAML != want {
		t.Errorf("the case:\n%s\nwant (the file answers notify_team's approvals already):\n%s", p.CaseYAML, want)
	}
	f, ds := evalfile.Parse("triage.yaml", []byte(p.YAML))
	if len(ds) > 0 || len(f.Cases) != 2 || len(f.Cases[1].Asserts) != 3 || f.Cases[1].Approvals.For("notify_team") != "approve" {
		t.Fatalf("the file read back: %+v %v", f, ds)
	}
	if p.Recording != "recordings/triage/i-was-charged-twice.json" {
		t.Errorf("the recording: %s", p.Recording)
	}
	var rec Recording
	if err := json.Unmarshal(p.RecordingJSON, &rec); err != nil || rec.Job != "job_abc" || len(rec.Calls) != 2 || rec.DurationMS != 1500 {
		t.Errorf("the recording: %+v %v", rec, err)
	}
}

func TestProposeNewFileAnswersApprovals(t *testing.T) {
	job, events, calls := sampleJob()
	p, err := Propose(job, events, calls, CaseRequest{File: "new.yaml", Name: "double"}, nil, "https://example.com/eval.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.YAML, "agent: acme-triage\ncases:\n  - name: double\n") || !strings.Contains(p.CaseYAML, "approvals: {notify_team: approve}") {
		t.Errorf("the new file:\n%s", p.YAML)
	}
	dir := t.TempDir()
	if err := WriteCase(dir, p); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "new.yaml"))
	if err != nil || string(got) != p.YAML {
		t.Errorf("written: %q %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "recordings", "new", "double.json")); err != nil {
		t.Error(err)
	}
	// Again: the file is there now, and so is the recording.
	if err := WriteCase(dir, p); !errors.Is(err, ErrBadCase) {
		t.Errorf("writing the same case twice: %v", err)
	}
}

func TestProposeRefuses(t *testing.T) {
	job, events, calls := sampleJob()
	for name, tc := range map[string]struct {
		req      CaseRequest
		existing string
		change   func(*apiv1.Job, *apiv1.Calls)
		want     string
	}{
		"a name the file has":  {CaseRequest{File: "triage.yaml", Name: "billing"}, triage, nil, "has a case billing already"},
		"another agent's file": {CaseRequest{File: "triage.yaml"}, strings.Replace(triage, "acme-triage", "other", 1), nil, "agent other's"},
		"a bad name":           {CaseRequest{File: "triage.yaml", Name: "Bad Name"}, triage, nil, "lowercase"},
		"calls not kept":       {CaseRequest{File: "t.yaml"}, "", func(j *apiv1.Job, c *apiv1.Calls) { c.Calls = nil }, "were not kept"},
		"a flow list":          {CaseRequest{File: "t.yaml"}, "agent: acme-triage\ncases: [{name: a, input: x}]\n", nil, "no list of cases written one item a line"},
	} {
		t.Run(name, func(t *testing.T) {
			j, c := job, calls
			if tc.change != nil {
				tc.change(&j, &c)
			}
			var existing []byte
			if tc.existing != "" {
				existing = []byte(tc.existing)
			}
			_, err := Propose(j, events, c, tc.req, existing, "")
			if !errors.Is(err, ErrBadCase) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an ErrBadCase saying %q", err, tc.want)
			}
		})
	}
	for _, bad := range []string{"../x.yaml", "a/b.yaml", "x.yml", ".hidden.yaml", ""} {
		if err := CheckFileName(bad); err == nil {
			t.Errorf("the file name %q is taken", bad)
		}
	}
}

// A case goes before a key that follows cases:, not into the key's value.
func TestProposeBeforeAKeyAfterCases(t *testing.T) {
	job, events, calls := sampleJob()
	file := "agent: acme-triage\ncases:\n- name: a\n  input: x\n# the timeout\ntimeout: 1m\n"
	p, err := Propose(job, events, calls, CaseRequest{File: "t.yaml", Name: "b"}, []byte(file), "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(p.YAML, "# the timeout\ntimeout: 1m\n") || !strings.Contains(p.YAML, "  input: x\n- name: b\n") {
		t.Errorf("the file:\n%s", p.YAML)
	}
}

// A JSON agent's input is written as the text it was given: the case sends the same text.
func TestProposeKeepsAJSONInputsText(t *testing.T) {
	job, events, calls := sampleJob()
	job.InputText = `{"order": "A-1001",  "text": "refund me"}`
	job.Input = json.RawMessage(`{"order":"A-1001","text":"refund me"}`)
	p, err := Propose(job, events, calls, CaseRequest{File: "t.yaml", Name: "refund"}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	f, ds := evalfile.Parse("t.yaml", []byte(p.YAML))
	if len(ds) > 0 || f.Cases[0].Input != job.InputText {
		t.Errorf("the case's input: %q %v, want %q", f.Cases[0].Input, ds, job.InputText)
	}
}
