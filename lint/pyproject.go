package lint

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/internal/lazyre"
)

// PyprojectFile is the Python project file whose dependencies are checked.
const PyprojectFile = "pyproject.toml"

const litellmReason = "Orchestrator Zero keeps litellm out of everything it runs after the LiteLLM supply-chain incident of March 2026"

func (l *linter) lintPyproject() {
	const file = PyprojectFile
	data, st := l.read(file)
	if st != fileOK {
		return
	}
	if l.notText(file, data) {
		return
	}
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		line, col := 1, 1
		msg := err.Error()
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, col = de.Position()
		}
		msg = strings.TrimPrefix(msg, "toml: ")
		l.add(file, line, col, diag.TOMLSyntax, "%s", composed(oneLine(msg)))
		return
	}
	loc := &literalFinder{data: data, used: map[int]bool{}}
	check := func(where string, list any) {
		items, ok := list.([]any)
		if !ok {
			return
		}
		for _, it := range items {
			s, ok := it.(string)
			if !ok {
				continue // {include-group = ...} and the like
			}
			l.checkDependency(file, loc, where, s)
		}
	}
	project, _ := doc["project"].(map[string]any)
	check("[project] dependencies", project["dependencies"])
	checkGroups := func(table string, groups map[string]any) {
		names := make([]string, 0, len(groups))
		for name := range groups {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			check(fmt.Sprintf("%s %s", table, name), groups[name])
		}
	}
	if opt, ok := project["optional-dependencies"].(map[string]any); ok {
		checkGroups("[project.optional-dependencies]", opt)
	}
	if groups, ok := doc["dependency-groups"].(map[string]any); ok {
		checkGroups("[dependency-groups]", groups)
	}
	if tool, ok := doc["tool"].(map[string]any); ok {
		if uv, ok := tool["uv"].(map[string]any); ok {
			check("[tool.uv] dev-dependencies", uv["dev-dependencies"])
		}
	}
}

// A PEP 508 requirement: name, extras, then a version specifier or a URL,
// then markers.
var requirement = lazyre.New(`^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[([^\]]*)\])?\s*(.*)$`)

var separators = lazyre.New(`[-_.]+`)

func normalizeName(s string) string {
	return separators().ReplaceAllString(strings.ToLower(strings.TrimSpace(s)), "-")
}

// frameworks whose versions must be pinned: exact names, and prefixes.
var (
	pinnedNames    = []string{"langgraph", "crewai", "openai-agents", "google-adk", "strands-agents"}
	pinnedPrefixes = []string{"langchain", "agent-framework", "autogen"}
)

func (l *linter) checkDependency(file string, loc *literalFinder, where, dep string) {
	m := requirement().FindStringSubmatch(dep)
	if m == nil {
		return
	}
	name := normalizeName(m[1])
	var extras []string
	for _, e := range strings.Split(m[2], ",") {
		if e = normalizeName(e); e != "" {
			extras = append(extras, e)
		}
	}
	spec, _, _ := strings.Cut(m[3], ";")
	spec = strings.TrimSpace(spec)

	line, col := loc.find(dep)
	if name == "litellm" {
		l.add(file, line, col, diag.BannedDependency, "`%s` in %s is litellm: %s; call models through the gateway with the Anthropic or OpenAI SDK", dep, where, composed(litellmReason))
		return
	}
	if slices.Contains(extras, "litellm") {
		l.add(file, line, col, diag.BannedDependency, "`%s` in %s pulls in litellm: %s; use %s[anthropic]", dep, where, composed(litellmReason), m[1])
		return
	}
	for _, e := range extras {
		if slices.Contains(litellmExtras[name], e) {
			l.add(file, line, col, diag.BannedDependency, "`%s` in %s pulls in litellm through its %s extra: %s; depend on %s and the Anthropic or OpenAI SDK", dep, where, e, composed(litellmReason), m[1])
			return
		}
	}
	if !mustPin(name) || pinned(spec) {
		return
	}
	l.add(file, line, col, diag.UnpinnedDependency, "`%s` in %s is not pinned; pin agent frameworks to one version with ==, e.g. %s==X.Y.Z", dep, where, m[1])
}

// litellmExtras are the extras of agent frameworks that pull in litellm, beyond those named
// litellm: ADK's extensions (and all, its superset), Strands' all.
var litellmExtras = map[string][]string{
	"google-adk":     {"extensions", "all"},
	"strands-agents": {"all"},
}

func mustPin(name string) bool {
	if slices.Contains(pinnedNames, name) {
		return true
	}
	for _, p := range pinnedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// pinned reports whether a specifier names one version: a == clause
// without a wildcard, an === clause, or a direct URL reference (@ URL).
func pinned(spec string) bool {
	if strings.HasPrefix(spec, "@") {
		return true
	}
	spec = strings.Trim(spec, "() ")
	for _, clause := range strings.Split(spec, ",") {
		clause = strings.TrimSpace(clause)
		if strings.HasPrefix(clause, "===") {
			return true
		}
		if v, ok := strings.CutPrefix(clause, "=="); ok && !strings.Contains(v, "*") && strings.TrimSpace(v) != "" {
			return true
		}
	}
	return false
}

// literalFinder finds the position of a string literal in the raw TOML,
// each occurrence once, for findings about dependency strings.
type literalFinder struct {
	data []byte
	used map[int]bool
}

func (f *literalFinder) find(s string) (line, col int) {
	for _, q := range []string{`"`, `'`} {
		lit := []byte(q + s + q)
		from := 0
		for {
			i := bytes.Index(f.data[from:], lit)
			if i < 0 {
				break
			}
			off := from + i
			lineStart := bytes.LastIndexByte(f.data[:off], '\n') + 1
			inComment := bytes.HasPrefix(bytes.TrimSpace(f.data[lineStart:off]), []byte("#"))
			if !f.used[off] && !inComment {
				f.used[off] = true
				return position(f.data, off)
			}
			from = off + 1
		}
	}
	return 1, 1
}

func position(data []byte, off int) (line, col int) {
	line = 1 + bytes.Count(data[:off], []byte("\n"))
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	col = 1 + len([]rune(string(data[start:off])))
	return line, col
}
