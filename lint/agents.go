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
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/orchestrator-zero/oz0/schemas"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

func (l *linter) lintAgentDir(d dirEntry) {
	entries, ok := l.readListedDir(d, "agents", "agents-dir-missing", false)
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
			l.add(file, 0, 0, "ignored-file", "%s is ignored: agent definitions end in .yaml", file)
		}
	}
}

func (l *linter) lintAgent(file string) {
	data, st := l.read(file)
	if st != fileOK {
		return
	}
	root, v := l.loadYAML(file, schemas.Agent, 0, data)
	m := asMap(v)
	if m == nil {
		return
	}

	// name: unique, and the file is named after it.
	if name, ok := asString(m["name"]); ok && name != "" {
		_, n := schemas.Locate(root, "name")
		if other, dup := l.agents[name]; dup {
			l.addAt(file, n, 0, "duplicate-agent", "agent `%s` is also defined in %s", name, other)
		} else {
			l.agents[name] = file
		}
		if base := strings.TrimSuffix(path.Base(file), ".yaml"); base != name {
			l.addAt(file, n, 0, "agent-filename", "agent `%s` is defined in %s; name the file %s.yaml", name, path.Base(file), name)
		}
	}

	// runtime: harness:NAME of the manifest.
	var h *harness
	if rt, ok := asString(m["runtime"]); ok && l.harnessesKnown {
		if hn, ok := strings.CutPrefix(rt, "harness:"); ok && agentHarnessRef.MatchString(hn) {
			h = l.harnesses[hn]
			if h == nil {
				_, n := schemas.Locate(root, "runtime")
				msg := fmt.Sprintf("runtime names harness `%s`, which %s does not declare", schemas.Clip(hn), ManifestFile)
				if s, ok := schemas.Closest(hn, l.harnessNames); ok {
					msg += fmt.Sprintf("; did you mean `%s`?", s)
				} else if len(l.harnessNames) > 0 {
					msg += "; its harnesses are " + strings.Join(l.harnessNames, ", ")
				}
				l.addAt(file, n, 0, "unknown-harness", "%s", composed(msg))
			}
		}
	}

	l.checkInstructions(file, root, m)
	for _, key := range []string{"input", "output"} {
		l.checkIOSchema(file, root, m, key)
	}
	l.checkLimits(file, root, asMap(m["limits"]))
	l.checkApprovals(file, root, asMap(m["harness"]), h)
}

var agentHarnessRef = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

func (l *linter) checkInstructions(file string, root *yaml.Node, m map[string]any) {
	p, ok := asString(m["instructions"])
	if !ok || p == "" {
		return // the schema reports it
	}
	_, n := schemas.Locate(root, "instructions")
	rel, ok := relPath(p)
	if !ok {
		l.addAt(file, n, 0, "path-escape", "`instructions` must be a path inside the plugin, not `%s`", p)
		return
	}
	st, err := fs.Stat(l.fsys, rel)
	if err != nil {
		if notExist(err) {
			l.addAt(file, n, 0, "instructions-missing", "instructions file %s does not exist", rel)
			return
		}
		l.setFatal(err)
		return
	}
	if !st.Mode().IsRegular() {
		l.addAt(file, n, 0, "instructions-missing", "instructions %s is not a file", rel)
		return
	}
	empty, err := l.blank(rel)
	if err != nil {
		l.setFatal(err)
		return
	}
	if empty {
		l.addAt(file, n, 0, "instructions-missing", "instructions file %s is empty", rel)
	}
}

// blank reports whether a file holds only white space; it reads at most
// until the first other character.
func (l *linter) blank(name string) (bool, error) {
	f, err := l.fsys.Open(name)
	if err != nil {
		return false, err
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		n, err := f.Read(buf)
		if len(bytes.TrimFunc(buf[:n], unicode.IsSpace)) > 0 {
			return false, nil
		}
		if err == io.EOF {
			return true, nil
		}
		if err != nil {
			return false, err
		}
	}
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
			l.addAt(file, n, 0, "timeout-duration", "`timeout` must be a duration such as 10m or 90s, not `%s`", s)
		case d <= 0:
			l.addAt(file, n, 0, "timeout-duration", "`timeout` must be greater than zero, not `%s`", s)
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
		l.addAt(file, n, 0, "max-steps", "`max_steps` must be at least 1, not %s", strconv.FormatFloat(steps, 'f', -1, 64))
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
		l.addAt(file, n, 0, "approval-unlisted-tool", "`%s` requires approval but the agent may not call it; %s", t, where)
	}
}

// checkIOSchema checks input/output {schema: ...}: a file of the plugin
// or an inline schema, compiled as a JSON Schema.
func (l *linter) checkIOSchema(file string, root *yaml.Node, m map[string]any, key string) {
	iom := asMap(m[key])
	if iom == nil {
		return
	}
	sv, ok := iom["schema"]
	if !ok {
		return
	}
	_, n := schemas.Locate(root, key, "schema")
	switch s := sv.(type) {
	case string:
		rel, ok := relPath(s)
		if !ok {
			l.addAt(file, n, 0, "path-escape", "`%s.schema` must be a path inside the plugin, not `%s`", key, s)
			return
		}
		data, st := l.read(rel)
		switch st {
		case fileMissing:
			l.addAt(file, n, 0, "input-schema", "%s schema %s does not exist", key, rel)
			return
		case fileBad:
			return
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			l.addAt(file, n, 0, "input-schema", "%s schema %s is not JSON: %s", key, rel, composed(oneLine(err.Error())))
			return
		}
		if err := l.compileSchema(rel, doc); err != nil {
			for _, msg := range schemaMessages(err, nil) {
				l.addAt(file, n, 0, "input-schema", "%s schema %s is not a valid JSON Schema: %s", key, rel, composed(msg.Message))
			}
		}
	case map[string]any:
		if err := l.compileSchema(fmt.Sprintf(".inline-%s-%s.json", strings.TrimSuffix(path.Base(file), ".yaml"), key), s); err != nil {
			for _, p := range schemaMessages(err, n) {
				l.add(file, p.Line, p.Col, "input-schema", "the inline %s schema is not a valid JSON Schema: %s", key, composed(p.Message))
			}
		}
	}
}

// schemaMessages explains a schema compiler error; a schema that breaks
// the metaschema gives one problem per cause, placed under root (the
// inline schema's node) when there is one.
func schemaMessages(err error, root *yaml.Node) []schemas.Problem {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		ps := schemas.Explain(sve.Err, root)
		if root == nil {
			for i := range ps {
				if ps[i].Path != "" {
					ps[i].Message = "at " + ps[i].Path + ": " + ps[i].Message
				}
			}
		}
		return ps
	}
	line, col := 1, 1
	if root != nil {
		line, col = root.Line, root.Column
	}
	return []schemas.Problem{{Line: line, Col: col, Message: oneLine(err.Error())}}
}

// pluginURL is the base under which the plugin's files are given to the
// JSON Schema compiler; nothing else is loaded.
const pluginURL = "file:///oz0-plugin/"

func (l *linter) compileSchema(rel string, doc any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the schema compiler failed: %v", r)
		}
	}()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(pluginLoader{l})
	url := pluginURL + rel
	if err := c.AddResource(url, doc); err != nil {
		return err
	}
	_, err = c.Compile(url)
	return err
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
	return jsonschema.UnmarshalJSON(io.LimitReader(f, MaxFileSize))
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:297] + "..."
	}
	return s
}

// readListedDir reads a directory the manifest lists under key (agents, skills). A missing one is
// a finding of rule, unless missingOK (it then holds nothing); one that is not a directory is a
// finding of rule too; an I/O error is fatal. ok is false when there is nothing to lint.
func (l *linter) readListedDir(d dirEntry, key, rule string, missingOK bool) (entries []fs.DirEntry, ok bool) {
	st, err := fs.Stat(l.fsys, d.path)
	switch {
	case err != nil && notExist(err):
		if !missingOK {
			l.addAt(ManifestFile, d.node, 0, rule, "%s directory `%s` does not exist", key, d.written)
		}
		return nil, false
	case err != nil:
		l.setFatal(err)
		return nil, false
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
