package eval

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/orchestrator-zero/oz0/internal/termtext"
)

// WriteTable writes the report for people: one row a case (case, status, what failed, tokens,
// cost, duration), then each failure in full at its place in the eval file, then the counts.
func WriteTable(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tSTATUS\tFAILED\tTOKENS\tCOST\tDURATION")
	for _, c := range r.Results {
		failed := "-"
		if len(c.Failures) > 0 {
			first, _, _ := strings.Cut(c.Failures[0].Message, "\n")
			failed = c.Failures[0].Kind + ": " + clip(termtext.Visible(first), 60)
			if len(c.Failures) > 1 {
				failed += fmt.Sprintf(" (+%d more)", len(c.Failures)-1)
			}
		}
		if (c.Status == Skipped || c.Status == Interrupted) && len(c.Notes) > 0 {
			failed = clip(c.Notes[0], 60)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t$%s\t%s\n", c.File+" "+c.Case, c.Status, failed, c.Tokens, money(c.CostUSD), seconds(c.Elapsed()))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range r.Results {
		for _, f := range c.Failures {
			first, rest, _ := strings.Cut(termtext.Visible(f.Message), "\n")
			fmt.Fprintf(w, "\n%s:%d:%d: %s: %s: %s\n", c.File, f.Line, f.Col, c.Case, f.Kind, first)
			if rest = strings.TrimRight(rest, "\n"); rest != "" {
				fmt.Fprintln(w, rest)
			}
		}
		for _, n := range c.Notes {
			if c.Status != Skipped && c.Status != Interrupted {
				fmt.Fprintf(w, "%s:%d:%d: %s: note: %s\n", c.File, c.Line, c.Col, c.Case, termtext.Visible(n))
			}
		}
		if c.Recorded != "" {
			fmt.Fprintf(w, "%s: %s: recorded %s (job %s)\n", c.File, c.Case, c.Recorded, c.Job)
		}
	}
	_, err := fmt.Fprintln(w, "\n"+r.Summary())
	return err
}

// Summary is the counts on one line: "3 passed, 1 failed, 1 skipped" (and "2 interrupted").
func (r *Report) Summary() string {
	t := r.Counts()
	s := fmt.Sprintf("%d passed, %d failed", t.Passed, t.Failed)
	if t.Skipped > 0 {
		s += fmt.Sprintf(", %d skipped", t.Skipped)
	}
	if t.Interrupted > 0 {
		s += fmt.Sprintf(", %d interrupted", t.Interrupted)
	}
	return s
}

// Totals sums the cases' usage.
func (r *Report) Totals() (tokens int64, cost float64, d time.Duration) {
	for _, c := range r.Results {
		tokens += c.Tokens
		cost += c.CostUSD
		d += c.Elapsed()
	}
	return tokens, cost, d
}

func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
