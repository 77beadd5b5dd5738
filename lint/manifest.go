package lint

import (
	"io/fs"
	"os/exec"
	"path"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/internal/lazyre"
	"github.com/orchestrator-zero/oz0/plugin"
	"github.com/orchestrator-zero/oz0/schemas"
	"github.com/orchestrator-zero/oz0/supervisor"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

// Formats that a harness may list: the model APIs the gateway serves.
var modelFormats = []string{plugin.FormatAnthropicMessages, plugin.FormatOpenAIChat}

func (l *linter) run() error {
	data, st := l.read(ManifestFile)
	if l.fatal != nil {
		return l.fatal
	}
	switch st {
	case fileMissing:
		where := l.dir
		if where == "" {
			where = "this directory"
		}
		l.add(ManifestFile, 0, 0, diag.ManifestMissing, "no %s in %s; run `oz0 plugin new` or cd into the plugin", ManifestFile, where)
		return nil
	case fileBad:
		return nil
	}
	agentDirs, skillDirs := l.lintManifest(data)
	if l.fatal != nil {
		return l.fatal
	}
	l.agents = map[string]string{}
	for _, d := range agentDirs {
		l.lintAgentDir(d)
		if l.fatal != nil {
			return l.fatal
		}
	}
	for _, f := range l.afterAgents {
		f()
	}
	for _, d := range skillDirs {
		l.lintSkillDir(d)
		if l.fatal != nil {
			return l.fatal
		}
	}
	l.lintPyproject()
	l.lintPackageJSON()
	if l.evals {
		l.lintEvals()
	}
	return l.fatal
}

// dirEntry is a directory listed in the manifest, with its node.
type dirEntry struct {
	path    string // cleaned, relative to the plugin
	written string // as in the manifest
	node    *yaml.Node
}

// lintManifest checks the manifest and returns the agents and skills
// directories it lists.
func (l *linter) lintManifest(data []byte) (agentDirs, skillDirs []dirEntry) {
	const file = ManifestFile
	root, v, valid := l.loadYAML(file, schemas.Manifest, 0, data)
	m := asMap(v)
	if m == nil {
		return nil, nil
	}
	if valid {
		l.decode(file, m, &l.typedManifest)
	}

	// Harnesses.
	l.harnesses = map[string]*harness{}
	l.harnessesKnown = true
	firstLine := map[string]int{}
	for i, hv := range asList(m["harnesses"]) {
		hm := asMap(hv)
		if hm == nil {
			continue
		}
		hp := []string{"harnesses", strconv.Itoa(i)}
		name, ok := asString(hm["name"])
		if ok && name != "" {
			_, nameNode := schemas.Locate(root, append(hp, "name")...)
			if line, dup := firstLine[name]; dup {
				l.addAt(file, nameNode, 0, diag.DuplicateHarness, "harness `%s` is declared twice (first on line %d)", name, line)
			} else {
				if nameNode != nil {
					firstLine[name] = nameNode.Line
				}
				h := &harness{name: name}
				h.tools, _ = stringItems(hm["tools"])
				_, h.hasTools = hm["tools"]
				l.harnesses[name] = h
				l.harnessNames = append(l.harnessNames, name)
			}
		}
		label := "harness"
		if ok {
			label = "harness `" + name + "`"
		}
		l.checkFormats(root, hp, hm, label)
		l.checkModule(root, hp, hm, label)
		l.checkCommand(root, hp, hm, label)
		var h *harness
		if ok {
			h = l.harnesses[name]
		}
		// Once the agents are read: the tools its sessions may call are theirs too.
		l.afterAgents = append(l.afterAgents, func() { l.checkClients(root, hp, hm, label, h) })
	}

	agentDirs = l.manifestDirs(root, m, "agents")
	skillDirs = l.manifestDirs(root, m, "skills")
	return agentDirs, skillDirs
}

func (l *linter) manifestDirs(root *yaml.Node, m map[string]any, key string) []dirEntry {
	var out []dirEntry
	seen := map[string]bool{}
	items, idx := stringItems(m[key])
	for j, s := range items {
		_, n := schemas.Locate(root, key, strconv.Itoa(idx[j]))
		if s == "" {
			continue // the schema reports it
		}
		p, ok := relPath(s)
		if !ok {
			l.addAt(ManifestFile, n, 0, diag.PathEscape, "`%s` entry must be a directory inside the plugin, not `%s`", key, s)
			continue
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, dirEntry{path: p, written: s, node: n})
	}
	return out
}

func (l *linter) checkFormats(root *yaml.Node, hp []string, hm map[string]any, label string) {
	fv, present := hm["formats"]
	if !present {
		_, n := schemas.Locate(root, hp...)
		l.addAt(ManifestFile, n, 0, diag.UnknownFormat, "%s lists no formats; add the model APIs its code speaks, e.g. formats: [anthropic-messages]", label)
		return
	}
	list := asList(fv)
	if list == nil {
		return // not a list: the schema reports it
	}
	if len(list) == 0 {
		_, n := schemas.Locate(root, append(hp, "formats")...)
		l.addAt(ManifestFile, n, 0, diag.UnknownFormat, "%s lists no formats; add the model APIs its code speaks: %s", label, strings.Join(modelFormats, ", "))
		return
	}
	items, idx := stringItems(fv)
	for j, f := range items {
		if slices.Contains(modelFormats, f) {
			continue
		}
		_, n := schemas.Locate(root, append(hp, "formats", strconv.Itoa(idx[j]))...)
		msg := "%s has unknown format `%s`; "
		if s, ok := schemas.Closest(f, modelFormats); ok {
			l.addAt(ManifestFile, n, 0, diag.UnknownFormat, msg+"did you mean `%s`?", label, f, s)
		} else {
			l.addAt(ManifestFile, n, 0, diag.UnknownFormat, msg+"the formats are %s", label, f, strings.Join(modelFormats, ", "))
		}
	}
}

var pythonModule = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// checkModule checks that python -m MODULE names a module of the plugin.
func (l *linter) checkModule(root *yaml.Node, hp []string, hm map[string]any, label string) {
	argv, ok := commandStrings(hm)
	if !ok {
		return
	}
	mod, at := supervisor.PythonModule(argv)
	if at < 0 {
		return
	}
	_, n := schemas.Locate(root, append(hp, "command", strconv.Itoa(at))...)
	if !pythonModule().MatchString(mod) {
		l.addAt(ManifestFile, n, 0, diag.ModuleMissing, "%s runs python -m `%s`, which is not a Python module name", label, mod)
		return
	}
	rel := strings.ReplaceAll(mod, ".", "/")
	for _, base := range []string{"src/", ""} {
		if l.isFile(base+rel+"/__main__.py") || l.isFile(base+rel+".py") {
			return
		}
	}
	for _, base := range []string{"src/", ""} {
		if l.isFile(base+rel+"/__init__.py") || l.isDir(base+rel) {
			l.addAt(ManifestFile, n, 0, diag.ModuleMissing, "%s runs package `%s` with python -m, but %s%s/__main__.py does not exist; python -m needs it to run a package", label, mod, base, rel)
			return
		}
	}
	l.addAt(ManifestFile, n, 0, diag.ModuleMissing, "%s runs module `%s`, but there is no src/%s/__main__.py or src/%s.py", label, mod, rel, rel)
}

// checkCommand checks what the node will resolve of a harness's command: a program written as a
// path and the file an interpreter runs (node harness.mjs) are files of the plugin; a bare program
// other than Python is on this machine's PATH.
func (l *linter) checkCommand(root *yaml.Node, hp []string, hm map[string]any, label string) {
	argv, ok := commandStrings(hm)
	if !ok || argv[0] == "" {
		return
	}
	at := func(i int) *yaml.Node {
		_, n := schemas.Locate(root, append(hp, "command", strconv.Itoa(i))...)
		return n
	}
	prog := argv[0]
	switch {
	case strings.ContainsRune(prog, '/') && !path.IsAbs(prog):
		rel, ok := relPath(prog)
		if !ok {
			l.addAt(ManifestFile, at(0), 0, diag.PathEscape, "%s runs `%s`, which is outside the plugin; a harness's program must be in the plugin or on the PATH", label, prog)
			return
		}
		if !l.isFile(rel) {
			l.addAt(ManifestFile, at(0), 0, diag.CommandMissing, "%s runs `%s`, which is not a file of the plugin (it is resolved against the plugin's directory)", label, prog)
		}
	case strings.ContainsRune(prog, '/'):
		// An absolute program: this machine's, not the plugin's. One of the system's directories
		// is in every session; anything else may be on no other machine, nor in the sandbox.
		if !sandbox.InSystemDir(prog) {
			l.addAt(ManifestFile, at(0), 0, diag.CommandOutsidePlugin, "%s runs `%s`, a program outside the plugin: it does not ship with the plugin, and a session's sandbox shows the plugin and the system's directories only; put it in the plugin and name it relative to it (./bin/…), or use a program on the PATH", label, prog)
		}
	case !supervisor.IsPython(prog) && l.abs != "":
		if _, err := exec.LookPath(prog); err != nil {
			l.addAt(ManifestFile, at(0), 0, diag.ProgramNotFound, "%s runs `%s`, which is not on this machine's PATH", label, prog)
		}
	}
	if i := supervisor.ScriptArg(argv); i > 0 {
		file := argv[i]
		rel, ok := relPath(file)
		switch {
		case path.IsAbs(file):
			l.addAt(ManifestFile, at(i), 0, diag.CommandOutsidePlugin, "%s runs `%s`, a file outside the plugin: it does not ship with the plugin, and a session's sandbox shows the plugin and the system's directories only, so every session would fail; copy it into the plugin and name it relative to it", label, file)
		case !ok:
			l.addAt(ManifestFile, at(i), 0, diag.PathEscape, "%s runs `%s`, which is outside the plugin", label, file)
		case !l.isFile(rel):
			l.addAt(ManifestFile, at(i), 0, diag.CommandMissing, "%s runs %s `%s`, which is not a file of the plugin (it is resolved against the plugin's directory)", label, path.Base(prog), file)
		}
	}
}

// commandStrings is a harness's command as strings; ok is false when it is not a list of strings
// (the schema says what is wrong).
func commandStrings(hm map[string]any) ([]string, bool) {
	items, idx := stringItems(hm["command"])
	if len(items) == 0 || len(items) != len(asList(hm["command"])) || idx[0] != 0 {
		return nil, false
	}
	return items, true
}

func (l *linter) isFile(name string) bool {
	st, err := fs.Stat(l.fsys, name)
	return err == nil && st.Mode().IsRegular()
}

func (l *linter) isDir(name string) bool {
	st, err := fs.Stat(l.fsys, name)
	return err == nil && st.IsDir()
}
