// Package evalfile reads a plugin's eval files (evals/*.yaml, schemas/eval.schema.json) with
// source positions: the agent, the cases, and each case's assertions, every one at its line and
// column. `oz0 plugin lint` reports what it finds, and `oz0 eval` runs what it reads; both use
// this package, so what lint passes eval runs.
package evalfile

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/internal/textclip"
	"github.com/orchestrator-zero/oz0/schemas"
)

// SchemaName is the eval files' JSON Schema in package schemas.
const SchemaName = "eval.schema.json"

// Dir is where a plugin keeps its eval files.
const Dir = "evals"

// IsFile reports whether e, an entry of a plugin's evals directory, is an eval file: a *.yaml
// file, not hidden. oz0 eval runs them and lint checks them.
func IsFile(e fs.DirEntry) bool {
	return !e.IsDir() && strings.HasSuffix(e.Name(), ".yaml") && !strings.HasPrefix(e.Name(), ".")
}

// RecordingsDir is where, beside an eval file, its cases' recordings are by default:
// recordings/<file>/<case>.json.
const RecordingsDir = "recordings"

// Rule is the diag rule of a case that cannot run as written (beyond the schema).
const Rule = diag.EvalCase

// File is an eval file.
type File struct {
	Name      string // the file's name as given (shown in findings and reports)
	Agent     string
	AgentLine int
	AgentCol  int
	// Approvals is how the file answers approvals (approvals: at its top), for the cases that do
	// not say their own.
	Approvals Approvals
	Cases     []*Case
}

// Approvals is how oz0 eval answers the approvals a case's job asks for: every call alike (All:
// ApproveAll or DenyAll), or by tool (Tools: tool → ApproveAll or DenyAll); the zero value answers
// none (the case fails on one). Line and Col are where it is said: the case's key, or the file's.
type Approvals struct {
	All       string
	Tools     map[string]string
	Line, Col int
}

// For is the answer to a call of tool: ApproveAll, DenyAll, or "" (none).
func (a Approvals) For(tool string) string {
	if a.All != "" {
		return a.All
	}
	return a.Tools[tool]
}

// String is the answers as the eval file writes them: approve, or {notify_team: approve}.
func (a Approvals) String() string {
	if a.All != "" || len(a.Tools) == 0 {
		return a.All
	}
	var parts []string
	for _, t := range slices.Sorted(maps.Keys(a.Tools)) {
		parts = append(parts, t+": "+a.Tools[t])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// Source is where a case's model answers come from.
type Source string

// The sources.
const (
	FromRecording Source = "recording" // recorded calls (.json), replayed call for call
	FromScript    Source = "script"    // a fake model script (.yaml), a recording oz0 job script wrote included
	FromLive      Source = "live"      // the live model records (--live)
)

// Case is one case.
type Case struct {
	Name      string
	Line, Col int
	// Input is the job's input as oz0 run takes it: the text, or a mapping or list as JSON.
	Input string
	// Source is where the answers come from; Path the recording or script, relative to the eval
	// file's directory, slash-separated.
	Source Source
	Path   string
	// PathKey is the key that names Path, recording or script, at PathLine:PathCol (its value);
	// "" for the default recording.
	PathKey           string
	PathLine, PathCol int
	Asserts           []Assertion
	// Approvals is how oz0 eval answers the approvals the case's job asks for: the case's, else
	// the file's.
	Approvals Approvals
	// Timeout bounds the case, its job's wait for a session included: the case's, else the
	// file's; 0 is none. TimeoutLine and TimeoutCol are where it is said.
	Timeout                 time.Duration
	TimeoutLine, TimeoutCol int
}

// The answers a case may give to its job's approvals.
const (
	ApproveAll = "approve"
	DenyAll    = "deny"
)

// Assertion is one thing that must hold of a case's job.
type Assertion struct {
	Kind      string // the key: status, equals, contains, …
	Line, Col int
	Value     any // the value as JSON gives it (schemas.ToValue's)
}

// DefaultRecording is where a case's recording is when it names none, relative to the eval
// file's directory.
func DefaultRecording(file, name string) string {
	stem := strings.TrimSuffix(path.Base(strings.ReplaceAll(file, `\`, "/")), path.Ext(file))
	return path.Join(RecordingsDir, stem, name+".json")
}

// Absent is what is said, after its key, of a case whose script (script:, or a .yaml recording:,
// which oz0 job script wrote) is not beside the eval file (named file); "" for a .json recording,
// which oz0 eval --record makes where the case says (oz0 eval says so when it is not there).
func (c *Case) Absent(file string) string {
	if c.Source != FromScript || c.PathKey == "" {
		return ""
	}
	at := path.Join(path.Dir(strings.ReplaceAll(file, `\`, "/")), c.Path)
	if c.PathKey == "script" {
		return fmt.Sprintf("no file `%s` (%s); give the path of a fake model script, relative to the eval file", c.Path, at)
	}
	return fmt.Sprintf("no file `%s` (%s); give the path of the script oz0 job script wrote (oz0 job script JOB -o %s), relative to the eval file", c.Path, at, at)
}

// Read reads the eval file at path for Parse, within diag.MaxFileSize as oz0 plugin lint reads
// it: a larger file is a file-too-large finding (its File is name, how findings name it), not
// read further. A file that cannot be read is an error.
func Read(path, name string) ([]byte, []diag.Diagnostic, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.IsDir() {
		return nil, nil, fmt.Errorf("%s is a directory, not an eval file", name)
	}
	tooLarge := func(size int64) []diag.Diagnostic {
		return []diag.Diagnostic{{File: name, Severity: diag.Error, Rule: diag.FileTooLarge, Message: diag.TooLarge(name, size)}}
	}
	if st.Mode().IsRegular() && st.Size() > diag.MaxFileSize {
		return nil, tooLarge(st.Size()), nil
	}
	data, err := io.ReadAll(io.LimitReader(f, diag.MaxFileSize+1))
	if err != nil {
		return nil, nil, err
	}
	if len(data) > diag.MaxFileSize {
		return nil, tooLarge(-1), nil
	}
	return data, nil, nil
}

// Parse reads an eval file's data; name is how findings name it. The diagnostics have File set to
// name. The file is nil when the YAML cannot be read at all.
func Parse(name string, data []byte) (*File, []diag.Diagnostic) {
	root, problems := schemas.ParseYAML(data)
	if root == nil {
		return nil, withFile(name, problems)
	}
	v, more := schemas.DecodeYAML(SchemaName, root)
	problems = append(problems, more...)
	m, _ := v.(map[string]any)
	f := &File{Name: name}
	if m == nil {
		return f, withFile(name, problems)
	}
	// The checks below run on what the schema passed: a value it found wrong is not checked again.
	flagged := map[string]bool{}
	for _, p := range problems {
		flagged[p.Pointer] = true
	}
	f.Agent, _ = m["agent"].(string)
	if _, n := schemas.Locate(root, "agent"); n != nil {
		f.AgentLine, f.AgentCol = n.Line, n.Column
	}
	fileApprovals := approvals(root, m, flagged)
	f.Approvals = fileApprovals
	fileTimeout, tl, tc, bad := timeout(root, m, flagged)
	problems = append(problems, bad...)
	cases, _ := m["cases"].([]any)
	seen := map[string]int{}
	for i, cv := range cases {
		cm, _ := cv.(map[string]any)
		idx := strconv.Itoa(i)
		_, cn := schemas.Locate(root, "cases", idx)
		if cm == nil || cn == nil {
			continue
		}
		c := &Case{Line: cn.Line, Col: cn.Column}
		c.Name, _ = cm["name"].(string)
		if _, nn := schemas.Locate(root, "cases", idx, "name"); nn != nil {
			if first, ok := seen[c.Name]; ok {
				problems = append(problems, at(nn, "case name `%s` is used twice (first on line %d); names must be unique", c.Name, first))
			} else {
				seen[c.Name] = nn.Line
			}
		}
		c.Approvals = fileApprovals
		if a := approvals(root, cm, flagged, "cases", idx); a.Line > 0 {
			c.Approvals = a
		}
		c.Timeout, c.TimeoutLine, c.TimeoutCol = fileTimeout, tl, tc
		if d, l, col, bad := timeout(root, cm, flagged, "cases", idx); l > 0 || len(bad) > 0 {
			c.Timeout, c.TimeoutLine, c.TimeoutCol = d, l, col
			problems = append(problems, bad...)
		}
		switch in := cm["input"].(type) {
		case string:
			c.Input = in
		default:
			b, _ := json.Marshal(in)
			c.Input = string(b)
		}
		switch {
		case cm["live"] == true:
			c.Source = FromLive
		case cm["script"] != nil:
			c.Source = FromScript
			c.Path, _ = cm["script"].(string)
		default:
			c.Source = FromRecording
			if p, ok := cm["recording"].(string); ok {
				c.Path = p
				if e := strings.ToLower(path.Ext(p)); e == ".yaml" || e == ".yml" {
					c.Source = FromScript // oz0 job script's output: a fake model script
				}
			} else {
				c.Path = DefaultRecording(name, c.Name)
			}
		}
		if c.Path != "" {
			for _, key := range []string{"recording", "script"} {
				_, pn := schemas.Locate(root, "cases", idx, key)
				if pn == nil {
					continue
				}
				if c.PathKey == "" {
					c.PathKey, c.PathLine, c.PathCol = key, pn.Line, pn.Column
				}
				if !relative(c.Path) {
					problems = append(problems, at(pn, "`%s` must be a path relative to the eval file, beside it or below (no ..)", c.Path))
				}
			}
		}
		as, _ := cm["assert"].([]any)
		for j, av := range as {
			am, _ := av.(map[string]any)
			_, an := schemas.Locate(root, "cases", idx, "assert", strconv.Itoa(j))
			if an == nil {
				continue
			}
			for k, val := range am {
				kn, vn := schemas.Locate(root, "cases", idx, "assert", strconv.Itoa(j), k)
				a := Assertion{Kind: k, Line: an.Line, Col: an.Column, Value: val}
				if kn != nil {
					a.Line, a.Col = kn.Line, kn.Column
				}
				if flagged[schemas.Pointer("cases", idx, "assert", strconv.Itoa(j), k)] || flagged[schemas.Pointer("cases", idx, "assert", strconv.Itoa(j))] {
					continue
				}
				if msg := Check(a); msg != "" {
					problems = append(problems, at(vn, "%s", msg))
				}
				c.Asserts = append(c.Asserts, a)
			}
		}
		f.Cases = append(f.Cases, c)
	}
	return f, withFile(name, diag.Sort(problems))
}

// approvals reads the approvals key of the mapping m at path in root (the file's, or a case's);
// its Line is 0 when m has none, or one the schema flagged.
func approvals(root *yaml.Node, m map[string]any, flagged map[string]bool, where ...string) Approvals {
	key := append(where, "approvals")
	kn, _ := schemas.Locate(root, key...)
	if kn == nil || m["approvals"] == nil || flagged[schemas.Pointer(key...)] {
		return Approvals{}
	}
	a := Approvals{Line: kn.Line, Col: kn.Column}
	switch v := m["approvals"].(type) {
	case string:
		a.All = v
	case map[string]any:
		a.Tools = map[string]string{}
		for tool, ans := range v {
			a.Tools[tool], _ = ans.(string)
		}
	}
	return a
}

// timeout reads the timeout key of the mapping m at path in root (the file's, or a case's): its
// duration and where it is said (line 0: none), or what is wrong with it.
func timeout(root *yaml.Node, m map[string]any, flagged map[string]bool, where ...string) (time.Duration, int, int, []diag.Diagnostic) {
	key := append(where, "timeout")
	kn, vn := schemas.Locate(root, key...)
	s, ok := m["timeout"].(string)
	if kn == nil || !ok || flagged[schemas.Pointer(key...)] {
		return 0, 0, 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, 0, 0, []diag.Diagnostic{at(vn, "`%s` must be a duration longer than 0, such as 30s or 2m", textclip.Clip(s))}
	}
	return d, kn.Line, kn.Column, nil
}

// Check says what is wrong with an assertion the schema passes but oz0 cannot check, "" when
// nothing is.
func Check(a Assertion) string {
	switch a.Kind {
	case "matches":
		s, _ := a.Value.(string)
		if _, err := regexp.Compile(s); err != nil {
			return fmt.Sprintf("`%s` is not a valid regular expression (Go RE2 syntax): %s", a.Value, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
	case "max_duration":
		s, _ := a.Value.(string)
		if d, err := time.ParseDuration(s); err != nil || d <= 0 {
			return fmt.Sprintf("`%s` must be a duration longer than 0, such as 30s or 1m30s", a.Value)
		}
	case "path":
		paths := []string{}
		switch v := a.Value.(type) {
		case string:
			paths = append(paths, v)
		case map[string]any:
			for k := range v {
				paths = append(paths, k)
			}
		}
		for _, p := range paths {
			if _, err := ParsePath(p); err != nil {
				return err.Error()
			}
		}
	case "schema":
		if doc, inline := a.Value.(map[string]any); inline {
			if _, err := CompileSchema(doc); err != nil {
				return fmt.Sprintf("the JSON Schema does not compile: %s", textclip.Squash(err.Error(), 300))
			}
		} else if s, ok := a.Value.(string); ok && !relative(s) {
			return fmt.Sprintf("`%s` must be a path relative to the eval file, beside it or below (no ..)", s)
		}
	}
	return ""
}

// CompileSchema compiles an inline JSON Schema of an assertion.
func CompileSchema(doc any) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	if err := c.AddResource("eval-assertion.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("eval-assertion.json")
}

// ParsePath reads a path into a JSON value: keys separated by dots, list indexes in brackets
// (team, labels[0], customer.address.city); or a JSON pointer (/labels/0).
func ParsePath(p string) ([]string, error) {
	bad := fmt.Errorf("`%s` is not a path: write keys separated by dots and indexes in brackets (labels[0], customer.id), or a JSON pointer (/labels/0)", p)
	if p == "" {
		return nil, bad
	}
	if strings.HasPrefix(p, "/") {
		var toks []string
		for _, t := range strings.Split(p[1:], "/") {
			toks = append(toks, strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~"))
		}
		return toks, nil
	}
	var toks []string
	for _, part := range strings.Split(p, ".") {
		key, rest, _ := strings.Cut(part, "[")
		if key == "" && rest == "" {
			return nil, bad
		}
		if key != "" {
			toks = append(toks, key)
		}
		for rest != "" {
			n, after, ok := strings.Cut(rest, "]")
			if _, err := strconv.Atoi(n); !ok || err != nil {
				return nil, bad
			}
			toks = append(toks, n)
			if after == "" {
				break
			}
			if !strings.HasPrefix(after, "[") {
				return nil, bad
			}
			rest = after[1:]
		}
	}
	return toks, nil
}

func relative(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || (len(p) > 1 && p[1] == ':') {
		return false
	}
	c := path.Clean(strings.ReplaceAll(p, `\`, "/"))
	return c != ".." && !strings.HasPrefix(c, "../")
}

func at(n *yaml.Node, format string, args ...any) diag.Diagnostic {
	d := diag.Diagnostic{Severity: diag.Error, Rule: Rule, Message: fmt.Sprintf(format, args...), Line: 1, Col: 1}
	if n != nil {
		d.Line, d.Col = n.Line, n.Column
		d.EndLine, d.EndCol = schemas.End(n)
	}
	return d
}

func withFile(name string, ds []diag.Diagnostic) []diag.Diagnostic {
	for i := range ds {
		ds[i].File = name
	}
	return ds
}
