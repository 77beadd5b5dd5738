package main

import (
	"strings"
	"testing"
	"time"

	"github.com/cli/go-gh/v2/pkg/text"

	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/scaffold"
)

// Tables are gh's: on a terminal a header and columns fitted to its width; piped, tab-separated
// values with no header, nothing cut, each cell on one line.
func TestTable(t *testing.T) {
	long := strings.Repeat("a very long input ", 10)
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	render := func(tty bool, width int) string {
		ios, _, out, _ := iostreams.Test()
		ios.SetTTY(false, tty)
		ios.SetTerminalWidth(width)
		tb := newTable(ios, "JOB", "STATUS", "CREATED", "INPUT")
		tb.row("job_1", "succeeded", tb.time(at), long)
		tb.row("job_2", "failed", tb.time(time.Time{}), "two\nlines")
		if err := tb.Render(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}

	piped := render(false, 0)
	want := "job_1\tsucceeded\t2026-11-30T12:00:00Z\t" + strings.TrimSpace(long) + "\n" + "job_2\tfailed\t\ttwo lines\n"
	if piped != want {
		t.Errorf("piped:\n%q\nwant\n%q", piped, want)
	}

	tty := render(true, 60)
	lines := strings.Split(strings.TrimSuffix(tty, "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "JOB    STATUS") {
		t.Fatalf("terminal:\n%s", tty)
	}
	for _, l := range lines {
		if w := text.DisplayWidth(l); w > 60 {
			t.Errorf("a line of %d columns on a terminal of 60: %q", w, l)
		}
	}
	if !strings.Contains(lines[1], "...") || strings.Contains(tty, "\t") {
		t.Errorf("the long input is not cut to fit, or tabs are left:\n%s", tty)
	}
	if !strings.Contains(lines[1], "ago") {
		t.Errorf("a terminal shows times relative to now: %s", lines[1])
	}
}

// On a terminal the columns kept whole (IDs) are never cut: the others are, first; piped, a row's
// trailing empty cells are left out.
func TestTableKeepsIDsWhole(t *testing.T) {
	id := "job_q2feqj6jyjnx4vtk3m2a"
	ios, _, out, _ := iostreams.Test()
	ios.SetTTY(false, true)
	ios.SetTerminalWidth(80)
	tb := newTable(ios, "JOB", "AGENT", "STATUS", "CREATED", "TOOK", "INPUT").keepWhole("JOB", "STATUS", "CREATED", "TOOK")
	tb.now = time.Date(2026, 11, 30, 12, 2, 0, 0, time.UTC)
	tb.row(id, "acme-triage", "waiting_for_approval", tb.time(tb.now.Add(-2*time.Minute)), "1.2s", strings.Repeat("a long input ", 10))
	if err := tb.Render(); err != nil {
		t.Fatal(err)
	}
	line := strings.Split(out.String(), "\n")[1]
	if !strings.HasPrefix(line, id+" ") || !strings.Contains(line, "waiting_for_approval") || !strings.Contains(line, "2 minutes ago") {
		t.Errorf("at 80 columns the ID, status or time is cut: %q", line)
	}
	if w := text.DisplayWidth(line); w > 80 {
		t.Errorf("a line of %d columns on a terminal of 80: %q", w, line)
	}

	ios, _, out, _ = iostreams.Test()
	tb = newTable(ios, "NAME", "SET", "UPSTREAM")
	tb.row("KEY", "2026-11-30T12:00:00Z", "")
	tb.Render()
	if got := out.String(); got != "KEY\t2026-11-30T12:00:00Z\n" {
		t.Errorf("piped, a trailing empty cell is left out: %q", got)
	}
}

// `oz0 plugin templates` on a terminal of 80 columns shows each description whole: what tells the
// templates apart is not cut off.
func TestPluginTemplatesFit(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	ios.SetTTY(false, true)
	ios.SetTerminalWidth(80)
	if err := pluginTemplatesRun(&pluginTemplatesOptions{IO: ios}); err != nil {
		t.Fatal(err)
	}
	for _, tp := range scaffold.Templates() {
		if !strings.Contains(out.String(), tp.Description) {
			t.Errorf("at 80 columns, %s's description is cut: %q\n%s", tp.Name, tp.Description, out.String())
		}
	}
}
