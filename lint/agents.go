package lint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/gateway"
	"github.com/orchestrator-zero/oz0/internal/lazyre"
	"github.com/orchestrator-zero/oz0/internal/textclip"
	"github.com/orchestrator-zero/oz0/plugin"
	"github.com/orchestrator-zero/oz0/schemas"
)

func (l *linter) lintAgentDir(d dirEntry) {
	entries, ok := l.readListedDir(d, "agents", diag.AgentsDirMissing, false)
	if !ok {
		return
	}
	for _, e := range entries {
		name := e.Name()
		file := path.Join(d.path, name)
		switch {
		case strings.HasPrefix(name, "."):
		case d.path == "." && name == ManifestFile:
		case strings.HasSuffix(name, ".yaml"):
			l.lintAgent(file)
			if l.fatal != nil {
				return
			}
		case strings.HasSuffix(name, ".yml") && !e.IsDir():
			l.add(file, 0, 0, diag.IgnoredFile, "%s is ignored: agent definitions end in .yaml", file)
		}
	}
}

func (l *linter) lintAgent(file string) {
	data, st := l.read(file)
	if st != fileOK {
		return
	}
	root, v, valid := l.loadYAML(file, schemas.Agent, 0, data)
	m := asMap(v)
	if m == nil {
		return
	}
	la := &loadedAgent{file: file}
	if valid {
		l.decode(file, m, &la.typed)
	}
	l.loaded = append(l.loaded, la)

	// name: unique, and the file is named after it.
	if name, ok := asString(m["name"]); ok && name != "" {
		_, n := schemas.Locate(root, "name")
		if other, dup := l.agents[name]; dup {
			l.addAt(file, n, 0, diag.DuplicateAgent, "agent `%s` is also defined in %s", name, other)
		} else {
			l.agents[name] = file
		}
		if base := strings.TrimSuffix(path.Base(file), ".yaml"); base != name {
			l.addAt(file, n, 0, diag.AgentFilename, "agent `%s` is defined in %s; name the file %s.yaml", name, path.Base(file), name)
		}
	}

	// runtime: harness:NAME of the manifest.
	var h *harness
	if rt, ok := asString(m["runtime"]); ok && l.harnessesKnown {
		if hn, ok := strings.CutPrefix(rt, "harness:"); ok && agentHarnessRef().MatchString(hn) {
			h = l.harnesses[hn]
			if h == nil {
				_, n := schemas.Locate(root, "runtime")
				msg := fmt.Sprintf("runtime names harness `%s`, which %s does not declare", textclip.Clip(hn), ManifestFile)
				if s, ok := schemas.Closest(hn, l.harnessNames); ok {
					msg += fmt.Sprintf("; did you mean `%s`?", s)
				} else if len(l.harnessNames) > 0 {
					msg += "; its harnesses are " + strings.Join(l.harnessNames, ", ")
				}
				l.addAt(file, n, 0, diag.UnknownHarness, "%s", composed(msg))
			}
		}
	}

	l.checkModel(file, root, asMap(m["model"]))
	if h != nil {
		own, _ := stringItems(asMap(m["harness"])["tools"])
		h.agentTools = append(h.agentTools, own...)
	}
	la.instructions = l.checkInstructions(file, root, m)
	la.input = l.checkIO(file, root, m, "input")
	la.output = l.checkIO(file, root, m, "output")
	l.checkLimits(file, root, asMap(m["limits"]))
	l.checkApprovals(file, root, asMap(m["harness"]), h)
	l.checkAgentTools(file, root, asMap(m["harness"]), h)
}

var agentHarnessRef = lazyre.New(`^[a-z][a-z0-9-]*$`)

// checkModel reports a model.use that is a near miss of a name it may give (the alias default, the
// records a tenant may have): a typo that no job of the agent could start with. A name near none
// is left alone, as a tenant's records may have other names.
func (l *linter) checkModel(file string, root *yaml.Node, mm map[string]any) {
	use, ok := asString(mm["use"])
	known := gateway.KnownUses()
	if !ok || use == "" || slices.Contains(known, use) {
		return
	}
	near, ok := schemas.Closest(use, known)
	if !ok {
		return
	}
	_, n := schemas.Locate(root, "model", "use")
	l.addAt(file, n, 0, diag.UnknownModel, "model.use is `%s`, which is neither the alias %s nor a model record (%s); did you mean `%s`?",
		textclip.Clip(use), gateway.DefaultUse, strings.Join(known[1:], ", "), near)
}

// checkInstructions checks the agent's prompt file and returns its text.
func (l *linter) checkInstructions(file string, root *yaml.Node, m map[string]any) string {
	p, ok := asString(m["instructions"])
	if !ok || p == "" {
		return "" // the schema reports it
	}
	_, n := schemas.Locate(root, "instructions")
	rel, ok := relPath(p)
	if !ok {
		l.addAt(file, n, 0, diag.PathEscape, "`instructions` must be a path inside the plugin, not `%s`", p)
		return ""
	}
	data, st := l.readAt(file, n, "instructions", rel, diag.InstructionsMissing)
	switch st {
	case fileMissing:
		l.addAt(file, n, 0, diag.InstructionsMissing, "instructions file %s does not exist", rel)
		return ""
	case fileBad:
		return ""
	}
	if l.notText(rel, data) {
		return ""
	}
	if len(bytes.TrimFunc(data, unicode.IsSpace)) == 0 {
		l.addAt(file, n, 0, diag.InstructionsMissing, "instructions file %s is empty", rel)
		return ""
	}
	return string(data)
}

// readAt reads the file rel that a key of file names at node n; what keeps it from being read is
// reported there, where the author named it, a target that is not a file under notFile.
func (l *linter) readAt(file string, n *yaml.Node, key, rel string, notFile diag.RuleID) ([]byte, fileState) {
	st, err := fs.Stat(l.fsys, rel)
	if err != nil {
		return nil, l.unreadable(rel, err, func(rule diag.RuleID, msg string) {
			l.addAt(file, n, 0, rule, "`%s`: %s", key, composed(msg))
		})
	}
	if !st.Mode().IsRegular() {
		l.addAt(file, n, 0, notFile, "`%s`: %s is not a file", key, rel)
		return nil, fileBad
	}
	return l.read(rel)
}

func (l *linter) checkLimits(file string, root *yaml.Node, lim map[string]any) {
	if lim == nil {
		return
	}
	if s, ok := asString(lim["timeout"]); ok {
		_, n := schemas.Locate(root, "limits", "timeout")
		d, err := time.ParseDuration(s)
		switch {
		case err != nil:
			l.addAt(file, n, 0, diag.TimeoutDuration, "`timeout` must be a duration such as 10m or 90s, not `%s`", s)
		case d <= 0:
			l.addAt(file, n, 0, diag.TimeoutDuration, "`timeout` must be greater than zero, not `%s`", s)
		}
	}
	var steps float64
	switch x := lim["max_steps"].(type) {
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return
		}
		steps = f
	case float64:
		steps = x
	default:
		return // absent, or not a number: the schema reports it
	}
	if steps < 1 && steps == math.Trunc(steps) {
		_, n := schemas.Locate(root, "limits", "max_steps")
		l.addAt(file, n, 0, diag.MaxSteps, "`max_steps` must be at least 1, not %s", strconv.FormatFloat(steps, 'f', -1, 64))
	}
}

// checkAgentTools warns of an agent's tool that its harness does not list: never called, so the
// agent quietly goes without it (a typo, most often).
func (l *linter) checkAgentTools(file string, root *yaml.Node, hm map[string]any, h *harness) {
	if hm == nil || h == nil || !h.hasTools {
		return
	}
	tools, idx := stringItems(hm["tools"])
	for j, t := range tools {
		if slices.Contains(h.tools, t) {
			continue
		}
		// Only a near miss: the harness's tools are the sessions' default, and an agent may
		// name tools of its own code besides (the guide's LangGraph example adds one).
		near, ok := schemas.Closest(t, h.tools)
		if !ok {
			continue
		}
		_, n := schemas.Locate(root, "harness", "tools", strconv.Itoa(idx[j]))
		l.addAt(file, n, 0, diag.AgentToolUnknown, "harness.tools lists `%s`, which harness `%s` does not (its tools: %s); did you mean `%s`?",
			t, h.name, strings.Join(h.tools, ", "), near)
	}
}

func (l *linter) checkApprovals(file string, root *yaml.Node, hm map[string]any, h *harness) {
	if hm == nil {
		return
	}
	ra, idx := stringItems(hm["requires_approval"])
	if len(ra) == 0 {
		return
	}
	var tools []string
	var where string
	if _, ok := hm["tools"]; ok {
		tools, _ = stringItems(hm["tools"])
		where = "add it to harness.tools"
	} else if h != nil {
		tools = h.tools
		where = fmt.Sprintf("add it to harness.tools, or to the tools of harness `%s` in %s", h.name, ManifestFile)
	} else {
		return // the harness is unknown: unknown-harness says so
	}
	allowed := make(map[string]bool, len(tools))
	for _, t := range tools {
		allowed[t] = true
	}
	for j, t := range ra {
		if allowed[t] {
			continue
		}
		_, n := schemas.Locate(root, "harness", "requires_approval", strconv.Itoa(idx[j]))
		l.addAt(file, n, 0, diag.ApprovalUnlistedTool, "`%s` requires approval but the agent may not call it; %s", t, composed(where))
	}
}

// checkIO checks input/output (text, json, or {schema: ...}: a file of the plugin or an inline
// schema, compiled as a JSON Schema) and returns it as the node takes it.
func (l *linter) checkIO(file string, root *yaml.Node, m map[string]any, key string) plugin.IO {
	io := plugin.IO{Kind: "text"}
	switch v := m[key].(type) {
	case string:
		io.Kind = v
		return io
	case map[string]any:
		io.Kind = "json"
		sv, ok := v["schema"]
		if !ok {
			return io
		}
		_, n := schemas.Locate(root, key, "schema")
		switch s := sv.(type) {
		case string:
			rel, ok := relPath(s)
			if !ok {
				l.addAt(file, n, 0, diag.PathEscape, "`%s.schema` must be a path inside the plugin, not `%s`", key, s)
				return io
			}
			data, st := l.readAt(file, n, key+".schema", rel, diag.NotAFile)
			switch st {
			case fileMissing:
				l.addAt(file, n, 0, diag.InputSchema, "%s schema %s does not exist", key, rel)
				return io
			case fileBad:
				return io
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
			if err != nil {
				l.addAt(file, n, 0, diag.InputSchema, "%s schema %s is not JSON: %s", key, rel, composed(oneLine(err.Error())))
				return io
			}
			sch, err := l.compileSchema(rel, doc)
			if deep := (*tooDeepError)(nil); errors.As(err, &deep) {
				if deep.file == rel {
					l.addAt(file, n, 0, diag.SchemaTooDeep, "%s schema %s", key, deep)
				} else {
					l.addAt(file, n, 0, diag.SchemaTooDeep, "%s schema %s refers to %s", key, rel, deep.which())
				}
				return io
			}
			if err != nil {
				for _, msg := range schemaMessages(err, nil) {
					l.addAt(file, n, 0, diag.InputSchema, "%s schema %s is not a valid JSON Schema: %s", key, rel, composed(msg.Message))
				}
				return io
			}
			io.Schema, io.SchemaFile, io.Compiled = data, rel, sch
		case map[string]any:
			sch, err := l.compileSchema(fmt.Sprintf(".inline-%s-%s.json", strings.TrimSuffix(path.Base(file), ".yaml"), key), s)
			if deep := (*tooDeepError)(nil); errors.As(err, &deep) {
				l.addAt(file, n, 0, diag.SchemaTooDeep, "the inline %s schema refers to %s", key, deep.which())
				return io
			}
			if err != nil {
				for _, p := range schemaMessages(err, n) {
					l.add(file, p.Line, p.Col, diag.InputSchema, "the inline %s schema is not a valid JSON Schema: %s", key, composed(p.Message))
				}
				return io
			}
			io.Schema, io.Compiled = mustJSON(s), sch
		}
	}
	return io
}

// schemaMessages explains a schema compiler error; a schema that breaks
// the metaschema gives one problem per cause, placed under root (the
// inline schema's node) when there is one.
func schemaMessages(err error, root *yaml.Node) []diag.Diagnostic {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		ps := schemas.Explain(sve.Err, root)
		if root == nil {
			for i := range ps {
				if ps[i].Pointer != "" {
					ps[i].Message = "at " + ps[i].Pointer + ": " + ps[i].Message
				}
			}
		}
		return ps
	}
	line, col := 1, 1
	if root != nil {
		line, col = root.Line, root.Column
	}
	return []diag.Diagnostic{{Line: line, Col: col, Message: oneLine(err.Error())}}
}

// pluginURL is the base under which the plugin's files are given to the
// JSON Schema compiler; nothing else is loaded.
const pluginURL = "file:///oz0-plugin/"

// compileSchema compiles an input or output schema with the plugin's files for its $refs; the
// node validates jobs with the compiled schema, so what lint compiles is what runs.
func (l *linter) compileSchema(rel string, doc any) (sch *jsonschema.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the schema compiler failed: %v", r)
		}
	}()
	if nestedDeeper(doc, schemas.DefaultLimits.MaxDepth) {
		return nil, &tooDeepError{rel}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(pluginLoader{l})
	url := pluginURL + rel
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	sch, err = c.Compile(url)
	var load *jsonschema.LoadURLError
	if errors.As(err, &load) {
		if deep := (*tooDeepError)(nil); errors.As(load.Err, &deep) {
			return nil, deep // the loader's error, said as the file's own
		}
	}
	return sch, err
}

// tooDeepError is a schema file (the agent's, or one it refers to) nested deeper than
// schemas.DefaultLimits.MaxDepth. The compiler's cost grows faster than a schema's depth (each
// subschema carries its whole path), so such a file is not compiled.
type tooDeepError struct{ file string }

func (e *tooDeepError) Error() string {
	return fmt.Sprintf("%s nests deeper than %d levels", e.file, schemas.DefaultLimits.MaxDepth)
}

// which is the error said of a file another refers to.
func (e *tooDeepError) which() string {
	return fmt.Sprintf("%s, which nests deeper than %d levels", e.file, schemas.DefaultLimits.MaxDepth)
}

// nestedDeeper reports whether a decoded JSON value holds objects and arrays more than limit
// levels within each other; it looks no deeper than that.
func nestedDeeper(v any, limit int) bool {
	type item struct {
		v     any
		depth int
	}
	stack := []item{{v, 1}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		var children []any
		switch x := it.v.(type) {
		case map[string]any:
			for _, c := range x {
				children = append(children, c)
			}
		case []any:
			children = x
		default:
			continue
		}
		if it.depth > limit {
			return true
		}
		for _, c := range children {
			stack = append(stack, item{c, it.depth + 1})
		}
	}
	return false
}

type pluginLoader struct{ l *linter }

func (p pluginLoader) Load(url string) (any, error) {
	rel, ok := strings.CutPrefix(url, pluginURL)
	if !ok {
		return nil, fmt.Errorf("the linter does not load %s: a $ref must point inside the plugin", url)
	}
	rel, ok = relPath(rel)
	if !ok {
		return nil, fmt.Errorf("$ref %s leaves the plugin", url)
	}
	st, err := fs.Stat(p.l.fsys, rel)
	if err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("$ref %s: %s does not exist in the plugin", url, rel)
	}
	if st.Size() > MaxFileSize {
		return nil, fmt.Errorf("$ref %s: %s is over 1 MiB", url, rel)
	}
	f, err := p.l.fsys.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(io.LimitReader(f, MaxFileSize))
	if err == nil && nestedDeeper(doc, schemas.DefaultLimits.MaxDepth) {
		return nil, &tooDeepError{rel}
	}
	return doc, err
}

func oneLine(s string) string { return textclip.Squash(s, 300) }

// readListedDir reads a directory the manifest lists under key (agents, skills). A missing one is
// a finding of rule, unless missingOK (it then holds nothing); one that is not a directory is a
// finding of rule too; an I/O error is fatal. ok is false when there is nothing to lint.
func (l *linter) readListedDir(d dirEntry, key string, rule diag.RuleID, missingOK bool) (entries []fs.DirEntry, ok bool) {
	st, err := fs.Stat(l.fsys, d.path)
	if err != nil {
		state := l.unreadable(d.path, err, func(rule diag.RuleID, msg string) {
			l.addAt(ManifestFile, d.node, 0, rule, "`%s` entry `%s`: %s", key, d.written, composed(msg))
		})
		if state == fileMissing && !missingOK {
			l.addAt(ManifestFile, d.node, 0, rule, "%s directory `%s` does not exist", key, d.written)
		}
		return nil, false
	}
	switch {
	case !st.IsDir():
		l.addAt(ManifestFile, d.node, 0, rule, "%s entry `%s` is not a directory", key, d.written)
		return nil, false
	}
	entries, err = fs.ReadDir(l.fsys, d.path)
	if err != nil {
		l.setFatal(err)
		return nil, false
	}
	return entries, true
}

// mustJSON renders a value made of a YAML document as JSON; such values always can be.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("lint: " + err.Error())
	}
	return b
}
