package lint

import (
	"bytes"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/internal/lazyre"
	"github.com/orchestrator-zero/oz0/plugin"
	"github.com/orchestrator-zero/oz0/schemas"
	"github.com/orchestrator-zero/oz0/supervisor"
)

// The model clients a Python harness's code may build, by the model API they speak: the
// frameworks' and the SDKs' class names (node.go has JavaScript's). session.complete() speaks the
// record's format, so it fits any.
var (
	anthropicClients = lazyre.New(`\b(AnthropicModel|AnthropicLlm|AnthropicClient|ChatAnthropic|AsyncAnthropic|Anthropic)\b`)
	openaiClients    = lazyre.New(`\b(OpenAIModel|OpenAILlm|OpenAIChatCompletionClient|ChatOpenAI|AsyncOpenAI|OpenAI)\b`)
	responsesClients = lazyre.New(`\b(OpenAIResponsesModel|OpenAIResponsesLlm|OpenAIChatClient)\b|\.responses\.(create|stream)\(`)
	completeCall     = lazyre.New(`\bsession\.complete\(`)
)

// maxCodeFiles bounds how many files of a harness's package are read for its model clients.
const maxCodeFiles = 200

// client is where a harness's code names a model client.
type client struct {
	name       string
	file       string
	line, col  int
	responses  bool
	formatName string
	fix        string // for a client of the Responses API: what to use instead
}

// checkClients reads the code a harness runs for the model clients it builds: the Python package
// of python -m PKG, or the directory of the script a JavaScript runtime runs (node src/main.mjs).
// A client of OpenAI's Responses API is refused (the gateway serves Chat Completions), and a
// format the harness lists that its code builds no client for is reported, where that can be
// told (the code names clients of other formats, and does not call session.complete()).
func (l *linter) checkClients(root *yaml.Node, hp []string, hm map[string]any, label string, h *harness) {
	argv, ok := commandStrings(hm)
	if !ok {
		return
	}
	var tn toolsNamed
	manifestTools, _ := stringItems(hm["tools"])
	tn.tools = manifestTools
	if h != nil {
		for _, t := range h.agentTools {
			if !slices.Contains(tn.tools, t) {
				tn.tools = append(tn.tools, t)
			}
		}
	}
	var clients []client
	var usesComplete bool
	dir := l.pythonPackageDir(argv)
	if dir != "" {
		clients, usesComplete = l.pythonClients(dir, &tn)
	} else if dir = l.scriptDir(argv); dir != "" {
		clients, usesComplete = l.jsClients(dir, &tn)
	} else {
		return
	}
	l.checkToolsNamed(root, hp, label, dir, &tn, manifestTools)
	for _, c := range clients {
		if c.responses {
			l.add(c.file, c.line, c.col, diag.ResponsesAPI, "%s uses `%s`, which speaks OpenAI's Responses API; the gateway serves Chat Completions: %s", composed(label), c.name, c.fix)
		}
	}
	if usesComplete {
		return
	}
	formats, idx := stringItems(hm["formats"])
	for j, f := range formats {
		if !slices.Contains(modelFormats, f) || slices.ContainsFunc(clients, func(c client) bool { return c.formatName == f }) {
			continue
		}
		var other *client
		for i := range clients {
			if clients[i].formatName != "" {
				other = &clients[i]
				break
			}
		}
		if other == nil {
			return // no client it can tell: nothing to say
		}
		_, n := schemas.Locate(root, append(hp, "formats", strconv.Itoa(idx[j]))...)
		l.addAt(ManifestFile, n, 0, diag.FormatMismatch, "%s lists %s, but its code builds no model client that speaks it (it builds `%s` in %s, which speaks %s): a session on a record of that format would fail; list only the formats the code speaks, or build a client for it", label, f, other.name, other.file, other.formatName)
	}
}

// pythonPackageDir is the directory of the package a harness runs with python -m, "" for none
// (a single-file module, or none: module-missing says so).
func (l *linter) pythonPackageDir(argv []string) string {
	mod, at := supervisor.PythonModule(argv)
	if at < 0 || !pythonModule().MatchString(mod) {
		return ""
	}
	rel := strings.ReplaceAll(mod, ".", "/")
	for _, base := range []string{"src/", ""} {
		if l.isDir(base + rel) {
			return base + rel
		}
	}
	return ""
}

// toolsNamed is what a harness's code says of the tools its manifest lists: whether any file of
// its code was read, and which of the tools a file names.
type toolsNamed struct {
	tools []string
	read  bool
	named map[string]bool
}

// checkToolsNamed warns of a harness whose code names none of the tools its sessions may call
// (the manifest's and its agents' harness.tools): a tool renamed in the code and not in the
// manifest, whose calls are then denied. One of them named (an agent's own tool, as the guide's
// LangGraph example has), or no code read, says nothing.
func (l *linter) checkToolsNamed(root *yaml.Node, hp []string, label, dir string, tn *toolsNamed, manifestTools []string) {
	if len(manifestTools) == 0 || !tn.read || len(tn.named) > 0 {
		return
	}
	_, n := schemas.Locate(root, append(hp, "tools")...)
	l.addAt(ManifestFile, n, 0, diag.ToolNotInCode, "%s lists the tools %s, but its code (%s) names none of them: a session may call only the tools listed, and a call of another is denied; list the tools its code calls",
		label, strings.Join(manifestTools, ", "), dir)
}

// see marks each of the tools that src names as a whole word (an identifier, or a string's whole
// content: def notify_team, "notify_team", name: 'notify_team'), and that a file was read.
func (tn *toolsNamed) see(src string) {
	tn.read = true
	for _, t := range tn.tools {
		if t == "" || tn.named[t] {
			continue
		}
		for i := 0; ; {
			k := strings.Index(src[i:], t)
			if k < 0 {
				break
			}
			at, end := i+k, i+k+len(t)
			if (at == 0 || !isWordByte(src[at-1])) && (end == len(src) || !isWordByte(src[end])) {
				if tn.named == nil {
					tn.named = map[string]bool{}
				}
				tn.named[t] = true
				break
			}
			i = end
		}
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// pythonClients lists the model clients the Python files under dir name, and whether they call
// session.complete(); tn sees each file.
func (l *linter) pythonClients(dir string, tn *toolsNamed) (clients []client, usesComplete bool) {
	files := 0
	_ = fs.WalkDir(l.fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".py") {
			return nil
		}
		if files++; files > maxCodeFiles {
			return fs.SkipAll
		}
		data, st := l.read(p)
		if st != fileOK {
			return nil
		}
		tn.see(string(data))
		code := pythonCode(string(data))
		usesComplete = usesComplete || strings.Contains(code, "session.complete(") && completeCall().MatchString(code)
		clients = append(clients, findClients(p, code, pythonPatterns)...)
		return nil
	})
	return clients, usesComplete
}

// clientPattern finds the clients of one kind in code: those of a format, or of the Responses API.
type clientPattern struct {
	re        func() *regexp.Regexp
	lits      []string // every match is within a line and contains one of these
	format    string
	responses bool
}

var pythonPatterns = []clientPattern{
	{responsesClients, []string{"OpenAI", ".responses."}, "", true},
	{anthropicClients, []string{"Anthropic"}, plugin.FormatAnthropicMessages, false},
	{openaiClients, []string{"OpenAI"}, plugin.FormatOpenAIChat, false},
}

// findClients lists where code (comments and strings blanked) names a model client.
func findClients(file, code string, patterns []clientPattern) []client {
	var out []client
	for _, m := range patterns {
		for _, loc := range matchLines(m.re(), m.lits, code) {
			c := client{name: strings.TrimPrefix(code[loc[0]:loc[1]], "."), file: file, responses: m.responses, formatName: m.format,
				fix: "use the framework's Chat Completions client"}
			c.line, c.col = lineCol(code, loc[0])
			out = append(out, c)
		}
	}
	return out
}

// matchLines is re.FindAllStringIndex(code, -1) for an re whose every match lies within a line
// and contains one of lits: re runs only over the lines that have one. (Go's regexp scans a
// pattern with no literal prefix, such as \b(A|B)\b, at a few MB/s: over the template's 80 KB of
// Python that was a tenth of `oz0 dev`'s start.) A line's ends are text boundaries, as the
// newlines around it are for \b.
func matchLines(re *regexp.Regexp, lits []string, code string) [][]int {
	var out [][]int
	for start := 0; start < len(code); {
		next := -1
		for _, l := range lits {
			if i := strings.Index(code[start:], l); i >= 0 && (next < 0 || i < next) {
				next = i
			}
		}
		if next < 0 {
			break
		}
		at := start + next
		ls := strings.LastIndexByte(code[:at], '\n') + 1
		le := len(code)
		if i := strings.IndexByte(code[at:], '\n'); i >= 0 {
			le = at + i
		}
		for _, loc := range re.FindAllStringIndex(code[ls:le], -1) {
			out = append(out, []int{ls + loc[0], ls + loc[1]})
		}
		start = le + 1
	}
	return out
}

// lineCol is the line and column (in bytes, from 1) of offset i of code.
func lineCol(code string, i int) (line, col int) {
	return strings.Count(code[:i], "\n") + 1, i - strings.LastIndexByte(code[:i], '\n')
}

// pythonCode blanks the comments and string literals of Python source (docstrings included),
// keeping every newline and the length of each line, so that names in prose are not taken for
// code and positions stay true. It jumps from one byte that matters to the next (bytes.IndexAny)
// rather than looking at each: a plugin's Python is read at every lint and every oz0 dev start.
func pythonCode(src string) string {
	b := []byte(src)
	for i := 0; i < len(b); {
		k := bytes.IndexAny(b[i:], "#\"'")
		if k < 0 {
			break
		}
		i += k
		if b[i] == '#' {
			j := len(b)
			if e := bytes.IndexByte(b[i:], '\n'); e >= 0 {
				j = i + e
			}
			blank(b[i:j])
			i = j
			continue
		}
		c := b[i]
		n := 1
		if i+2 < len(b) && b[i+1] == c && b[i+2] == c {
			n = 3
		}
		// What ends the literal: its quote, or a one-line string's newline; a backslash skips
		// the byte after it.
		stops := string([]byte{c, '\\', '\n'})
		if n == 3 {
			stops = stops[:2]
		}
		j := i + n
		for j < len(b) {
			e := bytes.IndexAny(b[j:], stops)
			if e < 0 {
				j = len(b)
				break
			}
			j += e
			if b[j] == '\\' {
				j += 2
				continue
			}
			if b[j] == '\n' {
				break // an unclosed one-line string ends with its line
			}
			if n == 1 || (j+2 < len(b) && b[j+1] == c && b[j+2] == c) {
				j += n
				break
			}
			j++
		}
		j = min(j, len(b))
		blank(b[i:j])
		i = j
	}
	return string(b)
}

// blank writes a space over every byte of b but its newlines.
func blank(b []byte) {
	for k, c := range b {
		if c != '\n' {
			b[k] = ' '
		}
	}
}
