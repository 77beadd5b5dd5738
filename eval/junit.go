package eval

import (
	"bytes"
	"encoding/xml"
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
// its text every failure at its place in the eval file), skipped for a skipped one.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
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
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitSkipped struct {
	Message string `xml:"message,attr,omitempty"`
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
			SystemOut: xmlText(fmt.Sprintf("job %s (%s): %d model calls, %d tokens, $%s", dash(c.Job), c.Source, c.ModelCalls, c.Tokens, money(c.CostUSD)))}
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
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

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
