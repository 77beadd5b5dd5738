package cmdutil

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/itchyny/gojq"
	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/ghtemplate"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
	"github.com/orchestrator-zero/oz0/internal/lazyre"
	"github.com/orchestrator-zero/oz0/internal/termtext"
	"github.com/orchestrator-zero/oz0/internal/textclip"
)

// JSONFlags are --json, --jq and --template, which every command that lists or shows something
// has, as gh has them. The shape is one convention everywhere (docs/cli.md): a list is a JSON
// array (an empty one is []), one thing shown is an object; indented on a terminal, one line
// when piped. --jq and --template imply --json and pick from that same document, with gh's jq
// (gojq) and gh's template functions.
type JSONFlags struct {
	JSON     bool
	JQ       string
	Template string
}

// AddJSONFlags adds --json, --jq and --template to cmd; what says what the JSON is ("the jobs").
func AddJSONFlags(cmd *cobra.Command, f *JSONFlags, what string) {
	cmd.Flags().BoolVar(&f.JSON, "json", false, "print "+what+" as JSON")
	cmd.Flags().StringVarP(&f.JQ, "jq", "q", "", "print what a jq expression picks from the JSON (implies --json)")
	cmd.Flags().StringVarP(&f.Template, "template", "t", "", "format the JSON with a Go template, as gh does (implies --json)")
	_ = cmd.RegisterFlagCompletionFunc("jq", cobra.NoFileCompletions)
	_ = cmd.RegisterFlagCompletionFunc("template", cobra.NoFileCompletions)
	// gh's habit, --json with the fields to print, leaves them as an argument: say so before the
	// command reads them as its own (a job ID, a directory).
	args := cmd.Args
	cmd.Args = func(c *cobra.Command, a []string) error {
		if err := JSONFieldsMistake(c, a, false); err != nil {
			return err
		}
		if args == nil {
			return nil
		}
		return args(c, a)
	}
}

// jsonFields is what gh's --json takes: field names, comma-separated.
var jsonFields = lazyre.New(`^[a-z_]+(,[a-z_]+)*$`)

// JSONFieldsMistake is the usage error for an argument that is gh's --json fields, when --json was
// given: a comma-separated list of names, or, with oneWord (a command that takes no arguments),
// any single name; nil otherwise.
func JSONFieldsMistake(cmd *cobra.Command, args []string, oneWord bool) error {
	if fl := cmd.Flags().Lookup("json"); fl == nil || !fl.Changed {
		return nil
	}
	for _, a := range args {
		if jsonFields().MatchString(a) && (oneWord || strings.Contains(a, ",")) {
			fields := strings.ReplaceAll(a, ",", ", ")
			return Usagef("--json takes no field names: it prints every field; pick some with --jq, as in --jq '.[] | {%s}' for a list, or --jq '{%s}' for one", fields, fields)
		}
	}
	return nil
}

// Enabled reports whether the command prints JSON (or what --jq or --template make of it)
// rather than its table.
func (f *JSONFlags) Enabled() bool { return f.JSON || f.JQ != "" || f.Template != "" }

// Check parses --jq and --template, so that a mistake in one is a usage error before anything
// runs.
func (f *JSONFlags) Check() error {
	if f.JQ != "" && f.Template != "" {
		return Usagef("--jq and --template do not go together; choose one")
	}
	if f.JQ != "" {
		if _, err := gojq.Parse(f.JQ); err != nil {
			var pe *gojq.ParseError
			if errors.As(err, &pe) && pe.Offset >= len(f.JQ) {
				// gojq says "unexpected EOF": the expression stops before it is whole.
				return Usagef("--jq %s is not a whole jq expression: it ends too soon (a bracket or quote left open?)", Quote(f.JQ))
			}
			return Usagef("--jq %s is not a jq expression: %v", Quote(f.JQ), err)
		}
	}
	if f.Template != "" {
		if err := ghtemplate.New(io.Discard, 80, false).Parse(f.Template); err != nil {
			return Usagef("--template %s is not a Go template: %s", Quote(f.Template), templateError(err))
		}
	}
	return nil
}

// templateError is what text/template says is wrong, without its "template: NAME:LINE: " head;
// the line is said when the template has more than one.
func templateError(err error) string {
	m := templateHead().FindStringSubmatch(err.Error())
	if m == nil {
		return err.Error()
	}
	if m[1] != "1" {
		return m[2] + " (line " + m[1] + ")"
	}
	return m[2]
}

// Quote quotes a value the user gave for a message, clipped: a mistyped megabyte stays a line.
func Quote(s string) string { return strconv.Quote(textclip.Clip(s)) }

var templateHead = lazyre.New(`^template: [^:]*:(\d+):(?:\d+:)? (.*)$`)

// Write prints v as the flags ask: JSON, or what --jq or --template make of it. A nil slice is
// an empty list, [].
func (f *JSONFlags) Write(ios *iostreams.IOStreams, v any) error {
	data := []byte("[]")
	if rv := reflect.ValueOf(v); rv.Kind() != reflect.Slice || !rv.IsNil() {
		var err error
		if data, err = jsonutil.Marshal(v); err != nil {
			return err
		}
	}
	indent := ""
	if ios.IsStdoutTTY() {
		indent = "  "
	}
	if ios.IsStdoutTTY() && (f.JQ != "" || f.Template != "") {
		// --jq and --template print strings as they are: on a terminal, with their controls
		// made visible; piped, exact, for scripts.
		data = termtext.VisibleJSON(data)
	}
	switch {
	case f.JQ != "":
		if err := evalJQ(data, ios.Out, f.JQ, indent); err != nil {
			return Usagef("--jq %q: %v", f.JQ, err)
		}
		return nil
	case f.Template != "":
		t := ghtemplate.New(ios.Out, ios.TerminalWidth(), false)
		if err := t.Parse(f.Template); err != nil {
			return Usagef("--template: %v", err)
		}
		if err := t.Execute(bytes.NewReader(data)); err != nil {
			return Usagef("--template: %v", err)
		}
		return t.Flush()
	}
	if indent != "" {
		var b bytes.Buffer
		if err := json.Indent(&b, data, "", indent); err != nil {
			return err
		}
		data = b.Bytes()
	}
	// The exact text, with the controls encoding/json leaves raw (C1, DEL) escaped as well.
	_, err := fmt.Fprintf(ios.Out, "%s\n", termtext.EscapeJSON(data))
	return err
}

// evalJQ runs the jq expression expr on the JSON document data and writes what it yields, as gh's
// --jq does: a string, number, boolean or null raw, one a line; an object or an array as JSON,
// indented by indent. Unlike gh's (go-gh's pkg/jq), numbers keep their text: the document's
// numbers are json.Number, which gojq carries through as written (1e999999, which no float64
// holds, and 12345678901234567891, which one rounds), and a number gojq computes is written as jq
// writes it. A job's result is the harness's JSON, and a number in it broke every listing that
// held the job.
func evalJQ(data []byte, w io.Writer, expr, indent string) error {
	query, err := gojq.Parse(expr)
	if err != nil {
		return err
	}
	code, err := gojq.Compile(query, gojq.WithEnvironLoader(os.Environ))
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return err
	}
	iter := code.Run(doc)
	for {
		v, ok := iter.Next()
		if !ok {
			return nil
		}
		if err, isErr := v.(error); isErr {
			var halt *gojq.HaltError
			if errors.As(err, &halt) && halt.Value() == nil {
				return nil // halt: the end, without an error
			}
			return err
		}
		var out []byte
		switch v := v.(type) {
		case nil:
		case string:
			out = []byte(v)
		case map[string]any, []any:
			out, _ = gojq.Marshal(v)
			if indent != "" {
				var b bytes.Buffer
				if err := json.Indent(&b, out, "", indent); err != nil {
					return err
				}
				out = b.Bytes()
			}
		default: // a number or a boolean
			out, _ = gojq.Marshal(v)
		}
		if _, err := w.Write(append(out, '\n')); err != nil {
			return err
		}
	}
}
