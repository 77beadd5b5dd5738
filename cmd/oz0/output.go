package main

import (
	"slices"
	"time"

	"github.com/cli/go-gh/v2/pkg/tableprinter"
	"github.com/cli/go-gh/v2/pkg/text"

	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/internal/textclip"
)

// clientOptions is what every command that talks to the dev server has: its streams, and the
// client the Factory builds for the server in OZ0_CONTEXT, else the plugin's (client.Find).
type clientOptions struct {
	IO     *iostreams.IOStreams
	Client func() (*client.Client, error)
}

func newClientOptions(f *cmdutil.Factory) clientOptions {
	return clientOptions{IO: f.IOStreams, Client: f.Client}
}

// table is a list as gh prints one: on a terminal, a header and columns fitted to its width
// (long cells cut with an ellipsis, the columns kept whole last: IDs, which people copy), times
// relative to now ("2 minutes ago"); piped, tab-separated values with no header and nothing cut
// (a row's trailing empty cells left out), times in RFC 3339, for cut, awk and while-read loops.
type table struct {
	tableprinter.TablePrinter
	tty    bool
	header []string
	whole  map[int]bool
	now    time.Time
}

func newTable(ios *iostreams.IOStreams, header ...string) *table {
	t := &table{TablePrinter: tableprinter.New(ios.Out, ios.IsStdoutTTY(), ios.TerminalWidth()), tty: ios.IsStdoutTTY(),
		header: header, whole: map[int]bool{}, now: time.Now()}
	t.AddHeader(header)
	return t
}

// keepWhole keeps the named columns whole on a terminal: the others are cut to fit first.
func (t *table) keepWhole(names ...string) *table {
	for i, h := range t.header {
		if slices.Contains(names, h) {
			t.whole[i] = true
		}
	}
	return t
}

// row adds one row; each cell is kept to one line.
func (t *table) row(cells ...string) {
	n := len(cells)
	if !t.tty {
		for n > 0 && cells[n-1] == "" {
			n--
		}
	}
	for i, c := range cells[:n] {
		if t.whole[i] {
			t.AddField(oneLine(c), tableprinter.WithTruncate(nil))
		} else {
			t.AddField(oneLine(c))
		}
	}
	t.EndRow()
}

// time is a time as a cell: relative to now on a terminal ("2 minutes ago", as gh says it),
// RFC 3339 when piped.
func (t *table) time(at time.Time) string {
	if at.IsZero() {
		return ""
	}
	if t.tty {
		return text.RelativeTimeAgo(t.now, at)
	}
	return at.Format(time.RFC3339)
}

// clipLine fits a value into a line: one line, at most n runes.
func clipLine(s string, n int) string { return textclip.Squash(s, n) }
