package cmdutil

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/iostreams"
)

type item struct {
	ID   string `json:"id"`
	Note string `json:"note,omitempty"`
}

func TestJSONFlagsWrite(t *testing.T) {
	list := []item{{ID: "job_1", Note: "<b> & co"}, {ID: "job_2"}}
	huge := json.RawMessage(`{"result":1e999999,"big":12345678901234567891,"tiny":1e-999999,"n":2.50}`)
	for _, c := range []struct {
		name  string
		flags JSONFlags
		tty   bool
		v     any
		want  string
	}{
		{"a list, piped: one line, no HTML escaping", JSONFlags{JSON: true}, false, list, `[{"id":"job_1","note":"<b> & co"},{"id":"job_2"}]` + "\n"},
		{"an empty list is []", JSONFlags{JSON: true}, false, []item(nil), "[]\n"},
		{"an empty list is [] on a terminal too", JSONFlags{JSON: true}, true, []item{}, "[]\n"},
		{"one thing on a terminal: indented", JSONFlags{JSON: true}, true, item{ID: "job_1"}, "{\n  \"id\": \"job_1\"\n}\n"},
		{"--jq: strings raw, one a line", JSONFlags{JQ: ".[].id"}, false, list, "job_1\njob_2\n"},
		{"--jq on an empty list", JSONFlags{JQ: ".[].id"}, false, []item(nil), ""},
		{"--jq: objects as JSON", JSONFlags{JQ: ".[1]"}, false, list, `{"id":"job_2"}` + "\n"},
		{"--template", JSONFlags{Template: `{{range .}}{{.id}} {{end}}`}, false, list, "job_1 job_2 "},
		// A job's result is the harness's JSON: its numbers are kept as written, those no float64
		// holds too, passed through or printed raw; a number jq computes is written as jq does.
		{"--jq keeps numbers as written", JSONFlags{JQ: ".result, .big, [.result, .tiny], .n"}, false, huge, "1e999999\n12345678901234567891\n[1e999999,1e-999999]\n2.50\n"},
		{"--jq on a terminal: indented", JSONFlags{JQ: "{r: .result}"}, true, huge, "{\n  \"r\": 1e999999\n}\n"},
		{"--jq computes as jq does", JSONFlags{JQ: ".n + 1, .result > 1, (.big | tostring)"}, false, huge, "3.5\ntrue\n12345678901234567891\n"},
		{"--template keeps numbers as written", JSONFlags{Template: "{{.result}} {{.big}} {{.n}}"}, false, huge, "1e999999 12345678901234567891 2.50"},
		{"--json keeps numbers as written", JSONFlags{JSON: true}, false, huge, `{"result":1e999999,"big":12345678901234567891,"tiny":1e-999999,"n":2.50}` + "\n"},
		// Text from a harness: exact in JSON and piped; on a terminal --jq and --template show
		// its controls, which JSON escapes but they print as they are.
		{"JSON escapes C1 controls too", JSONFlags{JSON: true}, false, item{ID: "j", Note: "\x1b]0;t\x07\u009b"}, `{"id":"j","note":"\u001b]0;t\u0007\u009b"}` + "\n"},
		{"--jq piped: exact", JSONFlags{JQ: ".note"}, false, item{Note: "\x1b[2J\r"}, "\x1b[2J\r\n"},
		{"--jq on a terminal: controls visible", JSONFlags{JQ: ".note"}, true, item{Note: "\x1b[2J\r\u009b"}, `\x1b[2J\r\u009b` + "\n"},
		{"--template on a terminal: controls visible", JSONFlags{Template: "{{.note}}"}, true, item{Note: "\x1b]52;c;eA==\x07"}, `\x1b]52;c;eA==\x07`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ios, _, out, _ := iostreams.Test()
			ios.SetTTY(false, c.tty)
			if !c.flags.Enabled() {
				t.Errorf("%s: not enabled", c.name)
			}
			if err := c.flags.Check(); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if err := c.flags.Write(ios, c.v); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if out.String() != c.want {
				t.Errorf("%s: got %q, want %q", c.name, out.String(), c.want)
			}
		})
	}
}

func TestJSONFlagsMistakesAreUsageErrors(t *testing.T) {
	for f, want := range map[JSONFlags]string{
		{JQ: ".["}:                   `--jq ".[" is not a whole jq expression: it ends too soon`,
		{JQ: ". |* 1"}:               `--jq ". |* 1" is not a jq expression: unexpected token "*"`,
		{Template: "{{.x"}:           `--template "{{.x" is not a Go template: unclosed action`,
		{Template: "a\n{{.x}"}:       `--template "a\n{{.x}" is not a Go template: bad character U+007D '}' (line 2)`,
		{JQ: ".", Template: "{{.}}"}: "--jq and --template do not go together",
	} {
		if err := f.Check(); ExitCode(err) != ExitUsage || err.Error() != want && !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%+v: %v\nwant %s", f, err, want)
		}
	}
	// An expression that parses but does not fit the data fails when it runs, as usage.
	ios, _, _, _ := iostreams.Test()
	f := JSONFlags{JQ: ".id"}
	if err := f.Write(ios, []item{{ID: "a"}}); ExitCode(err) != ExitUsage {
		t.Errorf(".id of a list: %v", err)
	}
	if (&JSONFlags{}).Enabled() {
		t.Error("no flags: enabled")
	}
}
