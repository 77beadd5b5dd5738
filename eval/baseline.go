package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/orchestrator-zero/oz0/internal/atomicfile"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
)

// JSONReport is what oz0 eval --json prints, and what --baseline reads back.
type JSONReport struct {
	*Report
	Totals   Totals      `json:"totals"`
	Baseline *Comparison `json:"baseline,omitempty"`
}

// Totals sum a run.
type Totals struct {
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
	// Interrupted counts the cases Ctrl-C stopped (oz0 eval --json still writes its report).
	Interrupted int     `json:"interrupted"`
	Tokens      int64   `json:"tokens"`
	CostUSD     float64 `json:"cost_usd"`
	DurationMS  int64   `json:"duration_ms"`
}

// MarshalJSON fills in the totals.
func (j JSONReport) MarshalJSON() ([]byte, error) {
	type plain JSONReport
	p := plain(j)
	t := j.Counts()
	p.Totals.Passed, p.Totals.Failed, p.Totals.Skipped, p.Totals.Interrupted = t.Passed, t.Failed, t.Skipped, t.Interrupted
	var d time.Duration
	p.Totals.Tokens, p.Totals.CostUSD, d = j.Report.Totals()
	p.Totals.DurationMS = d.Milliseconds()
	return json.Marshal(p)
}

// ReadBaseline reads an earlier oz0 eval --json.
func ReadBaseline(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil || r.Results == nil {
		return nil, notAReport(path)
	}
	return &r, nil
}

// notAReport is ReadBaseline's error for a file that is not oz0 eval --json's output.
type notAReport string

func (path notAReport) Error() string { return string(path) + " is not the output of oz0 eval --json" }

// Delta is how a case changed since the baseline: its status then and now, and the differences
// of its usage (now less then).
type Delta struct {
	File       string  `json:"file"`
	Case       string  `json:"case"`
	Was        string  `json:"was"` // "" when the baseline has no such case
	Now        string  `json:"now"`
	Tokens     int64   `json:"tokens"`
	CostUSD    float64 `json:"cost_usd"`
	DurationMS int64   `json:"duration_ms"`
}

// Comparison is a run against a baseline.
type Comparison struct {
	// NowFailing are the cases that fail now and did not in the baseline (or were not in it).
	NowFailing []string `json:"now_failing"`
	Cases      []Delta  `json:"cases"`
	Total      Delta    `json:"total"`
}

// Compare compares now with the baseline, case by case (by file and name).
func Compare(baseline, now *Report) *Comparison {
	before := map[[2]string]Result{}
	for _, r := range baseline.Results {
		before[[2]string{r.File, r.Case}] = r
	}
	c := &Comparison{NowFailing: []string{}, Total: Delta{Case: "total"}}
	for _, r := range now.Results {
		b, ok := before[[2]string{r.File, r.Case}]
		d := Delta{File: r.File, Case: r.Case, Now: r.Status}
		if ok {
			d.Was = b.Status
			d.Tokens, d.CostUSD, d.DurationMS = r.Tokens-b.Tokens, r.CostUSD-b.CostUSD, r.DurationMS-b.DurationMS
		}
		if r.Status == Failed && d.Was != Failed {
			c.NowFailing = append(c.NowFailing, r.File+" "+r.Case)
		}
		c.Total.Tokens += d.Tokens
		c.Total.CostUSD += d.CostUSD
		c.Total.DurationMS += d.DurationMS
		c.Cases = append(c.Cases, d)
	}
	return c
}

// WriteComparison writes the comparison for people.
func WriteComparison(w io.Writer, c *Comparison) error {
	fmt.Fprintln(w, "\nagainst the baseline:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tWAS\tNOW\tTOKENS\tCOST\tDURATION")
	for _, d := range append(c.Cases, c.Total) {
		name := d.Case
		if d.File != "" {
			name = d.File + " " + d.Case
		}
		was := d.Was
		if was == "" && d.File != "" {
			was = "(new)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, dash(was), dash(d.Now), signedInt(d.Tokens), signedMoney(d.CostUSD), signedSeconds(d.DurationMS))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(c.NowFailing) > 0 {
		fmt.Fprintf(w, "now failing: %d\n", len(c.NowFailing))
		for _, n := range c.NowFailing {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func signedInt(n int64) string {
	if n > 0 {
		return "+" + strconv.FormatInt(n, 10)
	}
	return strconv.FormatInt(n, 10)
}

func signedMoney(f float64) string {
	s := "$" + strconv.FormatFloat(abs(f), 'f', -1, 64)
	if f < 0 {
		return "-" + s
	}
	if f > 0 {
		return "+" + s
	}
	return s
}

func signedSeconds(ms int64) string {
	s := strconv.FormatFloat(float64(ms)/1000, 'f', 1, 64) + "s"
	if ms > 0 {
		return "+" + s
	}
	return s
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// WriteJSONFile writes the report as --json prints it to path (oz0 eval --report).
func WriteJSONFile(path string, j JSONReport) error {
	var b bytes.Buffer
	enc := jsonutil.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(j); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("cannot write --report %s: %w", path, err)
	}
	return nil
}
