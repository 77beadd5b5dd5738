package lint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"gopkg.in/yaml.v3"

	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/internal/termtext"
	"github.com/orchestrator-zero/oz0/internal/textclip"
	"github.com/orchestrator-zero/oz0/plugin"
	"github.com/orchestrator-zero/oz0/schemas"
)

// MaxFileSize is the size of the largest file the linter parses.
const MaxFileSize = diag.MaxFileSize

// ManifestFile is the name of the plugin manifest.
const ManifestFile = "oz0-plugin.yaml"

type linter struct {
	fsys     fs.FS
	dir      string // as the user gave it, for messages
	abs      string // the real directory, "" for RunFS: to tell a link that leads out from other errors
	findings []diag.Diagnostic
	fatal    error
	// evals: the plugin's eval files are checked too (Run, RunFS: oz0 plugin lint). Load leaves
	// them out: what runs the plugin does not read them, and oz0 eval reports their findings as
	// its own (a bad eval file is a usage error there).
	evals bool

	// From the manifest; harnessesKnown is false when it could not be read,
	// and then no agent rule that needs the harnesses runs.
	harnessesKnown bool
	harnesses      map[string]*harness
	harnessNames   []string

	agents map[string]string // agent name → the file that defines it

	// afterAgents are the manifest's checks that need the agents read first (a harness's code,
	// checked against the tools its agents list too).
	afterAgents []func()

	// What was read, for build.
	typedManifest plugin.Manifest
	loaded        []*loadedAgent
}

// loadedAgent is an agent definition as read: its values, its prompt and its schemas.
type loadedAgent struct {
	file          string
	typed         plugin.Agent
	instructions  string
	input, output plugin.IO
}

type harness struct {
	name     string
	tools    []string
	hasTools bool
	// agentTools are the tools its agents list under harness.tools, which its sessions may call
	// besides the manifest's.
	agentTools []string
}

func (l *linter) add(file string, line, col int, rule diag.RuleID, format string, args ...any) {
	for i, a := range args {
		switch a := a.(type) {
		case string:
			args[i] = textclip.ClipN(a, maxArg)
		case composed:
			args[i] = string(a)
		}
	}
	l.findings = append(l.findings, diag.Diagnostic{
		File: file, Line: line, Col: col,
		Severity: rule.Rule().Severity, Rule: rule,
		Message: termtext.OneLine(fmt.Sprintf(format, args...)),
	})
}

// maxArg is the most runes of a string argument of a message: values from files are clipped so
// that a hostile file cannot make megabyte-long messages, and the longest of oz0's own fit.
const maxArg = 200

// composed is a message argument built from clipped values, which is not clipped again.
type composed string

// addAt adds a finding at a YAML node (line offset for front matter).
func (l *linter) addAt(file string, n *yaml.Node, offset int, rule diag.RuleID, format string, args ...any) {
	line, col := 1, 1
	if n != nil && n.Line > 0 {
		line, col = n.Line+offset, n.Column
	}
	l.add(file, line, col, rule, format, args...)
	if endLine, endCol := schemas.End(n); endLine > 0 {
		d := &l.findings[len(l.findings)-1]
		d.EndLine, d.EndCol = endLine+offset, endCol
	}
}

func (l *linter) addProblems(file string, ds []diag.Diagnostic, offset int) {
	for _, d := range ds {
		if d.Line > 0 {
			d.Line += offset
		}
		d.File = file
		l.findings = append(l.findings, d)
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

// read reads a regular file of at most MaxFileSize bytes. A missing file is fileMissing,
// unreported; a directory, a special file, a file too large, a link that leads out of the plugin
// or loops is reported (on the file itself); a permission or I/O error is fatal.
func (l *linter) read(name string) ([]byte, fileState) {
	st, err := fs.Stat(l.fsys, name)
	if err != nil {
		return nil, l.unreadable(name, err, func(rule diag.RuleID, msg string) { l.add(name, 0, 0, rule, "%s", composed(msg)) })
	}
	switch {
	case st.IsDir():
		l.add(name, 0, 0, diag.NotAFile, "%s is a directory, not a file", name)
		return nil, fileBad
	case !st.Mode().IsRegular():
		l.add(name, 0, 0, diag.NotAFile, "%s is not a regular file (%s)", name, st.Mode().Type())
		return nil, fileBad
	case st.Size() > MaxFileSize:
		l.add(name, 0, 0, diag.FileTooLarge, "%s", diag.TooLarge(name, st.Size()))
		return nil, fileBad
	}
	f, err := l.fsys.Open(name)
	if err != nil {
		return nil, l.unreadable(name, err, func(rule diag.RuleID, msg string) { l.add(name, 0, 0, rule, "%s", composed(msg)) })
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		l.setFatal(fmt.Errorf("read %s: %w", name, err))
		return nil, fileBad
	}
	if len(data) > MaxFileSize {
		l.add(name, 0, 0, diag.FileTooLarge, "%s", diag.TooLarge(name, -1))
		return nil, fileBad
	}
	return data, fileOK
}

// unreadable sorts out why name could not be opened: missing (fileMissing, unreported), a link
// that leads out of the plugin or loops (reported through report, fileBad), or an error that
// stops the run (fatal, fileBad).
func (l *linter) unreadable(name string, err error, report func(rule diag.RuleID, msg string)) fileState {
	switch {
	case notExist(err):
		return fileMissing
	case errors.Is(err, syscall.ELOOP):
		report(diag.SymlinkLoop, fmt.Sprintf("%s is a symbolic link that loops (or a chain of them too long to follow)", textclip.Clip(name)))
		return fileBad
	case l.leadsOut(name):
		report(diag.PathEscape, fmt.Sprintf("%s is a symbolic link that leads outside the plugin; a plugin's files must be inside its directory", textclip.Clip(name)))
		return fileBad
	}
	l.setFatal(err)
	return fileBad
}

// leadsOut reports whether name, inside the plugin, resolves through symbolic links to a place
// outside it. The os.Root the files are read through refuses such a path with an error that is
// not exported, so the reason is found again here, for the message.
func (l *linter) leadsOut(name string) bool {
	if l.abs == "" {
		return false
	}
	top, err := filepath.EvalSymlinks(l.abs)
	if err != nil {
		return false
	}
	p := filepath.Join(l.abs, filepath.FromSlash(name))
	// Resolve the longest prefix that exists: a link to a place outside that does not exist is
	// refused too. The bound stops a chain that goes round.
	for range 64 {
		real, err := filepath.EvalSymlinks(p)
		if err == nil {
			rel, err := filepath.Rel(top, real)
			return err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
		}
		if target, lerr := os.Readlink(p); lerr == nil {
			if filepath.IsAbs(target) {
				p = target
			} else {
				p = filepath.Join(filepath.Dir(p), target)
			}
			rel, err := filepath.Rel(top, filepath.Clean(p))
			if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return true
			}
			continue
		}
		parent := filepath.Dir(p)
		if parent == p {
			return false
		}
		p = parent
	}
	return false
}

// loadYAML parses and validates a YAML file (or front matter whose first line is line offset+1
// of file). v is nil when the file could not be parsed or exceeds the YAML limits; valid is
// whether it has no problems, so that it can be decoded into its type.
func (l *linter) loadYAML(file, schema string, offset int, data []byte) (root *yaml.Node, v any, valid bool) {
	root, ps := schemas.ParseYAML(data)
	l.addProblems(file, ps, offset)
	if root == nil {
		return nil, nil, false
	}
	v, more := schemas.DecodeYAML(schema, root)
	l.addProblems(file, more, offset)
	return root, v, len(ps)+len(more) == 0
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
