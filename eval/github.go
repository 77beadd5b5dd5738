package eval

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
)

// GitHub Actions: a workflow command a failure (::error file=…,line=…,col=…::), on the line of the
// assertion that failed, so the failure shows on the eval file in the pull request; and a job
// summary in Markdown.

func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// WriteGitHub writes an annotation for each failure, a notice for each case that is now failing
// against the baseline, and the counts.
func WriteGitHub(w io.Writer, r *Report, cmp *Comparison) error {
	for _, c := range r.Results {
		for _, f := range c.Failures {
			title := fmt.Sprintf("oz0 eval: %s: %s", c.Case, f.Kind)
			if _, err := fmt.Fprintf(w, "::error file=%s,line=%d,col=%d,title=%s::%s\n", escapeProperty(c.File), f.Line, f.Col, escapeProperty(title), escapeData(f.Message)); err != nil {
				return err
			}
		}
	}
	if cmp != nil && len(cmp.NowFailing) > 0 {
		fmt.Fprintf(w, "::warning title=oz0 eval::%s\n", escapeData(fmt.Sprintf("%d case(s) fail that passed in the baseline: %s", len(cmp.NowFailing), strings.Join(cmp.NowFailing, ", "))))
	}
	_, err := fmt.Fprintln(w, r.Summary())
	return err
}

// Summary writes the report as the Markdown of a job summary.
func Summary(w io.Writer, r *Report, cmp *Comparison) error {
	fmt.Fprintf(w, "## oz0 eval: %s\n\n", r.Summary())
	fmt.Fprintln(w, "| case | status | failed | tokens | cost | duration |")
	fmt.Fprintln(w, "| --- | --- | --- | ---: | ---: | ---: |")
	for _, c := range r.Results {
		failed := ""
		if len(c.Failures) > 0 {
			first, _, _ := strings.Cut(c.Failures[0].Message, "\n")
			failed = fmt.Sprintf("%s (line %d): %s", c.Failures[0].Kind, c.Failures[0].Line, clip(first, 120))
		}
		mark := map[string]string{Passed: "✅ passed", Failed: "❌ failed", Skipped: "⏭ skipped", Interrupted: "⏹ interrupted"}[c.Status]
		fmt.Fprintf(w, "| %s %s | %s | %s | %d | $%s | %s |\n", mdCell(c.File), mdCell(c.Case), mark, mdCell(failed), c.Tokens, money(c.CostUSD), seconds(c.Elapsed()))
	}
	if cmp != nil {
		fmt.Fprintf(w, "\nAgainst the baseline: %s tokens, %s, %s", signedInt(cmp.Total.Tokens), signedMoney(cmp.Total.CostUSD), signedSeconds(cmp.Total.DurationMS))
		if len(cmp.NowFailing) > 0 {
			fmt.Fprintf(w, "; now failing: %s", mdCell(strings.Join(cmp.NowFailing, ", ")))
		}
		fmt.Fprintln(w)
	}
	_, err := fmt.Fprintln(w)
	return err
}

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ").Replace(s)
}

// AppendSummary appends the summary to the job summary file ($GITHUB_STEP_SUMMARY).
func AppendSummary(path string, r *Report, cmp *Comparison) error {
	var b bytes.Buffer
	if err := Summary(&b, r, cmp); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("cannot write the job summary $GITHUB_STEP_SUMMARY: %w", err)
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("cannot write the job summary $GITHUB_STEP_SUMMARY: %w", err)
	}
	return f.Close()
}
