package evalfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/diag"
)

func TestParse(t *testing.T) {
	f, ds := Parse("evals/t.yaml", []byte(`agent: triage
cases:
  - name: billing
    input: I was charged twice
    assert:
      - contains: billing
      - path: {team: billing, "labels[0]": urgent}
  - name: json-in
    input: {ticket: 42}
    recording: saved/job.yaml
  - name: scripted
    input: hi
    script: fake.yaml
  - name: smoke
    input: hi
    live: true
`))
	if len(ds) > 0 {
		t.Fatalf("findings: %v", ds)
	}
	if f.Agent != "triage" || f.AgentLine != 1 || f.AgentCol != 8 || len(f.Cases) != 4 {
		t.Fatalf("file %+v", f)
	}
	c := f.Cases[0]
	if c.Name != "billing" || c.Line != 3 || c.Col != 5 || c.Source != FromRecording || c.Path != "recordings/t/billing.json" {
		t.Errorf("case 0 %+v", c)
	}
	if a := c.Asserts[1]; a.Kind != "path" || a.Line != 7 || a.Col != 9 {
		t.Errorf("assertion %+v", a)
	}
	if c := f.Cases[1]; c.Input != `{"ticket":42}` || c.Source != FromScript || c.Path != "saved/job.yaml" {
		t.Errorf("a JSON input and oz0 job script's recording: %+v", c)
	}
	if c := f.Cases[2]; c.Source != FromScript || c.Path != "fake.yaml" {
		t.Errorf("script: %+v", c)
	}
	if c := f.Cases[3]; c.Source != FromLive {
		t.Errorf("live: %+v", c)
	}
}

func TestParseFindings(t *testing.T) {
	_, ds := Parse("e.yaml", []byte(`agent: triage
cases:
  - name: a
    input: x
    recording: ../outside.json
    assert:
      - matches: "(x"
      - schema: {type: 3}
      - path: "a..b"
      - max_duration: 0s
  - name: a
    input: y
    script: x.yaml
    live: true
`))
	var got []string
	for _, d := range ds {
		got = append(got, fmt.Sprintf("%d:%d %s", d.Line, d.Col, d.Rule))
	}
	want := []string{"5:16 eval-case", "7:18 eval-case", "8:17 eval-case", "9:15 eval-case", "10:23 eval-case", "11:5 invalid-value", "11:11 eval-case"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("findings:\n%s\nwant:\n%s\n%v", strings.Join(got, ", "), strings.Join(want, ", "), ds)
	}
}

// The file's approvals and timeout are its cases' defaults; a case's own take their place.
func TestParseApprovalsAndTimeout(t *testing.T) {
	f, ds := Parse("e.yaml", []byte(`agent: triage
approvals: {notify_team: approve, refund: deny}
timeout: 2m
cases:
  - name: defaults
    input: x
  - name: own
    input: y
    approvals: deny
    timeout: 30s
`))
	if len(ds) > 0 {
		t.Fatalf("findings: %v", ds)
	}
	d, o := f.Cases[0], f.Cases[1]
	if d.Approvals.For("notify_team") != ApproveAll || d.Approvals.For("refund") != DenyAll || d.Approvals.For("other") != "" ||
		d.Approvals.Line != 2 || d.Approvals.String() != "{notify_team: approve, refund: deny}" {
		t.Errorf("the file's approvals: %+v", d.Approvals)
	}
	if d.Timeout != 2*time.Minute || d.TimeoutLine != 3 || d.TimeoutCol != 1 {
		t.Errorf("the file's timeout: %v at %d:%d", d.Timeout, d.TimeoutLine, d.TimeoutCol)
	}
	if o.Approvals.For("notify_team") != DenyAll || o.Approvals.Line != 9 || o.Timeout != 30*time.Second || o.TimeoutLine != 10 || o.TimeoutCol != 5 {
		t.Errorf("the case's own: %+v %v at %d", o.Approvals, o.Timeout, o.TimeoutLine)
	}
	_, ds = Parse("e.yaml", []byte("agent: triage\ntimeout: soon\napprovals: {notify_team: yes}\ncases:\n  - {name: a, input: x, timeout: 0s}\n"))
	var got []string
	for _, d := range ds {
		got = append(got, fmt.Sprintf("%d:%d %s %s", d.Line, d.Col, d.Rule, d.Message))
	}
	want := []string{
		"2:10 eval-case `soon` must be a duration longer than 0, such as 30s or 2m",
		"3:26 invalid-value `notify_team` must be one of approve, deny, not `yes`",
		"5:34 eval-case `0s` must be a duration longer than 0, such as 30s or 2m",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestParsePath(t *testing.T) {
	for p, want := range map[string]string{"team": "team", "labels[0]": "labels 0", "a.b[1][2].c": "a b 1 2 c", "/x~1y/0": "x/y 0"} {
		toks, err := ParsePath(p)
		if err != nil || strings.Join(toks, " ") != want {
			t.Errorf("%s: %q %v", p, toks, err)
		}
	}
	for _, p := range []string{"", "a..b", "a[x]", "a[1]b", ".a"} {
		if _, err := ParsePath(p); err == nil {
			t.Errorf("%s: no error", p)
		}
	}
}

// An eval file is read within the bound of every file the linter loads, and a larger one is said
// as oz0 plugin lint says it.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	at := filepath.Join(dir, "at.yaml")
	over := filepath.Join(dir, "over.yaml")
	if err := os.WriteFile(at, []byte(strings.Repeat("#", diag.MaxFileSize)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(over, []byte(strings.Repeat("#", diag.MaxFileSize+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, ds, err := Read(at, "evals/at.yaml"); err != nil || len(ds) > 0 || len(data) != diag.MaxFileSize {
		t.Errorf("at the bound: %d bytes, %v, %v", len(data), ds, err)
	}
	data, ds, err := Read(over, "evals/over.yaml")
	if err != nil || data != nil || len(ds) != 1 {
		t.Fatalf("over the bound: %d bytes, %v, %v", len(data), ds, err)
	}
	if d := ds[0]; d.File != "evals/over.yaml" || d.Rule != diag.FileTooLarge || d.Severity != diag.Error ||
		d.Message != "evals/over.yaml is 1048577 bytes; files the linter loads must be at most 1 MiB" {
		t.Errorf("finding %+v", d)
	}
	if _, _, err := Read(dir, "evals"); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: %v", err)
	}
}
