package diag

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func sampleReport() *Report {
	return &Report{
		Dir: "acme-triage",
		Diagnostics: []Diagnostic{
			{File: "agents/acme-triage.yaml", Line: 14, Col: 3, Severity: Error, Rule: UnknownKey, Message: "unknown key `tool` in `harness`; did you mean `tools`?"},
			{File: "agents/x.yml", Severity: Warning, Rule: IgnoredFile, Message: "agents/x.yml is ignored: agent definitions end in .yaml"},
			{File: "oz0-plugin.yaml", Line: 2, Col: 7, Severity: Error, Rule: InvalidValue, Message: "100% wrong,\r\nreally: yes"},
		},
	}
}

func write(t *testing.T, rep *Report, format string) string {
	t.Helper()
	var b bytes.Buffer
	tool := Tool{}
	if format == "sarif" && rep.Dir != "" {
		tool = Tool{Version: "1.2.3", Ref: "v1.2.3"}
	}
	if err := Write(&b, rep, format, tool); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWriteText(t *testing.T) {
	got := write(t, sampleReport(), "text")
	want := "acme-triage/agents/acme-triage.yaml:14:3: error unknown-key unknown key `tool` in `harness`; did you mean `tools`?\n" +
		"acme-triage/agents/x.yml: warning ignored-file agents/x.yml is ignored: agent definitions end in .yaml\n" +
		"acme-triage/oz0-plugin.yaml:2:7: error invalid-value 100% wrong,\\r\\nreally: yes\n" +
		"2 errors, 1 warning\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := write(t, &Report{Dir: "."}, "text"); got != "no problems\n" {
		t.Errorf("empty: %q", got)
	}
	if got := write(t, &Report{Diagnostics: []Diagnostic{{File: "a", Severity: Warning, Rule: IgnoredFile}}}, ""); !strings.HasSuffix(got, "\n1 warning\n") {
		t.Errorf("one warning: %q", got)
	}
}

func TestWriteJSON(t *testing.T) {
	got := write(t, sampleReport(), "json")
	var list []map[string]any
	if err := json.Unmarshal([]byte(got), &list); err != nil || len(list) != 3 || strings.Count(got, "\n") != 1 {
		t.Fatalf("want one line, an array of 3 findings; got %v:\n%s", err, got)
	}
	f := list[0]
	want := map[string]any{"file": "acme-triage/agents/acme-triage.yaml", "line": 14.0, "col": 3.0, "severity": "error", "rule": "unknown-key", "message": "unknown key `tool` in `harness`; did you mean `tools`?"}
	if len(f) != len(want) {
		t.Errorf("keys: %v", f)
	}
	for k, v := range want {
		if f[k] != v {
			t.Errorf("%s = %v, want %v", k, f[k], v)
		}
	}
	if !strings.HasPrefix(got, `[{"file":`) {
		t.Errorf("field order: %s", got)
	}
	if got := write(t, &Report{}, "json"); got != "[]\n" {
		t.Errorf("empty: %q", got)
	}
}

func TestWriteGitHub(t *testing.T) {
	rep := sampleReport()
	rep.Dir = "my,dir:x"
	got := write(t, rep, "github")
	want := "::error file=my%2Cdir%3Ax/agents/acme-triage.yaml,line=14,col=3,title=unknown-key::unknown key `tool` in `harness`; did you mean `tools`?\n" +
		"::warning file=my%2Cdir%3Ax/agents/x.yml,title=ignored-file::agents/x.yml is ignored: agent definitions end in .yaml\n" +
		"::error file=my%2Cdir%3Ax/oz0-plugin.yaml,line=2,col=7,title=invalid-value::100%25 wrong,%0D%0Areally: yes\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestWriteSARIF(t *testing.T) {
	out := write(t, sampleReport(), "sarif")
	var log struct {
		Schema  string `json:"$schema"`
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name           string `json:"name"`
					InformationURI string `json:"informationUri"`
					Version        string `json:"version"`
					Rules          []struct {
						ID               string `json:"id"`
						ShortDescription struct {
							Text string `json:"text"`
						} `json:"shortDescription"`
						FullDescription struct {
							Text string `json:"text"`
						} `json:"fullDescription"`
						HelpURI              string `json:"helpUri"`
						DefaultConfiguration struct {
							Level string `json:"level"`
						} `json:"defaultConfiguration"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string `json:"ruleId"`
				RuleIndex int    `json:"ruleIndex"`
				Level     string `json:"level"`
				Message   struct {
					Text string `json:"text"`
				} `json:"message"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region *struct {
							StartLine   int `json:"startLine"`
							StartColumn int `json:"startColumn"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &log); err != nil {
		t.Fatal(err)
	}
	if log.Version != "2.1.0" || !strings.Contains(log.Schema, "sarif-schema-2.1.0.json") || len(log.Runs) != 1 {
		t.Fatalf("header: %s %s %d runs", log.Version, log.Schema, len(log.Runs))
	}
	d := log.Runs[0].Tool.Driver
	if d.Name != "oz0" || d.Version != "1.2.3" || d.InformationURI == "" {
		t.Errorf("driver: %+v", d)
	}
	if len(d.Rules) != len(Rules) {
		t.Fatalf("%d rules, want %d", len(d.Rules), len(Rules))
	}
	for i, r := range d.Rules {
		if r.ID != Rules[i].ID.String() || r.ShortDescription.Text == "" || r.FullDescription.Text == "" ||
			r.HelpURI != "https://github.com/orchestrator-zero/oz0/blob/v1.2.3/docs/lint-rules.md#"+r.ID || (r.DefaultConfiguration.Level != "error" && r.DefaultConfiguration.Level != "warning") {
			t.Errorf("rule %d: %+v", i, r)
		}
	}
	res := log.Runs[0].Results
	if len(res) != 3 {
		t.Fatalf("%d results", len(res))
	}
	for i, f := range sampleReport().Diagnostics {
		r := res[i]
		if r.RuleID != f.Rule.String() || d.Rules[r.RuleIndex].ID != f.Rule.String() || r.Level != string(f.Severity) || r.Message.Text != f.Message || len(r.Locations) != 1 {
			t.Errorf("result %d: %+v", i, r)
			continue
		}
		pl := r.Locations[0].PhysicalLocation
		if pl.ArtifactLocation.URI != "acme-triage/"+f.File {
			t.Errorf("result %d uri %s", i, pl.ArtifactLocation.URI)
		}
		if f.Line == 0 {
			if pl.Region != nil {
				t.Errorf("result %d: a region for a whole-file finding", i)
			}
		} else if pl.Region == nil || pl.Region.StartLine != f.Line || pl.Region.StartColumn != f.Col {
			t.Errorf("result %d region %+v", i, pl.Region)
		}
	}
	// No findings: still a valid log with an empty results array.
	out = write(t, &Report{}, "sarif")
	if !strings.Contains(out, `"results": []`) || !strings.Contains(out, `"version": "dev"`) {
		t.Errorf("empty report:\n%s", out)
	}
	// An absolute directory gives file URIs.
	if got := sarifArtifactAt("/tmp/a b/oz0-plugin.yaml"); got != (sarifArtifact{URI: "file:///tmp/a%20b/oz0-plugin.yaml"}) {
		t.Errorf("sarifArtifactAt = %+v", got)
	}
	if got := sarifArtifactAt("plugins/a b.yaml"); got != (sarifArtifact{URI: "plugins/a%20b.yaml", URIBaseID: "%SRCROOT%"}) {
		t.Errorf("sarifArtifactAt = %+v", got)
	}
}

func TestWriteUnknownFormat(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, &Report{}, "xml", Tool{}); err == nil || !strings.Contains(err.Error(), "text, json, sarif, github") {
		t.Errorf("err = %v", err)
	}
}

// TestSARIFSchema validates the SARIF output against the official SARIF 2.1.0 JSON Schema
// (errata 01, the one $schema names; testdata/sarif-schema-2.1.0.json is a copy from
// github.com/oasis-tcs/sarif-spec, sarif-2.1/schema/), with findings and without.
func TestSARIFSchema(t *testing.T) {
	f, err := os.Open("testdata/sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SARIFSchema, doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile(SARIFSchema)
	if err != nil {
		t.Fatal(err)
	}
	// The schema is strict enough to refuse a run without its tool, and a column kind it does
	// not know.
	for _, bad := range []string{
		`{"version":"2.1.0","runs":[{"results":[]}]}`,
		`{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"oz0"}},"columnKind":"bytes","results":[]}]}`,
	} {
		v, _ := jsonschema.UnmarshalJSON(strings.NewReader(bad))
		if schema.Validate(v) == nil {
			t.Errorf("the schema takes %s", bad)
		}
	}
	withEnd := sampleReport()
	withEnd.Diagnostics[0].EndLine, withEnd.Diagnostics[0].EndCol = 14, 7
	withEnd.Diagnostics = append(withEnd.Diagnostics, Diagnostic{File: "/abs/hooks.yaml", Line: 1, Col: 1, Severity: Error, Rule: YAMLSyntax, Message: "not YAML"})
	for name, rep := range map[string]*Report{"findings": withEnd, "none": {}} {
		out := write(t, rep, FormatSARIF)
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(v); err != nil {
			t.Errorf("%s: the SARIF log is not valid SARIF 2.1.0: %v\n%s", name, err, out)
		}
		if !strings.Contains(out, `"columnKind": "unicodeCodePoints"`) {
			t.Errorf("%s: no columnKind", name)
		}
	}
}
