package lint

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/internal/lazyre"
	"github.com/orchestrator-zero/oz0/plugin"
	"github.com/orchestrator-zero/oz0/supervisor"
)

// PackageJSONFile is the Node project file whose dependencies are checked.
const PackageJSONFile = "package.json"

// The model clients a JavaScript or TypeScript harness's code may build, by the model API they
// speak: Strands', LangChain's and the AI SDK's, and the SDKs' own classes.
var (
	jsAnthropicClients = lazyre.New(`\b(AnthropicModel|ChatAnthropic|createAnthropic|Anthropic)\b`)
	jsOpenAIClients    = lazyre.New(`\b(OpenAIModel|ChatOpenAI|createOpenAI|OpenAI)\b`)
	jsResponsesCalls   = lazyre.New(`\.responses\.(create|stream|parse)\(|\.responses\(`)
	// Strands' OpenAIModel speaks the Responses API unless it is given api: "chat".
	strandsOpenAIModel = lazyre.New(`\bnew\s+OpenAIModel\s*\(\s*\{`)
	apiChat            = lazyre.New(`\bapi\s*:\s*["'` + "`" + `]chat["'` + "`" + `]`)
	apiOption          = lazyre.New(`\bapi\s*:`)
)

var jsPatterns = []clientPattern{
	{jsResponsesCalls, []string{".responses"}, "", true},
	{jsAnthropicClients, []string{"Anthropic"}, plugin.FormatAnthropicMessages, false},
	{jsOpenAIClients, []string{"OpenAI"}, plugin.FormatOpenAIChat, false},
}

// jsExtensions are the files of JavaScript and TypeScript code.
var jsExtensions = []string{".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx"}

func isJS(name string) bool { return slices.Contains(jsExtensions, path.Ext(name)) }

// scriptDir is the directory of the JavaScript or TypeScript file a harness's command runs (node
// src/main.mjs: src), "" for none. Its code, below it, is what lint reads for model clients.
func (l *linter) scriptDir(argv []string) string {
	i := supervisor.ScriptArg(argv)
	if i < 0 || !isJS(argv[i]) {
		return ""
	}
	rel, ok := relPath(argv[i])
	if !ok || !l.isFile(rel) {
		return "" // command-missing or path-escape says so
	}
	return path.Dir(rel)
}

// jsClients lists the model clients the JavaScript and TypeScript files under dir name (not in
// node_modules or hidden directories), and whether they call session.complete(). Files too large
// to be hand-written code (a bundle) are not read.
func (l *linter) jsClients(dir string, tn *toolsNamed) (clients []client, usesComplete bool) {
	files := 0
	_ = fs.WalkDir(l.fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if p != dir && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
				return fs.SkipDir
			}
			return nil
		}
		if !isJS(p) || !d.Type().IsRegular() {
			return nil
		}
		if info, err := d.Info(); err != nil || info.Size() > MaxFileSize {
			return nil
		}
		if files++; files > maxCodeFiles {
			return fs.SkipAll
		}
		data, st := l.read(p)
		if st != fileOK {
			return nil
		}
		src := string(data)
		tn.see(src)
		code := jsCode(src)
		usesComplete = usesComplete || completeCall().MatchString(code)
		for _, c := range findClients(p, code, jsPatterns) {
			if c.responses {
				c.fix = "use Chat Completions (client.chat.completions.create, or Strands' OpenAIModel with api: \"chat\")"
			}
			clients = append(clients, c)
		}
		clients = append(clients, strandsResponses(p, src, code)...)
		return nil
	})
	return clients, usesComplete
}

// strandsResponses finds Strands' OpenAIModel built with options that do not say api: "chat": its
// default is the Responses API. Only options written in place (an object literal) are judged.
func strandsResponses(file, src, code string) []client {
	var out []client
	for _, loc := range strandsOpenAIModel().FindAllStringIndex(code, -1) {
		open := loc[1] - 1
		end := matchingBrace(code, open)
		options := src[open:end]
		if apiChat().MatchString(options) {
			continue
		}
		c := client{name: "OpenAIModel", file: file, responses: true,
			fix: "give it api: \"chat\" (its default is the Responses API)"}
		if !apiOption().MatchString(jsCode(options)) {
			c.name = "OpenAIModel` without `api: \"chat\""
		}
		c.line, c.col = lineCol(code, loc[0]+strings.Index(code[loc[0]:], "OpenAIModel"))
		out = append(out, c)
	}
	return out
}

// matchingBrace is the end (exclusive) of the braced block that opens at code[open], or the end
// of code; code has its strings and comments blanked.
func matchingBrace(code string, open int) int {
	depth := 0
	for i := open; i < len(code); i++ {
		switch code[i] {
		case '{':
			depth++
		case '}':
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return len(code)
}

// jsCode blanks the comments and the string, template and regular expression literals of
// JavaScript or TypeScript source, keeping every newline and the length of each line, so that
// names in prose are not taken for code and positions stay true. A / starts a regular expression
// where an operand is expected (after an operator, a bracket, a comma or a keyword such as
// return), else it is division.
func jsCode(src string) string {
	b := []byte(src)
	blank := func(from, to int) {
		for k := from; k < min(to, len(b)); k++ {
			if b[k] != '\n' {
				b[k] = ' '
			}
		}
	}
	// prev is the last byte of code seen (not space), for telling a regular expression from a
	// division; word is the identifier or keyword that ends there, if any.
	var prev byte
	word := ""
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			j := i
			for j < len(b) && b[j] != '\n' {
				j++
			}
			blank(i, j)
			i = j
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			j := strings.Index(src[i+2:], "*/")
			end := len(b)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			blank(i, end)
			i = end
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(b) {
				if b[j] == '\\' {
					j += 2
					continue
				}
				if b[j] == c {
					j++
					break
				}
				if c != '`' && b[j] == '\n' {
					break // an unclosed string ends with its line
				}
				j++
			}
			blank(i, j)
			i = j
			prev, word = c, ""
		case c == '/' && regexAllowed(prev, word):
			j := i + 1
			inClass := false
			for j < len(b) && b[j] != '\n' {
				if b[j] == '\\' {
					j += 2
					continue
				}
				if b[j] == '[' {
					inClass = true
				} else if b[j] == ']' {
					inClass = false
				} else if b[j] == '/' && !inClass {
					j++
					break
				}
				j++
			}
			blank(i, j)
			i = j
			prev, word = '/', ""
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		default:
			if isIdentByte(c) {
				j := i
				for j < len(b) && isIdentByte(b[j]) {
					j++
				}
				prev, word = b[j-1], src[i:j]
				i = j
				continue
			}
			prev, word = c, ""
			i++
		}
	}
	return string(b)
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// regexAllowed reports whether a / after prev (and the word ending there) starts a regular
// expression: where an operand is expected.
func regexAllowed(prev byte, word string) bool {
	switch word {
	case "":
	case "return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw", "case", "do", "else", "yield", "await":
		return true
	default:
		return false // an identifier or a number: division
	}
	return prev == 0 || strings.IndexByte("(,=:[!&|?{};+-*%<>~^", prev) >= 0
}

// NodeLock is a Node package manager's lock file, and the command that installs what it pins.
type NodeLock struct{ File, Install string }

// NodeLocks are the lock files a Node plugin may pin its dependencies with, npm's first.
var NodeLocks = []NodeLock{
	{"package-lock.json", "npm ci"},
	{"npm-shrinkwrap.json", "npm ci"},
	{"yarn.lock", "yarn install --frozen-lockfile"},
	{"pnpm-lock.yaml", "pnpm install --frozen-lockfile"},
	{"bun.lock", "bun install --frozen-lockfile"},
	{"bun.lockb", "bun install --frozen-lockfile"},
}

// lintPackageJSON checks a Node plugin's package.json: that it parses, that the packages its
// sessions run (dependencies, optionalDependencies) are pinned to one version, and that a lock
// file pins what they depend on.
func (l *linter) lintPackageJSON() {
	const file = PackageJSONFile
	data, st := l.read(file)
	if st != fileOK {
		return
	}
	if l.notText(file, data) {
		return
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		line, col := 1, 1
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			line, col = position(data, int(min(se.Offset, int64(len(data)))))
		case errors.As(err, &te):
			line, col = position(data, int(min(te.Offset, int64(len(data)))))
		}
		l.add(file, line, col, diag.JSONSyntax, "package.json does not parse as a JSON object: %s", composed(oneLine(err.Error())))
		return
	}
	sections := []string{"dependencies", "optionalDependencies"}
	pinnedAny := false
	for _, section := range sections {
		deps, _ := doc[section].(map[string]any)
		for _, name := range sortedKeys(deps) {
			pinnedAny = true
			spec, ok := deps[name].(string)
			if !ok || npmPinned(spec) {
				continue
			}
			line, col := jsonKeyPosition(data, section, name)
			l.add(file, line, col, diag.UnpinnedDependency, "`%s` is `%s` in package.json %s, not one version; pin it exactly (npm install --save-exact %s@X.Y.Z) and commit package-lock.json", name, spec, section, name)
		}
	}
	if !pinnedAny {
		return
	}
	for _, lock := range NodeLocks {
		if _, err := fs.Stat(l.fsys, lock.File); err == nil {
			return
		}
	}
	l.add(file, 1, 1, diag.LockMissing, "package.json has dependencies but the plugin has no lock file: what they depend on is not pinned; run npm install and commit package-lock.json")
}

func sortedKeys(m map[string]any) []string {
	keys := slices.Sorted(maps.Keys(m))
	return keys
}

var (
	npmExact   = lazyre.New(`^=?v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	npmGitHash = lazyre.New(`#[0-9a-f]{7,40}$`)
)

// npmPinned reports whether an npm dependency's spec names one version: an exact version (an
// npm: alias of one included), a git reference by commit, a tarball, or a package of the plugin's
// own (file:, link:, workspace:).
func npmPinned(spec string) bool {
	spec = strings.TrimSpace(spec)
	if alias, ok := strings.CutPrefix(spec, "npm:"); ok {
		at := strings.LastIndexByte(alias, '@')
		return at > 0 && npmExact().MatchString(alias[at+1:])
	}
	for _, local := range []string{"file:", "link:", "workspace:"} {
		if strings.HasPrefix(spec, local) {
			return true
		}
	}
	if strings.Contains(spec, "://") || strings.HasPrefix(spec, "github:") || strings.Contains(spec, "/") {
		return npmGitHash().MatchString(spec) || strings.HasSuffix(spec, ".tgz") || strings.HasSuffix(spec, ".tar.gz")
	}
	return npmExact().MatchString(spec)
}

// jsonKeyPosition finds where key is written in the object under section, the first level of a
// JSON document; (1, 1) when it cannot be told.
func jsonKeyPosition(data []byte, section, key string) (line, col int) {
	type frame struct {
		object, expectKey bool
		key               string // the last key read in this object
	}
	var stack []frame
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return 1, 1
		}
		d, delim := tok.(json.Delim)
		n := len(stack)
		switch {
		case delim && (d == '}' || d == ']'):
			stack = stack[:n-1]
			if n > 1 && stack[n-2].object {
				stack[n-2].expectKey = true
			}
		case n > 0 && stack[n-1].object && stack[n-1].expectKey:
			k, _ := tok.(string)
			stack[n-1].key, stack[n-1].expectKey = k, false
			if n == 2 && stack[0].key == section && k == key {
				quoted, _ := json.Marshal(key)
				if at := bytes.Index(data[before:], quoted); at >= 0 {
					return position(data, int(before)+at)
				}
				return 1, 1
			}
		case delim:
			stack = append(stack, frame{object: d == '{', expectKey: d == '{'})
		case n > 0 && stack[n-1].object:
			stack[n-1].expectKey = true
		}
	}
}
