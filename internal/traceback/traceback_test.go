package traceback

import (
	"slices"
	"strings"
	"testing"
)

const pyStderr = `warming up
Traceback (most recent call last):
  File "/p/src/acme/harness.py", line 788, in main
    output = run(Session(request, writer=writer, inbox=inbox))
             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/p/src/acme/agent.py", line 22, in run
    session.call_tool(
  File "/p/src/acme/agent.py", line 15, in notify_team
    return accounts[team]["account"]
           ~~~~~~~~~~~~~~^^^^^^^^^^^
KeyError: 'account'
a line logged after it
`

func TestPython(t *testing.T) {
	tb := Last(pyStderr)
	if len(tb) != 10 || tb[0] != pythonStart || tb[9] != "KeyError: 'account'" {
		t.Fatalf("Last = %q", tb)
	}
	if got := Exception(tb); got != "KeyError: 'account'" {
		t.Errorf("Exception = %q", got)
	}
	var got []string
	for _, f := range Frames(tb) {
		got = append(got, f.String())
	}
	want := []string{
		"/p/src/acme/harness.py:788, in main: output = run(Session(request, writer=writer, inbox=inbox))",
		"/p/src/acme/agent.py:22, in run: session.call_tool(",
		`/p/src/acme/agent.py:15, in notify_team: return accounts[team]["account"]`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("Frames =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Of chained exceptions, the last traceback is the one the harness died of.
func TestPythonChained(t *testing.T) {
	text := "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\nKeyError: 'x'\n\nDuring handling of the above exception, another exception occurred:\n\n" +
		"Traceback (most recent call last):\n  File \"b.py\", line 2, in g\n    raise ValueError('y')\nValueError: y\n"
	tb := Last(text)
	if Exception(tb) != "ValueError: y" || len(Frames(tb)) != 1 || Frames(tb)[0].File != "b.py" {
		t.Errorf("Last = %q", tb)
	}
}

func TestNode(t *testing.T) {
	text := "file:///p/src/agent.mjs:12\n    throw new Error('no account');\n    ^\n\nError: no account\n" +
		"    at notifyTeam (file:///p/src/agent.mjs:12:11)\n    at file:///p/src/main.mjs:4:1\n    at async run (node:internal/modules/esm/module_job:234:25)\n\nNode.js v22.1.0\n"
	tb := Last(text)
	if len(tb) != 4 || Exception(tb) != "Error: no account" {
		t.Fatalf("Last = %q", tb)
	}
	var got []string
	for _, f := range Frames(tb) {
		got = append(got, f.String())
	}
	want := []string{"node:internal/modules/esm/module_job:234, in async run", "/p/src/main.mjs:4", "/p/src/agent.mjs:12, in notifyTeam"}
	if !slices.Equal(got, want) {
		t.Errorf("Frames = %q, want %q", got, want)
	}
}

func TestNone(t *testing.T) {
	for _, text := range []string{"", "just a log\nand another\n", "    at nothing (x.js:1:1)\n"} {
		if tb := Last(text); tb != nil {
			t.Errorf("Last(%q) = %q", text, tb)
		}
	}
}

// A traceback is bounded: its first line and its last, the exception kept; each line clipped.
func TestBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(pythonStart + "\n")
	for range 1000 {
		b.WriteString("  File \"deep.py\", line 1, in recurse\n    recurse(" + strings.Repeat("x", 2000) + ")\n")
	}
	b.WriteString("RecursionError: maximum recursion depth exceeded\n")
	tb := Last(b.String())
	if len(tb) != MaxLines || tb[0] != pythonStart || Exception(tb) != "RecursionError: maximum recursion depth exceeded" {
		t.Fatalf("%d lines, first %q, last %q", len(tb), tb[0], tb[len(tb)-1])
	}
	for _, l := range tb {
		if len(l) > MaxLineSize {
			t.Fatalf("a line of %d bytes", len(l))
		}
	}
}
