package lint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"syscall"

	"github.com/orchestrator-zero/oz0/schemas"
	"gopkg.in/yaml.v3"
)

// MaxFileSize is the size of the largest file the linter parses.
const MaxFileSize = 1 << 20

// ManifestFile is the name of the plugin manifest.
const ManifestFile = "oz0-plugin.yaml"

type linter struct {
	fsys     fs.FS
	dir      string
	findings []Finding
	fatal    error

	// From the manifest; harnessesKnown is false when it could not be read,
	// and then no agent rule that needs the harnesses runs.
	harnessesKnown bool
	harnesses      map[string]*harness
	harnessNames   []string

	agents map[string]string // agent name → the file that defines it
}

type harness struct {
	name     string
	tools    []string
	hasTools bool
}

func (l *linter) add(file string, line, col int, rule, format string, args ...any) {
	r, ok := RuleByID(rule)
	if !ok {
		panic("lint: unknown rule " + rule)
	}
	for i, a := range args {
		switch a := a.(type) {
		case string:
			args[i] = clipArg(a)
		case composed:
			args[i] = string(a)
		}
	}
	l.findings = append(l.findings, Finding{
		File: file, Line: line, Col: col,
		Severity: r.Severity, Rule: rule,
		Message: schemas.OneLine(fmt.Sprintf(format, args...)),
	})
}

// maxArg is the most runes of a string argument of a message: values
// from files are clipped, so that a hostile file cannot make megabyte-long
// messages. A composed argument, a message built from clipped values, is
// not.
const maxArg = 200

type composed string

func clipArg(s string) string {
	if len(s) <= maxArg {
		return s
	}
	r := []rune(s)
	if len(r) <= maxArg {
		return s
	}
	return string(r[:maxArg-1]) + "…"
}

// addAt adds a finding at a YAML node (line offset for front matter).
func (l *linter) addAt(file string, n *yaml.Node, offset int, rule, format string, args ...any) {
	line, col := 1, 1
	if n != nil && n.Line > 0 {
		line, col = n.Line+offset, n.Column
	}
	l.add(file, line, col, rule, format, args...)
}

func (l *linter) addProblems(file string, ps []schemas.Problem, offset int) {
	for _, p := range ps {
		line := p.Line
		if line > 0 {
			line += offset
		}
		l.add(file, line, p.Col, p.Kind, "%s", composed(p.Message))
	}
}

func (l *linter) setFatal(err error) {
	if l.fatal == nil {
		l.fatal = err
	}
}

func notExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrInvalid)
}

type fileState int

const (
	fileOK      fileState = iota
	fileMissing           // does not exist: the caller decides what that means
	fileBad               // reported (or fatal): do not look further
)

// read reads a regular file of at most MaxFileSize bytes. A missing file
// is fileMissing, unreported; a directory, a special file or a file too
// large is reported; a permission or I/O error is fatal.
func (l *linter) read(name string) ([]byte, fileState) {
	st, err := fs.Stat(l.fsys, name)
	if err != nil {
		if notExist(err) {
			return nil, fileMissing
		}
		l.setFatal(err)
		return nil, fileBad
	}
	switch {
	case st.IsDir():
		l.add(name, 0, 0, "not-a-file", "%s is a directory, not a file", name)
		return nil, fileBad
	case !st.Mode().IsRegular():
		l.add(name, 0, 0, "not-a-file", "%s is not a regular file (%s)", name, st.Mode().Type())
		return nil, fileBad
	case st.Size() > MaxFileSize:
		l.add(name, 0, 0, "file-too-large", "%s is %d bytes; files the linter loads must be at most 1 MiB", name, st.Size())
		return nil, fileBad
	}
	f, err := l.fsys.Open(name)
	if err != nil {
		if notExist(err) {
			return nil, fileMissing
		}
		l.setFatal(err)
		return nil, fileBad
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		l.setFatal(fmt.Errorf("read %s: %w", name, err))
		return nil, fileBad
	}
	if len(data) > MaxFileSize {
		l.add(name, 0, 0, "file-too-large", "%s is over 1 MiB; files the linter loads must be at most 1 MiB", name)
		return nil, fileBad
	}
	return data, fileOK
}

// loadYAML parses and validates a YAML file (or front matter whose first
// line is line offset+1 of file). v is nil when the file could not be
// parsed or exceeds the YAML limits.
func (l *linter) loadYAML(file, schema string, offset int, data []byte) (root *yaml.Node, v any) {
	root, ps := schemas.ParseYAML(data)
	l.addProblems(file, ps, offset)
	if root == nil {
		return nil, nil
	}
	v, ps = schemas.DecodeYAML(schema, root)
	l.addProblems(file, ps, offset)
	return root, v
}

// relPath cleans a path from the manifest or an agent, relative to the
// plugin directory; ok is false when it is absolute or leaves the plugin.
func relPath(p string) (clean string, ok bool) {
	if p == "" || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || (len(p) > 1 && p[1] == ':') {
		return "", false
	}
	c := path.Clean(strings.ReplaceAll(p, `\`, "/"))
	if c == ".." || strings.HasPrefix(c, "../") || !fs.ValidPath(c) {
		return "", false
	}
	return c, true
}

// Small accessors for the values schemas.ToValue makes.

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func asString(v any) (string, bool) {
	s, ok := v.(string)
	return s, ok
}

// strings of a list, with their indexes; non-strings are skipped (the
// schema reports them).
func stringItems(v any) (items []string, idx []int) {
	for i, x := range asList(v) {
		if s, ok := x.(string); ok {
			items = append(items, s)
			idx = append(idx, i)
		}
	}
	return items, idx
}
