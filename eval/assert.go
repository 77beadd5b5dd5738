package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/internal/textclip"
	"github.com/orchestrator-zero/oz0/lint/evalfile"
	"github.com/orchestrator-zero/oz0/schemas"
)

// outcome is what a case's job did: the job as it ended and its events, read once.
type outcome struct {
	job    apiv1.Job
	asked  []toolCall        // the tools the harness asked for, in order
	denied map[string]bool   // permission id → the call was refused
	reason map[string]string // permission id → why it was refused
}

type toolCall struct {
	ID   string         `json:"id"`
	Tool string         `json:"tool"`
	Args map[string]any `json:"arguments"`
}

func newOutcome(job apiv1.Job, events []apiv1.Event) *outcome {
	o := &outcome{job: job, denied: map[string]bool{}, reason: map[string]string{}}
	for _, ev := range events {
		switch ev.Type {
		case apiv1.EventPermissionRequest:
			var c toolCall
			if json.Unmarshal(ev.Data, &c) == nil {
				o.asked = append(o.asked, c)
			}
		case apiv1.EventPermissionDecision:
			var d struct {
				ID       string `json:"id"`
				Decision string `json:"decision"`
				Reason   string `json:"reason"`
				By       string `json:"by"`
			}
			if json.Unmarshal(ev.Data, &d) == nil && d.Decision == "deny" {
				o.denied[d.ID] = true
				o.reason[d.ID] = strings.TrimSpace(d.By + ": " + d.Reason)
			}
		}
	}
	return o
}

// text is the output as text: a text output as it is, any other JSON compact.
func (o *outcome) text() string {
	var s string
	if json.Unmarshal(o.job.Output, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, o.job.Output) == nil {
		return b.String()
	}
	return string(o.job.Output)
}

// value is the output as a JSON value: a JSON output's, or the JSON a text output holds (an agent
// that answers JSON as text); ok is false when it is neither.
func (o *outcome) value() (v any, ok bool) {
	if len(o.job.Output) == 0 {
		return nil, false
	}
	if json.Unmarshal(o.job.Output, &v) != nil {
		return nil, false
	}
	if s, isText := v.(string); isText {
		var inner any
		if json.Unmarshal([]byte(strings.TrimSpace(s)), &inner) == nil {
			return inner, true
		}
	}
	return v, true
}

func (o *outcome) tokens() int64 { return o.job.Usage.InputTokens + o.job.Usage.OutputTokens }

func (o *outcome) duration() time.Duration {
	start := o.job.StartedAt
	if start.IsZero() {
		start = o.job.CreatedAt
	}
	if o.job.EndedAt.IsZero() {
		return 0
	}
	return o.job.EndedAt.Sub(start)
}

// check is one assertion, ready to check an outcome: ok, or what failed.
type check interface {
	check(o *outcome) (ok bool, failed string)
}

// newCheck makes the check of an assertion; dir is the eval file's directory (a schema file is
// relative to it). The assertion has passed evalfile's checks.
func newCheck(a evalfile.Assertion, dir string) (check, error) {
	switch a.Kind {
	case "status":
		return statusIs(a.Value.(string)), nil
	case "equals":
		return equals{a.Value}, nil
	case "contains":
		return contains{a.Value.(string), true}, nil
	case "not_contains":
		return contains{a.Value.(string), false}, nil
	case "matches":
		re, err := regexp.Compile(a.Value.(string))
		return matches{re}, err
	case "schema":
		doc := a.Value
		if file, ok := a.Value.(string); ok {
			data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(file)))
			if err != nil {
				return nil, fmt.Errorf("cannot read the schema %s: %w", file, err)
			}
			if err := json.Unmarshal(data, &doc); err != nil {
				return nil, fmt.Errorf("the schema %s is not JSON: %v", file, err)
			}
		}
		sch, err := evalfile.CompileSchema(doc)
		if err != nil {
			return nil, fmt.Errorf("the JSON Schema does not compile: %s", textclip.Squash(err.Error(), 300))
		}
		return validates{sch}, nil
	case "path":
		var ps pathValues
		switch v := a.Value.(type) {
		case string:
			toks, _ := evalfile.ParsePath(v)
			ps = append(ps, pathValue{path: v, toks: toks})
		case map[string]any:
			for _, k := range slices.Sorted(mapKeys(v)) {
				toks, _ := evalfile.ParsePath(k)
				ps = append(ps, pathValue{path: k, toks: toks, want: v[k], has: true})
			}
		}
		return ps, nil
	case "called":
		switch v := a.Value.(type) {
		case string:
			return called{name: v}, nil
		case map[string]any:
			c := called{name: v["name"].(string)}
			c.args, _ = v["arguments"].(map[string]any)
			return c, nil
		}
	case "not_called":
		return notCalled(a.Value.(string)), nil
	case "refused":
		return refused(a.Value.(string)), nil
	case "max_model_calls":
		return atMost{what: "model calls", max: number(a.Value), got: func(o *outcome) float64 { return float64(o.job.Usage.ModelCalls) }}, nil
	case "max_tokens":
		return atMost{what: "tokens", max: number(a.Value), got: func(o *outcome) float64 { return float64(o.tokens()) }}, nil
	case "max_cost":
		return atMost{what: "cost", max: number(a.Value), dollars: true, got: func(o *outcome) float64 { return o.job.Usage.CostUSD }}, nil
	case "max_duration":
		d, err := time.ParseDuration(a.Value.(string))
		return maxDuration(d), err
	}
	return nil, fmt.Errorf("unknown assertion %s", a.Kind)
}

func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func number(v any) float64 {
	switch n := v.(type) {
	case int:
		return float64(n)
	case int64:
		return float64(n)
	case float64:
		return n
	case json.Number:
		f, _ := n.Float64()
		return f
	}
	f, _ := strconv.ParseFloat(fmt.Sprint(v), 64)
	return f
}

type statusIs string

func (s statusIs) check(o *outcome) (bool, string) {
	if string(o.job.Status) == string(s) {
		return true, ""
	}
	return false, fmt.Sprintf("the job %s, not %s%s", o.job.Status, s, reasonOf(o.job))
}

func reasonOf(j apiv1.Job) string {
	if j.Reason == "" {
		return ""
	}
	return ": " + j.Reason
}

type equals struct{ want any }

func (e equals) check(o *outcome) (bool, string) {
	want := normalize(e.want)
	if s, isText := want.(string); isText {
		if o.text() == s {
			return true, ""
		}
		return false, fmt.Sprintf("the output is %s, not %s", quote(o.text()), quote(s))
	}
	got, ok := o.value()
	if ok && reflect.DeepEqual(normalize(got), want) {
		return true, ""
	}
	return false, fmt.Sprintf("the output is %s, not %s", quote(o.text()), compact(want))
}

type contains struct {
	text string
	want bool
}

func (c contains) check(o *outcome) (bool, string) {
	if strings.Contains(o.text(), c.text) == c.want {
		return true, ""
	}
	if c.want {
		return false, fmt.Sprintf("the output does not contain %s: it is %s", quote(c.text), quote(o.text()))
	}
	return false, fmt.Sprintf("the output contains %s: it is %s", quote(c.text), quote(o.text()))
}

type matches struct{ re *regexp.Regexp }

func (m matches) check(o *outcome) (bool, string) {
	if m.re.MatchString(o.text()) {
		return true, ""
	}
	return false, fmt.Sprintf("the output does not match %s: it is %s", quote(m.re.String()), quote(o.text()))
}

type validates struct{ schema *jsonschema.Schema }

func (v validates) check(o *outcome) (bool, string) {
	got, ok := o.value()
	if !ok {
		return false, fmt.Sprintf("the output is not JSON: it is %s", quote(o.text()))
	}
	if err := v.schema.Validate(got); err != nil {
		return false, "the output does not validate against the schema: " + schemaError(err)
	}
	return true, ""
}

// schemaError is the validation error's first problem, as oz0 words schema problems, on one line.
func schemaError(err error) string {
	ps := schemas.Explain(err, nil)
	if len(ps) == 0 {
		return textclip.Squash(err.Error(), 300)
	}
	at := ps[0].Pointer
	if at == "" {
		at = "/"
	}
	return textclip.Squash(fmt.Sprintf("at %s: %s", at, ps[0].Message), 300)
}

type pathValue struct {
	path string
	toks []string
	want any
	has  bool // want is set: the value must be want, not only be there
}

type pathValues []pathValue

func (ps pathValues) check(o *outcome) (bool, string) {
	got, ok := o.value()
	if !ok {
		return false, fmt.Sprintf("the output is not JSON: it is %s", quote(o.text()))
	}
	for _, p := range ps {
		v, found := lookup(got, p.toks)
		switch {
		case !found:
			return false, fmt.Sprintf("the output has nothing at %s: it is %s", p.path, quote(o.text()))
		case p.has && !reflect.DeepEqual(normalize(v), normalize(p.want)):
			return false, fmt.Sprintf("%s is %s, not %s", p.path, compact(v), compact(normalize(p.want)))
		}
	}
	return true, ""
}

func lookup(v any, toks []string) (any, bool) {
	for _, t := range toks {
		switch c := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = c[t]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

type called struct {
	name string
	args map[string]any
}

func (c called) check(o *outcome) (bool, string) {
	var seen []string
	for _, a := range o.asked {
		if a.Tool != c.name {
			continue
		}
		if c.args == nil || subset(normalize(c.args), normalize(a.Args)) {
			return true, ""
		}
		seen = append(seen, compact(a.Args))
	}
	switch {
	case len(seen) > 0:
		return false, fmt.Sprintf("%s was called with %s, not with %s", c.name, strings.Join(seen, ", then "), compact(normalize(c.args)))
	case len(o.asked) == 0:
		return false, fmt.Sprintf("%s was not called: no tool was", c.name)
	}
	return false, fmt.Sprintf("%s was not called: only %s", c.name, strings.Join(toolNames(o.asked), ", "))
}

func toolNames(cs []toolCall) []string {
	var names []string
	for _, c := range cs {
		if !slices.Contains(names, c.Tool) {
			names = append(names, c.Tool)
		}
	}
	return names
}

// subset reports whether want is within got: every key of a mapping with a value within got's,
// lists and scalars equal.
func subset(want, got any) bool {
	wm, ok := want.(map[string]any)
	if !ok {
		return reflect.DeepEqual(want, got)
	}
	gm, ok := got.(map[string]any)
	if !ok {
		return len(wm) == 0
	}
	for k, wv := range wm {
		gv, ok := gm[k]
		if !ok || !subset(wv, gv) {
			return false
		}
	}
	return true
}

type notCalled string

func (n notCalled) check(o *outcome) (bool, string) {
	for _, a := range o.asked {
		if a.Tool == string(n) {
			return false, fmt.Sprintf("%s was called, with %s", n, compact(a.Args))
		}
	}
	return true, ""
}

type refused string

func (r refused) check(o *outcome) (bool, string) {
	asked := false
	for _, a := range o.asked {
		if a.Tool != string(r) {
			continue
		}
		asked = true
		if o.denied[a.ID] {
			return true, ""
		}
	}
	if asked {
		return false, fmt.Sprintf("%s was called and allowed", r)
	}
	return false, fmt.Sprintf("%s was not called, so not refused", r)
}

type atMost struct {
	what    string
	max     float64
	dollars bool
	got     func(*outcome) float64
}

func (m atMost) check(o *outcome) (bool, string) {
	got := m.got(o)
	if got <= m.max {
		return true, ""
	}
	if m.dollars {
		return false, fmt.Sprintf("the cost is $%s, over $%s", money(got), money(m.max))
	}
	return false, fmt.Sprintf("%s %s, over %s", strconv.FormatFloat(got, 'f', -1, 64), m.what, strconv.FormatFloat(m.max, 'f', -1, 64))
}

type maxDuration time.Duration

func (m maxDuration) check(o *outcome) (bool, string) {
	if d := o.duration(); d > time.Duration(m) {
		return false, fmt.Sprintf("it took %s, over %s", d.Round(time.Millisecond), time.Duration(m))
	}
	return true, ""
}

// normalize makes YAML's and JSON's values alike: every number a float64.
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return textclip.ClipN(string(b), 200)
}

func quote(s string) string { return strconv.Quote(textclip.ClipN(s, 200)) }

func money(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
