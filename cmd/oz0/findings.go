package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/orchestrator-zero/oz0/diag"
)

// reportFindings prints the findings an error carries (a *diag.ReportError: a plugin's lint
// errors, the problems of a fake model script or a hooks file) to w, as oz0 plugin lint's text
// format prints them, and returns the one line that sums them up; ok is false for an error that
// carries none. It is the one place that prints them.
func reportFindings(w io.Writer, err error, version string) (summary string, ok bool) {
	var report *diag.ReportError
	if !errors.As(err, &report) {
		return "", false
	}
	_ = diag.Write(w, report.Report, diag.FormatText, diag.Tool{Version: version})
	return fmt.Sprintf("%s has %s; nothing was run", report.What, diag.Summary(report.Report)), true
}
