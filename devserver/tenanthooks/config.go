package tenanthooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/harnesskit/hook"
	"github.com/orchestrator-zero/oz0/internal/lazyre"
	"github.com/orchestrator-zero/oz0/internal/textclip"
	"github.com/orchestrator-zero/oz0/schemas"
)

// SchemaName is the JSON Schema of hooks.yaml, in package schemas.
const SchemaName = "hooks.schema.json"

// FileName is the name of the hooks file in the dev state directory.
const FileName = "hooks.yaml"

// MaxFileBytes bounds a hooks file.
const MaxFileBytes = 1 << 20

// Plugin timeouts.
const (
	DefaultTimeout = 5 * time.Second        // a plugin's answer to one call, unless timeout says otherwise
	MaxTimeout     = 5 * time.Minute        // the most timeout may say
	StartTimeout   = 10 * time.Second       // starting a plugin, its handshake included
	stopGrace      = 2 * time.Second        // a plugin asked to stop has this long before SIGKILL
	exitWait       = 250 * time.Millisecond // after a broken call, how long to wait for the exit status
)

// Option configures a Set.
type Option func(*options)

type options struct {
	log          func(hook, line string)
	startTimeout time.Duration
}

// WithLog has each line a plugin writes to stderr (its log) go to log, with the hook's name. By
// default the lines are dropped (the last ones are still quoted when a plugin fails). log is
// called from several goroutines.
func WithLog(log func(hook, line string)) Option { return func(o *options) { o.log = log } }

// Load reads and parses the hooks file at path. A file that does not exist, or is empty, is no
// hooks (a Set that allows everything). A file with problems gives a *diag.ReportError that lists them
// all, each at its line and column; a file that cannot be read gives another error. Plugin paths
// are relative to the file's directory.
func Load(path string, opts ...Option) (*Set, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return newSet(path, filepath.Dir(path), nil, opts), nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the hooks file %s: %w", path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, fmt.Errorf("cannot read the hooks file %s: it is a directory", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read the hooks file %s: %w", path, err)
	}
	return Parse(path, data, opts...)
}

// Parse parses a hooks file; name is its path (errors name it; plugin paths are relative to its
// directory). A file with problems gives a *diag.ReportError. It never panics and starts nothing:
// plugins start on the first call they see.
func Parse(name string, data []byte, opts ...Option) (*Set, error) {
	if name == "" {
		name = FileName
	}
	fail := func(ds []diag.Diagnostic) (*Set, error) {
		for i := range ds {
			ds[i].File = name
		}
		return nil, diag.Errorf(ds, "the hooks file %s", name)
	}
	if len(data) > MaxFileBytes {
		return fail([]diag.Diagnostic{{Line: 1, Col: 1, Severity: diag.Error, Rule: diag.YAMLLimits,
			Message: fmt.Sprintf("the hooks file is larger than %d MiB", MaxFileBytes>>20)}})
	}
	root, problems := schemas.ParseYAML(data)
	if len(problems) > 0 || root == nil {
		if len(problems) == 0 {
			problems = []diag.Diagnostic{{Line: 1, Col: 1, Severity: diag.Error, Rule: diag.YAMLSyntax, Message: "the hooks file is not YAML"}}
		}
		return fail(problems)
	}
	dir, err := filepath.Abs(filepath.Dir(name))
	if err != nil {
		dir = filepath.Dir(name)
	}
	if isEmptyDocument(root) {
		return newSet(name, dir, nil, opts), nil
	}
	v, problems := schemas.DecodeYAML(SchemaName, root)
	p := &parser{root: root, bad: map[string]bool{}, dir: dir}
	for i, pr := range problems {
		p.bad[pr.Pointer] = true
		problems[i] = p.relocate(pr)
	}
	var defs []*hookDef
	if doc, ok := v.(map[string]any); ok {
		defs = p.hooks(doc)
	} else if v != nil && len(problems) == 0 {
		problems = append(problems, diag.Diagnostic{Line: 1, Col: 1, Severity: diag.Error, Rule: diag.InvalidValue, Message: "the hooks file must be a mapping with a `hooks` list"})
	}
	problems = append(problems, p.problems...)
	if len(problems) > 0 {
		return fail(problems)
	}
	return newSet(name, dir, defs, opts), nil
}

// isEmptyDocument reports a document with nothing in it (comments at most) or just null.
func isEmptyDocument(root *yaml.Node) bool {
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 {
		return root.Kind == yaml.DocumentNode
	}
	n := root.Content[0]
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// hookDef is one hook of the file.
type hookDef struct {
	name   string
	line   int
	globs  []*regexp.Regexp
	when   *conditions
	unless *conditions
	// A rule:
	decide  Decision
	reason  string
	merge   map[string]any // decide: change
	replace map[string]any // decide: change
	// A plugin hook:
	plugin *pluginHook
}

type parser struct {
	root     *yaml.Node
	bad      map[string]bool // JSON pointers the schema already reported
	dir      string
	problems []diag.Diagnostic
}

func (p *parser) at(path []string) (line, col int) {
	for i := len(path); i >= 0; i-- {
		if _, n := schemas.Locate(p.root, path[:i]...); n != nil && n.Line > 0 {
			return n.Line, n.Column
		}
	}
	return 1, 1
}

// keyAt is the position of the key of path's last step (or of its value, or an ancestor).
func (p *parser) keyAt(path []string) (line, col int, ok bool) {
	k, _ := schemas.Locate(p.root, path...)
	if k != nil && k.Line > 0 {
		return k.Line, k.Column, true
	}
	return 0, 0, false
}

func (p *parser) problem(kind diag.RuleID, path []string, msg string) {
	line, col := p.at(path)
	p.problems = append(p.problems, diag.Diagnostic{Line: line, Col: col, Severity: diag.Error, Rule: kind, Pointer: schemas.Pointer(path...), Message: msg})
}

// keyProblem reports msg at the key of path's last step (a key that is wrong).
func (p *parser) keyProblem(kind diag.RuleID, path []string, msg string) {
	line, col, ok := p.keyAt(path)
	if !ok {
		line, col = p.at(path)
	}
	p.problems = append(p.problems, diag.Diagnostic{Line: line, Col: col, Severity: diag.Error, Rule: kind, Pointer: schemas.Pointer(path...), Message: msg})
}

func (p *parser) reported(path []string) bool { return p.bad[schemas.Pointer(path...)] }

var hookPointer = lazyre.New(`^/hooks/(\d+)$`)

// relocate moves a problem of the schema's cross-key rules (reported on the hook's mapping) to the
// key it is about, and words the missing arguments of a change.
func (p *parser) relocate(pr diag.Diagnostic) diag.Diagnostic {
	m := hookPointer().FindStringSubmatch(pr.Pointer)
	if m == nil {
		return pr
	}
	hook := []string{"hooks", m[1]}
	move := func(keys ...string) {
		for _, k := range keys {
			if line, col, ok := p.keyAt(append(slices.Clone(hook), k)); ok {
				pr.Line, pr.Col = line, col
				return
			}
		}
	}
	switch {
	case pr.Rule == diag.MissingKey && strings.Contains(pr.Message, "`arguments`"):
		move("decide")
		pr.Message = "`decide: change` needs `arguments`: {merge: {...}} or {replace: {...}}"
	case strings.Contains(pr.Message, "not both"):
		move("plugin")
	case strings.Contains(pr.Message, "is a rule:"):
		move("args", "env", "config", "timeout")
	case strings.Contains(pr.Message, "is a plugin hook:"):
		move("reason", "arguments")
	case strings.Contains(pr.Message, "only with decide: change"):
		move("arguments")
	}
	return pr
}

func (p *parser) hooks(doc map[string]any) []*hookDef {
	list, _ := doc["hooks"].([]any)
	names := map[string]int{}
	var defs []*hookDef
	for i, item := range list {
		hm, ok := item.(map[string]any)
		if !ok {
			continue
		}
		path := []string{"hooks", strconv.Itoa(i)}
		h := &hookDef{}
		h.line, _ = p.at(path)
		if name, ok := hm["name"].(string); ok {
			h.name = name
			if first, dup := names[name]; dup {
				p.problem(diag.DuplicateName, append(slices.Clone(path), "name"),
					fmt.Sprintf("hook name `%s` is used twice (first on line %d); names must be unique", textclip.Clip(name), first))
			} else {
				line, _ := p.at(append(slices.Clone(path), "name"))
				names[name] = line
			}
		}
		h.globs = p.match(append(slices.Clone(path), "match"), hm["match"])
		if c, ok := hm["when"].(map[string]any); ok {
			h.when = p.conditions(append(slices.Clone(path), "when"), c)
		}
		if c, ok := hm["unless"].(map[string]any); ok {
			h.unless = p.conditions(append(slices.Clone(path), "unless"), c)
		}
		if d, ok := hm["decide"].(string); ok {
			h.decide = Decision(d)
			h.reason, _ = hm["reason"].(string)
			if a, ok := hm["arguments"].(map[string]any); ok {
				h.merge, _ = jsonValue(a["merge"]).(map[string]any)
				h.replace, _ = jsonValue(a["replace"]).(map[string]any)
			}
		}
		if _, ok := hm["plugin"].(string); ok {
			h.plugin = p.plugin(path, h.name, hm)
		}
		defs = append(defs, h)
	}
	return defs
}

func (p *parser) match(path []string, v any) []*regexp.Regexp {
	var globs []string
	var paths [][]string
	switch v := v.(type) {
	case string:
		globs, paths = []string{v}, [][]string{path}
	case []any:
		for i, g := range v {
			if s, ok := g.(string); ok {
				globs = append(globs, s)
				paths = append(paths, append(slices.Clone(path), strconv.Itoa(i)))
			}
		}
	}
	var out []*regexp.Regexp
	for i, g := range globs {
		if p.reported(paths[i]) {
			continue
		}
		re, err := compileGlob(g)
		if err != nil {
			p.problem(diag.BadGlob, paths[i], fmt.Sprintf("`%s` is not a valid glob: %s", textclip.Clip(g), err))
			continue
		}
		if neverQualified(g) {
			p.problem(diag.BadGlob, paths[i], fmt.Sprintf("`%s` never matches: hooks see calls as <harness>.<tool>; did you mean `*.%s`?", textclip.Clip(g), textclip.Clip(g)))
			continue
		}
		out = append(out, re)
	}
	return out
}

// conditions are a hook's when or unless: all must hold.
type conditions struct {
	agent, job *regexp.Regexp
	args       []argCondition // by key
}

type argCondition struct {
	key      string
	re       *regexp.Regexp // a regular expression on the value's text; or
	min, max *float64       // bounds on the value as a number (either may be nil)
}

func (p *parser) conditions(path []string, m map[string]any) *conditions {
	c := &conditions{}
	c.agent = p.regex(append(slices.Clone(path), "agent"), m["agent"])
	c.job = p.regex(append(slices.Clone(path), "job"), m["job"])
	if args, ok := m["arguments"].(map[string]any); ok {
		keys := slices.Sorted(maps.Keys(args))
		for _, k := range keys {
			at := append(slices.Clone(path), "arguments", k)
			if k == "" || strings.HasPrefix(k, ".") || strings.HasSuffix(k, ".") || strings.Contains(k, "..") {
				p.keyProblem(diag.InvalidValue, at, fmt.Sprintf("`%s` is not an argument key or a dotted path such as customer.tier", k))
				continue
			}
			if b, ok := args[k].(map[string]any); ok {
				if cond, ok := p.bounds(at, b); ok {
					cond.key = k
					c.args = append(c.args, cond)
				}
				continue
			}
			if re := p.regex(at, args[k]); re != nil {
				c.args = append(c.args, argCondition{key: k, re: re})
			}
		}
	}
	return c
}

// bounds reads a numeric condition, {min: N, max: N} (the schema checked its shape).
func (p *parser) bounds(path []string, m map[string]any) (argCondition, bool) {
	var c argCondition
	if p.reported(path) {
		return c, false
	}
	for key, dst := range map[string]**float64{"min": &c.min, "max": &c.max} {
		v, ok := m[key]
		if !ok {
			continue
		}
		f, ok := number(v)
		if !ok {
			return c, false
		}
		*dst = &f
	}
	if c.min != nil && c.max != nil && *c.min > *c.max {
		p.problem(diag.InvalidValue, path, fmt.Sprintf("`min` (%v) is above `max` (%v): no number is between them", *c.min, *c.max))
		return c, false
	}
	return c, c.min != nil || c.max != nil
}

func (p *parser) regex(path []string, v any) *regexp.Regexp {
	s, ok := v.(string)
	if !ok || p.reported(path) {
		return nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "error parsing regexp: ")
		p.problem(diag.BadRegex, path, fmt.Sprintf("`%s` is not a valid regular expression (Go RE2 syntax): %s", textclip.Clip(s), msg))
		return nil
	}
	return re
}

// reservedEnv are environment names a plugin's env may not set: the handshake's.
func reservedEnv(name string) bool {
	return name == hook.MagicCookieKey || strings.HasPrefix(name, "PLUGIN_") || name == "OZ0_HOOK"
}

var envName = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (p *parser) plugin(path []string, name string, m map[string]any) *pluginHook {
	ph := &pluginHook{name: name, timeout: DefaultTimeout}
	at := append(slices.Clone(path), "plugin")
	exe, _ := m["plugin"].(string)
	if !p.reported(at) {
		if !filepath.IsAbs(exe) {
			exe = filepath.Join(p.dir, exe)
		}
		ph.path = exe
		st, err := os.Stat(exe)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			p.problem(diag.BadPlugin, at, fmt.Sprintf("plugin `%s` does not exist (looked for %s; a relative path is relative to the hooks file)", textclip.Clip(m["plugin"].(string)), exe))
		case err != nil:
			p.problem(diag.BadPlugin, at, fmt.Sprintf("plugin `%s`: %v", textclip.Clip(m["plugin"].(string)), err))
		case st.IsDir():
			p.problem(diag.BadPlugin, at, fmt.Sprintf("plugin `%s` is a directory, not an executable", textclip.Clip(m["plugin"].(string))))
		case st.Mode()&0o111 == 0:
			p.problem(diag.BadPlugin, at, fmt.Sprintf("plugin `%s` is not executable; chmod +x it", textclip.Clip(m["plugin"].(string))))
		}
	}
	if args, ok := m["args"].([]any); ok {
		for _, a := range args {
			if s, ok := a.(string); ok {
				ph.args = append(ph.args, s)
			}
		}
	}
	if env, ok := m["env"].(map[string]any); ok {
		keys := slices.Sorted(maps.Keys(env))
		for _, k := range keys {
			kat := append(slices.Clone(path), "env", k)
			switch {
			case !envName().MatchString(k):
				p.keyProblem(diag.BadPlugin, kat, fmt.Sprintf("`%s` is not an environment variable name (letters, digits and _, not starting with a digit)", textclip.Clip(k)))
			case reservedEnv(k):
				p.keyProblem(diag.BadPlugin, kat, fmt.Sprintf("`%s` is set by oz0 for the plugin's handshake; choose another name", k))
			default:
				if s, ok := env[k].(string); ok {
					ph.env = append(ph.env, k+"="+s)
				}
			}
		}
	}
	if c, ok := m["config"]; ok {
		raw, err := json.Marshal(c)
		if err != nil {
			p.problem(diag.InvalidValue, append(slices.Clone(path), "config"), fmt.Sprintf("`config` cannot be sent as JSON: %v", err))
		} else {
			ph.config = raw
		}
	}
	tat := append(slices.Clone(path), "timeout")
	if s, ok := m["timeout"].(string); ok && !p.reported(tat) {
		d, err := time.ParseDuration(s)
		switch {
		case err != nil:
			p.problem(diag.BadDuration, tat, fmt.Sprintf("`timeout` must be a duration such as 500ms, 2s or 1m, not `%s`", textclip.Clip(s)))
		case d < time.Millisecond:
			p.problem(diag.BadDuration, tat, fmt.Sprintf("`timeout` must be at least 1ms, not %s", s))
		case d > MaxTimeout:
			p.problem(diag.BadDuration, tat, fmt.Sprintf("`timeout` must be at most %s, not %s", MaxTimeout, s))
		default:
			ph.timeout = d
		}
	}
	return ph
}

// jsonValue turns a value decoded from YAML (json.Number, float64, maps, lists) into the values
// encoding/json gives with UseNumber, so that it merges with a call's arguments.
func jsonValue(v any) any {
	if v == nil {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	out, err := decodeJSON(raw)
	if err != nil {
		return nil
	}
	return out
}

// decodeJSON decodes one JSON value, numbers as json.Number.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}
