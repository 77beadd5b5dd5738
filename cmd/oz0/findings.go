package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/orchestrator-zero/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/lint"
	"github.com/orchestrator-zero/oz0/plugin"
	"github.com/orchestrator-zero/oz0/schemas"
)

// reportFindings prints what an error that carries findings found (a plugin's lint errors, the
// problems of a fake model script or a hooks file) to w, as oz0 plugin lint's text format prints
// them, and returns the FindingsError whose message is the one-line summary. Any other error
// comes back as it was. It is the one place that knows these error types.
func reportFindings(w io.Writer, err error) error {
	var lintErr *plugin.LintError
	var fileErr *schemas.FileError
	switch {
	case errors.As(err, &lintErr):
		if werr := lint.Write(w, lintErr.Report, lint.Formats[0], ""); werr != nil { // the text format
			return werr
		}
		return &cmdutil.FindingsError{Msg: err.Error()}
	case errors.As(err, &fileErr):
		n := len(fileErr.Problems)
		fmt.Fprintf(w, "%s\n%s\n", fileErr.Error(), count(n, "error"))
		return &cmdutil.FindingsError{Msg: fmt.Sprintf("%s has %s (listed above); nothing was started", schemas.OneLine(fileErr.Name), count(n, "problem"))}
	}
	return err
}

// count says n things: "1 error", "5 errors".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
