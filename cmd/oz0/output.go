package main

import (
	"time"

	"github.com/cli/go-gh/v2/pkg/tableprinter"

	"github.com/orchestrator-zero/oz0/internal/client"
	"github.com/orchestrator-zero/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/lint/diag"
)

// clientOptions is what every command that talks to the dev server has: its streams, and the
// client the Factory builds for the server in OZ0_CONTEXT.
type clientOptions struct {
	IO     *iostreams.IOStreams
	Client func() (*client.Client, error)
}

func newClientOptions(f *cmdutil.Factory) clientOptions {
	return clientOptions{IO: f.IOStreams, Client: f.Client}
}

// table is a list as gh prints one: on a terminal, a header and columns fitted to its width
// (long cells cut with an ellipsis); piped, tab-separated values with no header and nothing cut,
// for cut, awk and while-read loops.
type table struct {
	tableprinter.TablePrinter
	tty bool
}

func newTable(ios *iostreams.IOStreams, header ...string) *table {
	t := &table{TablePrinter: tableprinter.New(ios.Out, ios.IsStdoutTTY(), ios.TerminalWidth()), tty: ios.IsStdoutTTY()}
	t.AddHeader(header)
	return t
}

// row adds one row; each cell is kept to one line.
func (t *table) row(cells ...string) {
	for _, c := range cells {
		t.AddField(oneLine(c))
	}
	t.EndRow()
}

// time is a time as a cell: local and readable on a terminal, RFC 3339 when piped.
func (t *table) time(at time.Time) string {
	if at.IsZero() {
		return ""
	}
	if t.tty {
		return at.Local().Format(time.DateTime)
	}
	return at.Format(time.RFC3339)
}

// clipLine fits a value into a line: one line, at most n runes.
func clipLine(s string, n int) string { return diag.Squash(s, n) }
