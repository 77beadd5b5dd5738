package main

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/orchestrator-zero/oz0/diag"
)

func init() { scriptCmds["sarifcheck"] = cmdSARIFCheck }

// sarifSchema is the official SARIF 2.1.0 JSON Schema, compiled once.
var sarifSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	f, err := os.Open("../../diag/testdata/sarif-schema-2.1.0.json")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(diag.SARIFSchema, doc); err != nil {
		return nil, err
	}
	return c.Compile(diag.SARIFSchema)
})

// cmdSARIFCheck checks a SARIF log for what SARIF 2.1.0 requires of it and what code scanning
// reads: sarifcheck FILE [RESULTS] validates it against the official SARIF 2.1.0 schema, and
// checks the version, the driver, each rule's metadata, and that each result names a known
// rule, a level, a message and a location.
func cmdSARIFCheck(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: sarifcheck FILE [RESULTS]")
	}
	schema, err := sarifSchema()
	ts.Check(err)
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(ts.ReadFile(args[0])))
	ts.Check(err)
	if err := schema.Validate(doc); err != nil {
		ts.Fatalf("not valid SARIF 2.1.0: %v", err)
	}
	var log struct {
		Schema  string `json:"$schema"`
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string `json:"name"`
					Rules []struct {
						ID               string                 `json:"id"`
						ShortDescription struct{ Text string }  `json:"shortDescription"`
						HelpURI          string                 `json:"helpUri"`
						Default          struct{ Level string } `json:"defaultConfiguration"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string                `json:"ruleId"`
				RuleIndex *int                  `json:"ruleIndex"`
				Level     string                `json:"level"`
				Message   struct{ Text string } `json:"message"`
				Locations []struct {
					Physical struct {
						Artifact struct{ URI string } `json:"artifactLocation"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &log))
	if log.Version != "2.1.0" || log.Schema == "" || len(log.Runs) != 1 {
		ts.Fatalf("not a SARIF 2.1.0 log with one run: version %q, $schema %q, %d runs", log.Version, log.Schema, len(log.Runs))
	}
	run := log.Runs[0]
	if run.Tool.Driver.Name != "oz0" || len(run.Tool.Driver.Rules) == 0 {
		ts.Fatalf("driver %q with %d rules", run.Tool.Driver.Name, len(run.Tool.Driver.Rules))
	}
	for _, r := range run.Tool.Driver.Rules {
		if r.ID == "" || r.ShortDescription.Text == "" || r.HelpURI == "" || r.Default.Level == "" {
			ts.Fatalf("rule %q lacks metadata", r.ID)
		}
	}
	if len(args) == 2 {
		want, err := strconv.Atoi(args[1])
		ts.Check(err)
		if len(run.Results) != want {
			ts.Fatalf("%d results, want %d", len(run.Results), want)
		}
	}
	for _, res := range run.Results {
		if res.RuleIndex == nil || *res.RuleIndex >= len(run.Tool.Driver.Rules) || run.Tool.Driver.Rules[*res.RuleIndex].ID != res.RuleID {
			ts.Fatalf("result for %q does not point at its rule", res.RuleID)
		}
		if res.Level == "" || res.Message.Text == "" || len(res.Locations) == 0 || res.Locations[0].Physical.Artifact.URI == "" {
			ts.Fatalf("result for %q lacks level, message or location", res.RuleID)
		}
	}
}
