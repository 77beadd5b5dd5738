package schemas

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"gopkg.in/yaml.v3"

	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/internal/textclip"
)

// ValidateYAML converts the YAML tree under root (a document node or any
// node) with ToValue and validates it against the schema file schemaName.
// Each problem is placed on the YAML node it is about: an unknown key on
// the key, a missing key on the mapping that lacks it, anything else on
// the value. When the document exceeds DefaultLimits, the only problem is
// the yaml-limits one.
func ValidateYAML(schemaName string, root *yaml.Node) []diag.Diagnostic {
	_, problems := DecodeYAML(schemaName, root)
	return problems
}

// DecodeYAML is ValidateYAML that also returns the value ToValue made of
// root, for checks beyond the schema. The value may be invalid (check the
// problems) and is nil when the document exceeds DefaultLimits.
func DecodeYAML(schemaName string, root *yaml.Node) (any, []diag.Diagnostic) {
	c := &converter{lim: DefaultLimits, active: map[*yaml.Node]bool{}}
	var v any
	if n := docContent(root); n != nil {
		v = c.convert(n, 0, "")
	}
	if c.fatal != nil {
		return nil, []diag.Diagnostic{*c.fatal}
	}
	problems := c.problems
	for _, p := range validateValue(schemaName, root, v) {
		// A value ToValue left out is already reported: no second message.
		if !c.dropped[p.Pointer] || p.Rule != diag.InvalidValue {
			problems = append(problems, p)
		}
	}
	return v, capProblems(diag.Sort(problems))
}

// ValidateValue validates v, the value ToValue made of root, against the
// schema file schemaName, and places the problems on root's nodes.
func ValidateValue(schemaName string, root *yaml.Node, v any) []diag.Diagnostic {
	return capProblems(validateValue(schemaName, root, v))
}

func validateValue(schemaName string, root *yaml.Node, v any) []diag.Diagnostic {
	sch, err := Compile(schemaName)
	if err != nil {
		return []diag.Diagnostic{problem(1, 1, diag.InvalidValue, "", err.Error())}
	}
	return explain(sch.Validate(v), root)
}

// Explain turns an error of (*jsonschema.Schema).Validate about a value
// made of the YAML tree under root (a document node or any node) into
// Problems placed on root's nodes, with the messages ValidateYAML gives.
// With a nil root every problem is at line 1, column 1. Explain(nil, _) is
// nil; an error that is not a *jsonschema.ValidationError is one problem.
func Explain(err error, root *yaml.Node) []diag.Diagnostic {
	return capProblems(explain(err, root))
}

func explain(err error, root *yaml.Node) []diag.Diagnostic {
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return []diag.Diagnostic{problem(1, 1, diag.InvalidValue, "", err.Error())}
	}
	m := &mapper{root: root}
	m.collect(verr)
	return diag.Sort(m.problems)
}

// MaxProblems is the most problems ValidateYAML, DecodeYAML, ValidateValue
// and Explain report for one document; past it, the next problem also
// says how many more there are.
const MaxProblems = 100

func capProblems(ps []diag.Diagnostic) []diag.Diagnostic {
	if len(ps) <= MaxProblems+1 {
		return ps
	}
	more := len(ps) - MaxProblems
	next := ps[MaxProblems]
	ps = ps[:MaxProblems:MaxProblems]
	return append(ps, problem(next.Line, next.Col, next.Rule, next.Pointer,
		fmt.Sprintf("%s (and %d more problems in this document, not shown)", next.Message, more-1)))
}

func docContent(root *yaml.Node) *yaml.Node {
	if root == nil {
		return nil
	}
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil
		}
		return root.Content[0]
	}
	return root
}

type mapper struct {
	root     *yaml.Node
	loc      locator
	problems []diag.Diagnostic
}

func (m *mapper) add(n *yaml.Node, kind diag.RuleID, loc []string, msg string) {
	line, col := 1, 1
	if n != nil && n.Line > 0 {
		line, col = n.Line, n.Column
	}
	d := problem(line, col, kind, Pointer(loc...), msg)
	d.EndLine, d.EndCol = End(n)
	m.problems = append(m.problems, d)
}

// node returns the value node at loc, or the nearest ancestor that exists.
func (m *mapper) node(loc []string) *yaml.Node {
	for i := len(loc); i >= 0; i-- {
		if _, v := m.loc.locate(m.root, loc[:i]); v != nil {
			return v
		}
	}
	if m.root != nil && m.root.Kind == yaml.DocumentNode && len(m.root.Content) > 0 {
		return m.root.Content[0]
	}
	return m.root
}

func (m *mapper) collect(e *jsonschema.ValidationError) {
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.AllOf, *kind.Reference:
		for _, c := range e.Causes {
			m.collect(c)
		}
		if len(e.Causes) == 0 {
			m.leaf(e)
		}
	case *kind.OneOf:
		if len(k.Subschemas) > 0 {
			m.add(m.node(e.InstanceLocation), diag.InvalidValue, e.InstanceLocation,
				fmt.Sprintf("%s matches more than one of its allowed forms", describe(e.InstanceLocation)))
			return
		}
		m.alternatives(e)
	case *kind.AnyOf:
		m.alternatives(e)
	default:
		m.leaf(e)
	}
}

// alternatives reports a failed oneOf/anyOf: through the one alternative
// whose type matched the value, if there is exactly one, else as one
// message about the value.
func (m *mapper) alternatives(e *jsonschema.ValidationError) {
	var near []*jsonschema.ValidationError
	for _, c := range e.Causes {
		if !shallow(c, len(e.InstanceLocation)) {
			near = append(near, c)
		}
	}
	if len(near) == 1 {
		m.collect(near[0])
		return
	}
	loc := e.InstanceLocation
	n := m.node(loc)
	msg := ""
	if em, ok := annotation(e.SchemaURL, "errorMessage").(string); ok {
		msg = describe(loc) + " " + em
		if got := scalarText(n); got != "" {
			msg += ", not " + got
		}
	} else {
		var forms []string
		for _, c := range e.Causes {
			for _, l := range leaves(c) {
				if s := m.message(l); s != "" {
					forms = append(forms, s)
					break
				}
			}
		}
		msg = describe(loc) + " is not valid: " + strings.Join(forms, "; or ")
	}
	m.add(n, diag.InvalidValue, loc, msg)
}

// shallow reports whether the failure of an alternative is only that the
// value has the wrong type or is not one of its constants.
func shallow(e *jsonschema.ValidationError, depth int) bool {
	for _, l := range leaves(e) {
		if len(l.InstanceLocation) != depth {
			return false
		}
		switch l.ErrorKind.(type) {
		case *kind.Type, *kind.Enum, *kind.Const, *kind.FalseSchema:
		default:
			return false
		}
	}
	return true
}

func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

func (m *mapper) leaf(e *jsonschema.ValidationError) {
	loc := e.InstanceLocation
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		allowed := propertyNames(e.SchemaURL)
		for _, p := range k.Properties {
			keyLoc := append(append([]string{}, loc...), p)
			kn, _ := m.loc.locate(m.root, keyLoc)
			if kn == nil {
				kn = m.node(loc)
			}
			msg := fmt.Sprintf("unknown key `%s`", textclip.Clip(p))
			if len(loc) > 0 {
				msg += " in " + describe(loc)
			}
			suggestion, ok := "", false
			if len(k.Properties) <= MaxProblems { // past that, suggestions are noise (and slow)
				suggestion, ok = Closest(p, allowed)
			}
			if ok {
				msg += fmt.Sprintf("; did you mean `%s`?", suggestion)
			} else if len(allowed) == 1 {
				msg += fmt.Sprintf("; the only key allowed is `%s`", allowed[0])
			} else if len(allowed) > 0 {
				msg += "; expected one of " + strings.Join(allowed, ", ")
			}
			m.add(kn, diag.UnknownKey, keyLoc, msg)
		}
	case *kind.Required:
		n := m.node(loc)
		for _, p := range k.Missing {
			msg := fmt.Sprintf("missing required key `%s`", p)
			if len(loc) > 0 {
				msg += " in " + describe(loc)
			}
			m.add(n, diag.MissingKey, loc, msg)
		}
	case *kind.UniqueItems:
		itemLoc := append(append([]string{}, loc...), strconv.Itoa(k.Duplicates[1]))
		n := m.node(itemLoc)
		m.add(n, diag.InvalidValue, itemLoc, fmt.Sprintf("%s lists %s more than once", describe(loc), orValue(scalarText(n), "an item")))
	default:
		if msg := m.message(e); msg != "" {
			m.add(m.node(loc), diag.InvalidValue, loc, msg)
		}
	}
}

// message is the text of a leaf error about a value.
func (m *mapper) message(e *jsonschema.ValidationError) string {
	loc := e.InstanceLocation
	what := describe(loc)
	n := m.node(loc)
	em, _ := annotation(e.SchemaURL, "errorMessage").(string)
	switch k := e.ErrorKind.(type) {
	case *kind.Type:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = typeName(w)
		}
		msg := fmt.Sprintf("%s must be %s, not %s", what, strings.Join(want, " or "), gotName(k.Got))
		if em != "" {
			return fmt.Sprintf("%s %s, not %s", what, em, gotName(k.Got))
		}
		if len(k.Want) == 1 && k.Want[0] == "string" && (k.Got == "number" || k.Got == "integer" || k.Got == "boolean") && n != nil && n.Kind == yaml.ScalarNode {
			msg += fmt.Sprintf("; quote it: \"%s\"", textclip.Clip(n.Value))
		}
		return msg
	case *kind.Const:
		msg := fmt.Sprintf("%s must be %s", what, display(k.Want))
		if got := display(k.Got); got != display(k.Want) {
			msg += ", not " + got
		}
		return msg
	case *kind.Enum:
		var want []string
		var wantStr []string
		for _, w := range k.Want {
			want = append(want, plain(w))
			if s, ok := w.(string); ok {
				wantStr = append(wantStr, s)
			}
		}
		msg := fmt.Sprintf("%s must be one of %s, not %s", what, strings.Join(want, ", "), display(k.Got))
		if len(k.Want) == 1 {
			msg = fmt.Sprintf("%s must be %s, not %s", what, want[0], display(k.Got))
		}
		if s, ok := k.Got.(string); ok {
			if c, ok := Closest(s, wantStr); ok {
				msg += fmt.Sprintf("; did you mean `%s`?", c)
			}
		}
		return msg
	case *kind.Pattern:
		if pm, ok := annotation(e.SchemaURL, "patternErrorMessage").(string); ok {
			return fmt.Sprintf("%s %s, not %s", what, pm, display(k.Got))
		}
		return fmt.Sprintf("%s must match the pattern %s, not %s", what, k.Want, display(k.Got))
	case *kind.MinItems:
		return fmt.Sprintf("%s must list at least %s", what, plural(k.Want, "item"))
	case *kind.MaxItems:
		return fmt.Sprintf("%s must list at most %s, not %d", what, plural(k.Want, "item"), k.Got)
	case *kind.MinLength:
		if k.Want == 1 {
			return fmt.Sprintf("%s must not be empty", what)
		}
		return fmt.Sprintf("%s must be at least %s long, not %d", what, plural(k.Want, "character"), k.Got)
	case *kind.MaxLength:
		return fmt.Sprintf("%s must be at most %s long, not %d", what, plural(k.Want, "character"), k.Got)
	case *kind.MinProperties:
		return fmt.Sprintf("%s must have at least %s", what, plural(k.Want, "key"))
	case *kind.MaxProperties:
		return fmt.Sprintf("%s must have at most %s", what, plural(k.Want, "key"))
	case *kind.Minimum:
		return fmt.Sprintf("%s must be at least %s, not %s", what, ratString(k.Want), ratString(k.Got))
	case *kind.Maximum:
		return fmt.Sprintf("%s must be at most %s, not %s", what, ratString(k.Want), ratString(k.Got))
	case *kind.ExclusiveMinimum:
		return fmt.Sprintf("%s must be greater than %s, not %s", what, ratString(k.Want), ratString(k.Got))
	case *kind.ExclusiveMaximum:
		return fmt.Sprintf("%s must be less than %s, not %s", what, ratString(k.Want), ratString(k.Got))
	case *kind.MultipleOf:
		return fmt.Sprintf("%s must be a multiple of %s", what, ratString(k.Want))
	case *kind.Format:
		return fmt.Sprintf("%s must be a valid %s, not %s", what, k.Want, display(k.Got))
	case *kind.FalseSchema:
		return fmt.Sprintf("%s is not allowed here", what)
	case *kind.PropertyNames:
		return fmt.Sprintf("key `%s` is not allowed in %s", textclip.Clip(k.Property), what)
	case *kind.InvalidJsonValue:
		return fmt.Sprintf("%s holds a value that cannot be validated", what)
	}
	if em != "" {
		return what + " " + em
	}
	return fmt.Sprintf("%s is not valid (%s)", what, strings.Join(e.ErrorKind.KeywordPath(), "/"))
}

// describe names the value at loc for a message: the last key with the
// indexes after it, e.g. `max_steps` or `command[0]`.
func describe(loc []string) string {
	if len(loc) == 0 {
		return "the document"
	}
	j := len(loc) - 1
	for j >= 0 && isIndex(loc[j]) {
		j--
	}
	var b strings.Builder
	b.WriteByte('`')
	start := j
	if j < 0 {
		start = 0
	} else {
		b.WriteString(textclip.Clip(loc[j]))
		start = j + 1
	}
	for _, t := range loc[start:] {
		b.WriteString("[" + t + "]")
	}
	b.WriteByte('`')
	return b.String()
}

func describePath(ptr string) string { return describe(splitPointer(ptr)) }

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func typeName(t string) string {
	switch t {
	case "object":
		return "a mapping"
	case "array":
		return "a list"
	case "string":
		return "a string"
	case "integer":
		return "an integer"
	case "number":
		return "a number"
	case "boolean":
		return "true or false"
	case "null":
		return "empty"
	}
	return t
}

func gotName(t string) string {
	switch t {
	case "null":
		return "empty"
	case "boolean":
		return "a boolean"
	}
	return typeName(t)
}

// display shows a value from the document in a message.
func display(v any) string {
	switch v := v.(type) {
	case string:
		return "`" + textclip.Clip(v) + "`"
	case nil:
		return "empty"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	}
	return "`" + textclip.Clip(prettyJSON(v)) + "`"
}

// plain shows an allowed value in a list of them.
func plain(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return prettyJSON(v)
}

func scalarText(n *yaml.Node) string {
	n = resolveAlias(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	if n.ShortTag() == "!!null" {
		return "empty"
	}
	return "`" + textclip.Clip(n.Value) + "`"
}

func orValue(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}
