package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/internal/lazyre"
	"github.com/orchestrator-zero/oz0/internal/textclip"
)

// problem is an error diagnostic at line:col about the value at the JSON pointer ptr; its file is
// the caller's to set.
func problem(line, col int, rule diag.RuleID, ptr, msg string) diag.Diagnostic {
	return diag.Diagnostic{Line: line, Col: col, Severity: diag.Error, Rule: rule, Pointer: ptr, Message: msg}
}

// End is where the text of n ends, exclusive: for a plain scalar on one line (a key, a name, a
// number), the line and the column after its last character; 0, 0 when it cannot be told from
// the node (a quoted or folded scalar, a mapping, a list).
func End(n *yaml.Node) (line, col int) {
	if n == nil || n.Kind != yaml.ScalarNode || n.Style != 0 || n.Line == 0 || strings.ContainsAny(n.Value, "\n\r") || n.Value == "" {
		return 0, 0
	}
	return n.Line, n.Column + utf8.RuneCountInString(n.Value)
}

// Limits bound the work of turning a YAML node tree into values.
type Limits struct {
	MaxNodes int // nodes visited in all, aliases expanded (billion laughs)
	MaxDepth int // nesting of mappings and sequences
}

// DefaultLimits are the limits of ToValue and ValidateYAML.
var DefaultLimits = Limits{MaxNodes: 100_000, MaxDepth: 64}

var yamlLineErr = lazyre.New(`^yaml: line (\d+): (.*)$`)

// ParseYAML parses data as one YAML document and returns its document node.
// It never panics: binary data, invalid UTF-8, syntax errors and a second
// document are Problems (kinds not-text and yaml-syntax), and the node is
// nil when there is none. An empty document gives a DocumentNode without
// content.
func ParseYAML(data []byte) (root *yaml.Node, problems []diag.Diagnostic) {
	if p, bad := checkText(data); bad {
		return nil, []diag.Diagnostic{p}
	}
	defer func() {
		if r := recover(); r != nil {
			root = nil
			problems = []diag.Diagnostic{problem(1, 1, diag.YAMLSyntax, "", fmt.Sprintf("the YAML parser failed: %v", r))}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return &yaml.Node{Kind: yaml.DocumentNode, Line: 1, Column: 1}, nil
		}
		return nil, []diag.Diagnostic{yamlError(data, err)}
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		if len(next.Content) == 0 || (next.Content[0].Kind == yaml.ScalarNode && next.Content[0].ShortTag() == "!!null") {
			return &doc, nil // a trailing --- with nothing after it
		}
		n := next.Content[0]
		return &doc, []diag.Diagnostic{problem(n.Line, n.Column, diag.YAMLSyntax, "", "a second YAML document (after ---); the file must hold one")}
	} else if !errors.Is(err, io.EOF) {
		return &doc, []diag.Diagnostic{yamlError(data, err)}
	}
	return &doc, nil
}

// yamlError turns a yaml.v3 error about data into a diagnostic at the place the parser failed.
func yamlError(data []byte, err error) diag.Diagnostic {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		// A decoding error: its line is the node's own.
		line := 1
		if m := yamlLineErr().FindStringSubmatch("yaml: " + te.Errors[0]); m != nil {
			line, _ = strconv.Atoi(m[1])
			return problem(line, 1, diag.YAMLSyntax, "", m[2])
		}
		return problem(line, 1, diag.YAMLSyntax, "", te.Errors[0])
	}
	reported := 0
	if m := yamlLineErr().FindStringSubmatch(msg); m != nil {
		reported, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	line, col := failurePosition(data, msg, reported)
	return problem(line, col, diag.YAMLSyntax, "", msg)
}

// failurePosition finds where the YAML parser stops with msg: the line and column of the token
// it could not take. yaml.v3 does not say: its "line N" is the start of the construct being
// parsed (for "did not find expected key", the first line of the mapping, often line 1),
// counted from 0 for parser errors and from 1 for scanner errors. That line is no later than the
// failure, which is the first line whose prefix of data fails with the same message: parsing is
// left to right and a token never spans lines for the constructs these errors are about. The
// column is the first rune of that line whose prefix fails alike (the token the parser refused);
// failing that, the line's first non-blank rune. Only the error path parses again, a
// logarithmic number of times for the line.
func failurePosition(data []byte, msg string, reported int) (line, col int) {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	lo := max(reported, 1)
	if lo > len(lines) || !failsWith(data, msg) {
		return lo, 1 // past the last line (the end of the stream), or not to be found again
	}
	prefix := func(n int) int { // bytes in lines[:n]
		size := 0
		for _, l := range lines[:n] {
			size += len(l)
		}
		return size
	}
	// The smallest line in [lo, len(lines)] whose prefix fails with msg; the whole of data does.
	hi := len(lines)
	for lo < hi {
		mid := (lo + hi) / 2
		if failsWith(data[:prefix(mid)], msg) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	line = lo
	start, text := prefix(line-1), lines[line-1]
	trimmed := bytes.TrimLeft(text, " \t")
	col = utf8.RuneCount(text[:len(text)-len(trimmed)]) + 1
	// The column of the refused token: the shortest cut of the line that fails alike. A cut
	// inside an earlier token can fail too, but then at that token's start. Past maxSearch runes,
	// or in a file so large that the cuts would take long, the line's first non-blank rune is a
	// fair answer.
	const maxSearch, maxBytes = 200, 4 << 20
	end := bytes.TrimRight(text, "\r\n")
	for i, c := 0, 1; i < len(end) && c <= maxSearch && c*(start+i) <= maxBytes; c++ {
		_, size := utf8.DecodeRune(end[i:])
		i += size
		if failsWith(data[:start+i], msg) {
			return line, c
		}
	}
	return line, col
}

// failsWith reports whether parsing data, every document of it, fails with msg.
func failsWith(data []byte, msg string) (fails bool) {
	defer func() {
		if r := recover(); r != nil {
			fails = false
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if err == nil {
			continue
		}
		if errors.Is(err, io.EOF) {
			return false
		}
		got := err.Error()
		if m := yamlLineErr().FindStringSubmatch(got); m != nil {
			got = m[2]
		}
		return strings.TrimPrefix(got, "yaml: ") == msg
	}
}

// checkText reports the first byte sequence that cannot be in a YAML
// stream: a NUL (binary data), invalid UTF-8 or a control character.
func checkText(data []byte) (diag.Diagnostic, bool) {
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		var msg string
		switch {
		case r == utf8.RuneError && size <= 1:
			msg = fmt.Sprintf("not UTF-8 text: invalid byte 0x%02x", data[i])
		case r == 0:
			msg = "binary data: a NUL byte"
		case r == '\t' || r == '\n' || r == '\r' || r == 0x85:
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0xd800 && r <= 0xdfff) || r == 0xfffe || r == 0xffff:
			msg = fmt.Sprintf("control character %U is not allowed in YAML", r)
		case r == 0xfeff && i > 0:
			msg = "a byte order mark (U+FEFF) in the middle of the file"
		}
		if msg != "" {
			return problem(line, col, diag.NotText, "", msg), true
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	return diag.Diagnostic{}, false
}

// ToValue converts the YAML node tree under root into the plain values
// that jsonschema validates: map[string]any, []any, string, bool, nil,
// json.Number for integers and float64 for other numbers. It expands
// aliases and merge keys (<<) within DefaultLimits; see ToValueLimits.
func ToValue(root *yaml.Node) (any, []diag.Diagnostic) {
	return ToValueLimits(root, DefaultLimits)
}

// ToValueLimits is ToValue with explicit limits. When a limit is exceeded
// it returns a nil value and a yaml-limits diagnostic: the document must not
// be validated further. Other problems (duplicate keys, keys that are not
// strings, non-finite numbers) come with a usable value that lacks the
// offending part.
func ToValueLimits(root *yaml.Node, lim Limits) (any, []diag.Diagnostic) {
	c := &converter{lim: lim, active: map[*yaml.Node]bool{}}
	if root != nil && root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, nil
		}
		root = root.Content[0]
	}
	if root == nil {
		return nil, nil
	}
	v := c.convert(root, 0, "")
	if c.fatal != nil {
		return nil, []diag.Diagnostic{*c.fatal}
	}
	return v, c.problems
}

type converter struct {
	lim      Limits
	nodes    int
	aliased  int // of nodes, those reached through an alias or a merge key
	fatal    *diag.Diagnostic
	problems []diag.Diagnostic
	active   map[*yaml.Node]bool // alias targets being expanded
	dropped  map[string]bool     // paths of values left out, already reported
}

func (c *converter) fail(n *yaml.Node, msg string) {
	if c.fatal == nil {
		d := problem(n.Line, n.Column, diag.YAMLLimits, "", msg)
		c.fatal = &d
	}
}

// count counts a node toward the budget: one reached through an alias or a merge key (inside an
// expansion) is aliased too.
func (c *converter) count() {
	c.nodes++
	if len(c.active) > 0 {
		c.aliased++
	}
}

// tooMany says why the document is over the node budget: aliases that expand it, or nodes
// written out one by one (a large file without an alias is no alias bomb).
func (c *converter) tooMany() string {
	if c.aliased == 0 {
		return fmt.Sprintf("the document has more than %d nodes (keys, values and list items); split it into smaller files", c.lim.MaxNodes)
	}
	return fmt.Sprintf("too many aliases: the document expands to more than %d nodes, %d of them through aliases and merge keys", c.lim.MaxNodes, c.aliased)
}

func (c *converter) problem(n *yaml.Node, kind diag.RuleID, path, msg string) {
	c.problems = append(c.problems, problem(n.Line, n.Column, kind, path, msg))
}

func (c *converter) convert(n *yaml.Node, depth int, path string) any {
	if c.fatal != nil {
		return nil
	}
	if c.count(); c.lim.MaxNodes > 0 && c.nodes > c.lim.MaxNodes {
		c.fail(n, c.tooMany())
		return nil
	}
	switch n.Kind {
	case yaml.AliasNode:
		t := n.Alias
		if t == nil {
			c.fail(n, "an alias without its anchor")
			return nil
		}
		if c.active[t] {
			c.fail(n, fmt.Sprintf("alias *%s refers to a node that contains it", n.Value))
			return nil
		}
		c.active[t] = true
		v := c.convert(t, depth, path)
		delete(c.active, t)
		return v
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil
		}
		return c.convert(n.Content[0], depth, path)
	case yaml.SequenceNode:
		if c.tooDeep(n, depth) {
			return nil
		}
		out := make([]any, 0, len(n.Content))
		for i, item := range n.Content {
			out = append(out, c.convert(item, depth+1, path+"/"+strconv.Itoa(i)))
			if c.fatal != nil {
				return nil
			}
		}
		return out
	case yaml.MappingNode:
		if c.tooDeep(n, depth) {
			return nil
		}
		return c.mapping(n, depth, path)
	case yaml.ScalarNode:
		return c.scalar(n, path)
	}
	c.fail(n, "an unknown kind of YAML node")
	return nil
}

func (c *converter) tooDeep(n *yaml.Node, depth int) bool {
	if c.lim.MaxDepth > 0 && depth >= c.lim.MaxDepth {
		c.fail(n, fmt.Sprintf("nesting deeper than %d levels", c.lim.MaxDepth))
		return true
	}
	return false
}

func (c *converter) mapping(n *yaml.Node, depth int, path string) map[string]any {
	out := make(map[string]any, len(n.Content)/2)
	seen := make(map[string]*yaml.Node, len(n.Content)/2)
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if isMergeKey(k) {
			merges = append(merges, v)
			continue
		}
		key, ok := c.key(k, depth, path)
		if !ok {
			continue
		}
		if first, dup := seen[key]; dup {
			c.problem(k, diag.YAMLSyntax, path+"/"+escapePointer(key), fmt.Sprintf("duplicate key `%s` (first on line %d)", textclip.Clip(key), first.Line))
			continue
		}
		seen[key] = k
		out[key] = c.convert(v, depth+1, path+"/"+escapePointer(key))
		if c.fatal != nil {
			return nil
		}
	}
	// Merge keys: explicit keys win, then earlier sources win.
	for _, m := range merges {
		for _, src := range mergeSources(m) {
			c.count()
			target := resolveAlias(src)
			if target == nil || target.Kind != yaml.MappingNode {
				c.problem(src, diag.InvalidValue, path, "a merge key (<<) takes a mapping or a list of mappings")
				continue
			}
			if c.active[target] {
				c.fail(src, "a merge key (<<) refers to a mapping that contains it")
				return nil
			}
			c.active[target] = true
			merged := c.convert(target, depth+1, path)
			delete(c.active, target)
			if c.fatal != nil {
				return nil
			}
			if mm, ok := merged.(map[string]any); ok {
				for k, v := range mm {
					if _, exists := out[k]; !exists {
						out[k] = v
					}
				}
			}
		}
	}
	return out
}

func (c *converter) key(k *yaml.Node, depth int, path string) (string, bool) {
	kn := resolveAlias(k)
	if kn == nil || kn.Kind != yaml.ScalarNode {
		c.problem(k, diag.InvalidValue, path, "a mapping key must be a string, not a mapping or a list")
		return "", false
	}
	if tag := kn.ShortTag(); tag != "!!str" {
		c.problem(k, diag.InvalidValue, path, fmt.Sprintf("a mapping key must be a string, not %s; quote it: \"%s\"", yamlTypeName(tag), textclip.Clip(kn.Value)))
		return "", false
	}
	return kn.Value, true
}

func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge"
}

func mergeSources(v *yaml.Node) []*yaml.Node {
	if t := resolveAlias(v); t != nil && t.Kind == yaml.SequenceNode {
		return t.Content
	}
	return []*yaml.Node{v}
}

// resolveAlias follows an alias to its anchored node.
func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 8; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

func (c *converter) scalar(n *yaml.Node, path string) any {
	switch n.ShortTag() {
	case "!!null":
		return nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return n.Value
		}
		return b
	case "!!int":
		var x any
		if err := n.Decode(&x); err != nil {
			return n.Value
		}
		switch x := x.(type) {
		case int:
			return json.Number(strconv.Itoa(x))
		case int64:
			return json.Number(strconv.FormatInt(x, 10))
		case uint64:
			return json.Number(strconv.FormatUint(x, 10))
		case float64:
			return c.float(n, x, path)
		}
		return n.Value
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return n.Value
		}
		return c.float(n, f, path)
	case "!!merge":
		return n.Value
	}
	// !!str, !!binary, !!timestamp and custom tags: the text as written.
	return n.Value
}

func (c *converter) float(n *yaml.Node, f float64, path string) any {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		c.problem(n, diag.InvalidValue, path, fmt.Sprintf("%s must be a finite number, not %s", describePath(path), textclip.Clip(n.Value)))
		if c.dropped == nil {
			c.dropped = map[string]bool{}
		}
		c.dropped[path] = true
		return nil
	}
	return f
}

func yamlTypeName(tag string) string {
	switch tag {
	case "!!int":
		return "an integer"
	case "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	case "!!null":
		return "null"
	case "!!timestamp":
		return "a timestamp"
	}
	return "a " + tag
}

func escapePointer(s string) string {
	if !bytes.ContainsAny([]byte(s), "~/") {
		return s
	}
	b := bytes.ReplaceAll([]byte(s), []byte("~"), []byte("~0"))
	return string(bytes.ReplaceAll(b, []byte("/"), []byte("~1")))
}

// Pointer builds a JSON pointer from path tokens.
func Pointer(tokens ...string) string {
	var b []byte
	for _, t := range tokens {
		b = append(b, '/')
		b = append(b, escapePointer(t)...)
	}
	return string(b)
}

// Locate finds the value at path (keys and decimal indexes) in the YAML
// tree under root, following aliases and merge keys the way ToValue does.
// It returns the key node of the last mapping step (nil for the document
// or a sequence item) and the value node; value is nil when the path does
// not exist. A value written as an alias is returned as the alias node, so
// that its position is where it is used.
func Locate(root *yaml.Node, path ...string) (key, value *yaml.Node) {
	return (*locator)(nil).locate(root, path)
}

// locator is Locate with an index of the keys of large mappings, for
// many lookups in one document.
type locator struct {
	index map[*yaml.Node]map[string]int
}

func (lc *locator) locate(root *yaml.Node, path []string) (key, value *yaml.Node) {
	n := root
	if n != nil && n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil, nil
		}
		n = n.Content[0]
	}
	for _, tok := range path {
		t := resolveAlias(n)
		if t == nil {
			return nil, nil
		}
		switch t.Kind {
		case yaml.MappingNode:
			key, n = lc.lookupKey(t, tok, 0)
		case yaml.SequenceNode:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(t.Content) {
				return nil, nil
			}
			key, n = nil, t.Content[i]
		default:
			return nil, nil
		}
		if n == nil {
			return nil, nil
		}
	}
	return key, n
}

func isStringKey(k *yaml.Node) bool {
	return k != nil && k.Kind == yaml.ScalarNode && !isMergeKey(k) && k.ShortTag() == "!!str"
}

func (lc *locator) lookupKey(m *yaml.Node, name string, depth int) (key, value *yaml.Node) {
	if depth > 16 {
		return nil, nil
	}
	if lc != nil && len(m.Content) > 32 {
		idx, ok := lc.index[m]
		if !ok {
			idx = make(map[string]int, len(m.Content)/2)
			for i := 0; i+1 < len(m.Content); i += 2 {
				if k := resolveAlias(m.Content[i]); isStringKey(k) {
					if _, dup := idx[k.Value]; !dup {
						idx[k.Value] = i
					}
				}
			}
			if lc.index == nil {
				lc.index = map[*yaml.Node]map[string]int{}
			}
			lc.index[m] = idx
		}
		if i, ok := idx[name]; ok {
			return m.Content[i], m.Content[i+1]
		}
	} else {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if k := resolveAlias(m.Content[i]); isStringKey(k) && k.Value == name {
				return m.Content[i], m.Content[i+1]
			}
		}
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if !isMergeKey(m.Content[i]) {
			continue
		}
		for _, src := range mergeSources(m.Content[i+1]) {
			if t := resolveAlias(src); t != nil && t.Kind == yaml.MappingNode {
				if k, v := lc.lookupKey(t, name, depth+1); v != nil {
					return k, v
				}
			}
		}
	}
	return nil, nil
}
