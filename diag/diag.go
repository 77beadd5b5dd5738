// Package diag is oz0's one diagnostic: a problem in a file a person wrote (a plugin's manifest,
// agents and skills, a fake model script, a hooks file), at a position, under a stable rule ID.
// Every checker returns Diagnostics; the printers here (text, json, sarif, github) are the only
// code that formats them, so whatever oz0 reads can be reported in a terminal and in CI alike.
//
// The rules are constants of type RuleID (a checker naming one that does not exist does not
// compile), each with its documentation in the catalogue Rules; docs/lint-rules.md is rendered
// from it.
package diag

import (
	"cmp"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Severity is how bad a diagnostic is. Errors make a command fail; warnings are reported and do
// not.
type Severity string

// The severities.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// Diagnostic is one problem. Line and Col are 1-based (0: about the whole file); EndLine and EndCol,
// when known, are where the offending text ends (exclusive column), on the same or a later line.
type Diagnostic struct {
	File     string   `json:"file"` // slash path, relative to Report.Dir
	Line     int      `json:"line"`
	Col      int      `json:"col"`
	EndLine  int      `json:"end_line,omitempty"`
	EndCol   int      `json:"end_col,omitempty"`
	Severity Severity `json:"severity"`
	Rule     RuleID   `json:"rule"`
	Message  string   `json:"message"`
	// Fix says how to mend it, when there is more to say than the rule's fix.
	Fix string `json:"fix,omitempty"`
	// Pointer is the JSON pointer of the value concerned (e.g. /limits/max_steps; "" for the
	// document): checkers use it to say a value once, and it is not printed.
	Pointer string `json:"-"`
}

// Report is the diagnostics of one check: a plugin, or a file.
type Report struct {
	// Dir is the directory the diagnostics' files are relative to, as the user gave it ("" when
	// they are as given). Printers show Dir joined with each file.
	Dir         string
	Diagnostics []Diagnostic
}

// HasErrors reports whether any diagnostic is an error.
func (r *Report) HasErrors() bool {
	e, _ := r.Counts()
	return e > 0
}

// Counts returns the number of errors and of warnings.
func (r *Report) Counts() (errs, warnings int) {
	for _, d := range r.Diagnostics {
		if d.Severity == Warning {
			warnings++
		} else {
			errs++
		}
	}
	return errs, warnings
}

// Path is the path under which d's file is shown: Dir joined with d.File, in slash form.
func (r *Report) Path(d Diagnostic) string {
	if r.Dir == "" || r.Dir == "." {
		return d.File
	}
	return path.Join(filepath.ToSlash(r.Dir), d.File)
}

// Add appends more diagnostics and keeps the report sorted.
func (r *Report) Add(ds ...Diagnostic) {
	r.Diagnostics = Sort(append(r.Diagnostics, ds...))
}

// Sort orders diagnostics by file, line, column, rule and message, and drops exact repeats; it
// sorts in place and returns the shortened slice.
func Sort(ds []Diagnostic) []Diagnostic {
	slices.SortStableFunc(ds, func(a, b Diagnostic) int {
		return cmp.Or(
			strings.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Col, b.Col),
			strings.Compare(a.Rule.String(), b.Rule.String()),
			strings.Compare(a.Message, b.Message),
		)
	})
	return slices.Compact(ds)
}

// ReportError is the error of a loader whose input has problems: What names the input ("the fake
// model script replies.yaml"), Report holds every problem. Commands print the report and exit 1.
type ReportError struct {
	What   string
	Report *Report
}

// Errorf makes a ReportError of the diagnostics, sorted, for what (a fmt format).
func Errorf(ds []Diagnostic, format string, args ...any) *ReportError {
	return &ReportError{What: fmt.Sprintf(format, args...), Report: &Report{Diagnostics: Sort(ds)}}
}

// Error is one line: what has how many problems, and the first of them.
func (e *ReportError) Error() string {
	errs, warnings := e.Report.Counts()
	msg := fmt.Sprintf("%s has %s", e.What, Summary(e.Report))
	if errs+warnings == 0 {
		return msg
	}
	first := e.Report.Diagnostics[0]
	for _, d := range e.Report.Diagnostics {
		if d.Severity != Warning {
			first = d
			break
		}
	}
	return msg + "; the first: " + textLine(e.Report, first)
}

// Summary counts a report's diagnostics: "2 errors, 1 warning", "1 error", "3 warnings" or "no
// problems".
func Summary(r *Report) string {
	e, w := r.Counts()
	var parts []string
	if e > 0 {
		parts = append(parts, plural(e, "error"))
	}
	if w > 0 {
		parts = append(parts, plural(w, "warning"))
	}
	if len(parts) == 0 {
		return "no problems"
	}
	return strings.Join(parts, ", ")
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
