package eval

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/orchestrator-zero/oz0/internal/atomicfile"
	"github.com/orchestrator-zero/oz0/internal/termtext"
)

// JUnit XML as CI systems read it (Jenkins, GitLab, GitHub's test reporters), within what Ant's
// format as Jenkins documents it allows (testdata/junit/junit.xsd): one testsuite an eval file
// (its classname), one testcase a case, a failure for each failed case (its message the first failure,
// its text every failure at its place in the eval file), skipped for a skipped one, an error for
// one an interruption stopped.

// The report's elements. It is written by hand, not with encoding/xml, whose package init would
// cost every oz0 command (cmd/oz0's inittrace test); the tests read it back with encoding/xml.
type junitSuites struct {
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Skipped   *junitSkipped `xml:"skipped"`
	Failure   *junitFailure `xml:"failure"`
	Error     *junitFailure `xml:"error"`
	SystemOut string        `xml:"system-out"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the report as JUnit XML.
func WriteJUnit(w io.Writer, r *Report) error {
	out := junitSuites{Name: "oz0 eval"}
	index := map[string]int{}
	var total float64
	for _, c := range r.Results {
		i, ok := index[c.File]
		if !ok {
			i = len(out.Suites)
			index[c.File] = i
			out.Suites = append(out.Suites, junitSuite{Name: c.File})
		}
		s := &out.Suites[i]
		secs := c.Elapsed().Seconds()
		jc := junitCase{Name: c.Case, Classname: c.File, Time: timeAttr(secs),
			SystemOut: xmlText(fmt.Sprintf("job %s (%s): %s, %d tokens, $%s", dash(c.Job), c.Source, plural(c.ModelCalls, "model call"), c.Tokens, money(c.CostUSD)))}
		if len(c.Notes) > 0 {
			jc.SystemOut += "\n" + xmlText(strings.Join(c.Notes, "\n"))
		}
		switch c.Status {
		case Failed:
			first, _, _ := strings.Cut(c.Failures[0].Message, "\n")
			var text []string
			for _, f := range c.Failures {
				text = append(text, fmt.Sprintf("%s:%d:%d: %s: %s", c.File, f.Line, f.Col, f.Kind, f.Message))
			}
			jc.Failure = &junitFailure{Message: xmlText(termtext.Visible(first)), Type: c.Failures[0].Kind, Text: xmlText(strings.Join(text, "\n"))}
			s.Failures++
			out.Failures++
		case Interrupted:
			jc.Error = &junitFailure{Message: xmlText(c.Notes[0]), Type: Interrupted}
			s.Errors++
			out.Errors++
		case Skipped:
			msg := ""
			if len(c.Notes) > 0 {
				msg = c.Notes[0]
			}
			jc.Skipped = &junitSkipped{Message: xmlText(msg)}
			s.Skipped++
			out.Skipped++
		}
		s.Tests++
		out.Tests++
		s.Time = timeAttr(parseTime(s.Time) + secs)
		total += secs
		s.Cases = append(s.Cases, jc)
	}
	out.Time = timeAttr(total)
	b := &strings.Builder{}
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	fmt.Fprintf(b, "<testsuites name=%s tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" time=\"%s\">\n",
		attr(out.Name), out.Tests, out.Failures, out.Errors, out.Skipped, out.Time)
	for _, s := range out.Suites {
		fmt.Fprintf(b, "  <testsuite name=%s tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" time=\"%s\">\n",
			attr(s.Name), s.Tests, s.Failures, s.Errors, s.Skipped, s.Time)
		for _, c := range s.Cases {
			fmt.Fprintf(b, "    <testcase name=%s classname=%s time=\"%s\">\n", attr(c.Name), attr(c.Classname), c.Time)
			if c.Skipped != nil {
				fmt.Fprintf(b, "      <skipped message=%s></skipped>\n", attr(c.Skipped.Message))
			}
			if c.Failure != nil {
				fmt.Fprintf(b, "      <failure message=%s type=%s>%s</failure>\n", attr(c.Failure.Message), attr(c.Failure.Type), text(c.Failure.Text))
			}
			if c.Error != nil {
				fmt.Fprintf(b, "      <error message=%s type=%s></error>\n", attr(c.Error.Message), attr(c.Error.Type))
			}
			fmt.Fprintf(b, "      <system-out>%s</system-out>\n", text(c.SystemOut))
			b.WriteString("    </testcase>\n")
		}
		b.WriteString("  </testsuite>\n")
	}
	b.WriteString("</testsuites>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

var (
	textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\r", "&#xD;")
	attrEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "\n", "&#xA;", "\r", "&#xD;", "\t", "&#x9;")
)

// text is character data, escaped; attr an attribute's value, escaped and quoted. Both drop what
// XML 1.0 cannot hold (xmlText).
func text(s string) string { return textEscaper.Replace(xmlText(s)) }
func attr(s string) string { return `"` + attrEscaper.Replace(xmlText(s)) + `"` }

// WriteJUnitFile writes the JUnit report to path.
func WriteJUnitFile(path string, r *Report) error {
	var b bytes.Buffer
	if err := WriteJUnit(&b, r); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("cannot write --junit %s: %w", path, err)
	}
	return nil
}

// plural is n and what, in the plural unless n is 1: "1 model call", "3 model calls".
func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.FormatInt(n, 10) + " " + what + "s"
}

func timeAttr(secs float64) string { return strconv.FormatFloat(secs, 'f', 3, 64) }

func parseTime(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// xmlText drops what XML 1.0 cannot hold (control characters but tab, newline and return), which
// a harness's output may have.
func xmlText(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0xFFFE || r == 0xFFFF {
			return -1
		}
		return r
	}, s)
}
