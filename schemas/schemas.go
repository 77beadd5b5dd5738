// Package schemas holds oz0's JSON Schemas (draft 2020-12), embedded in the
// binary, and validates YAML documents against them with source positions.
//
// Every schema file is named <name>.schema.json and has the $id
// BaseURL + <file>: the file in the repository on main, where it is
// served. A schema may $ref another one by that URL or by its relative file
// name. Schemas are compiled lazily, once per process, on first use; the
// compiler resolves BaseURL from the embedded files alone.
//
// A build of oz0 gives its schemas out (oz0 schema, the scaffold's
// yaml-language-server lines) at URLAt its own ref: a release's tag serves
// exactly the schemas that release embeds. Export rewrites the $id to match.
//
// The typical use is
//
//	root, problems := schemas.ParseYAML(data)
//	if root != nil {
//		problems = append(problems, schemas.ValidateYAML(schemas.Agent, root)...)
//	}
//
// where each diagnostic carries the 1-based line and column of the offending
// YAML node and a message a person understands.
package schemas

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/orchestrator-zero/oz0/internal/lazyre"
)

// FS holds the schema files, at its root.
//
//go:embed *.schema.json
var FS embed.FS

// RawURL serves the repository's files at a ref: RawURL + ref + "/" + path.
const RawURL = "https://raw.githubusercontent.com/orchestrator-zero/oz0/"

// Dir is the schemas' directory in the repository.
const Dir = "schemas"

// BaseURL is the prefix of every schema's $id in the files: the schemas on main. The rest is
// the file name.
const BaseURL = RawURL + "main/" + Dir + "/"

// The schema files of the plugin format.
const (
	Manifest = "oz0-plugin.schema.json" // oz0-plugin.yaml
	Agent    = "agent.schema.json"      // agents/*.yaml
	Skill    = "skill.schema.json"      // the front matter of skills/*/SKILL.md
)

// Names lists the embedded schema files, sorted.
func Names() []string {
	entries, _ := fs.ReadDir(FS, ".")
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".schema.json") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

// URL returns the $id of the schema file name.
func URL(name string) string { return BaseURL + name }

// Modeline is the first line of a YAML file whose schema is at url: an editor with the YAML
// language server checks and completes the file by it.
func Modeline(url string) string { return "# yaml-language-server: $schema=" + url + "\n" }

// URLAt returns the URL of the schema file name as the repository serves it at ref (a
// release's tag, or main).
func URLAt(ref, name string) string { return RawURL + ref + "/" + Dir + "/" + name }

// Lookup finds a schema by its file name or by that name without ".schema.json" ("agent").
func Lookup(name string) (string, bool) {
	for _, n := range Names() {
		if name == n || name+".schema.json" == n {
			return n, true
		}
	}
	return "", false
}

// Export returns the schema file name as oz0 gives it out at ref: its $id is URLAt(ref, name),
// where it is served, and every relative $ref resolves beside it.
func Export(name, ref string) ([]byte, error) {
	data, err := FS.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("schemas: no schema %q", name)
	}
	id := []byte(`"$id": "` + URL(name) + `"`)
	if !bytes.Contains(data, id) {
		return nil, fmt.Errorf("schemas: %s does not have the $id %s", name, URL(name))
	}
	return bytes.Replace(data, id, []byte(`"$id": "`+URLAt(ref, name)+`"`), 1), nil
}

// Read returns the raw bytes of the schema file name.
func Read(name string) ([]byte, error) { return FS.ReadFile(name) }

var (
	mu       sync.Mutex
	compiler *jsonschema.Compiler
	compiled = map[string]*jsonschema.Schema{}
	docs     = map[string]any{} // parsed schema documents, for annotations
)

// Compile returns the compiled schema file name (e.g. Agent). It compiles
// each schema once per process; the result is safe for concurrent use.
func Compile(name string) (*jsonschema.Schema, error) {
	mu.Lock()
	defer mu.Unlock()
	if s, ok := compiled[name]; ok {
		return s, nil
	}
	if _, err := docLocked(name); err != nil {
		return nil, err
	}
	if compiler == nil {
		compiler = newCompiler()
		// The embedded schemas are valid: TestEmbeddedSchemasAreValid validates them against
		// their metaschema and compiles their patterns. Doing it again at each command's run was
		// two thirds of the compile, and the compile most of a plugin's lint.
		compiler.TrustSchemas()
		compiler.UseRegexpEngine(lazyPattern)
	}
	s, err := compiler.Compile(URL(name))
	if err != nil {
		return nil, fmt.Errorf("schemas: compile %s: %w", name, err)
	}
	compiled[name] = s
	return s, nil
}

// newCompiler is a compiler of the embedded schemas.
func newCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(embedLoader{})
	return c
}

// lazyPattern compiles a schema's pattern on its first match: most of them meet no value in a
// command's run.
func lazyPattern(expr string) (jsonschema.Regexp, error) {
	return pattern{expr, lazyre.New(expr)}, nil
}

type pattern struct {
	expr string
	re   func() *regexp.Regexp
}

func (p pattern) MatchString(s string) bool { return p.re().MatchString(s) }
func (p pattern) String() string            { return p.expr }

// MustCompile is Compile that panics on error; the embedded schemas are
// tested, so it only fails on a programming error.
func MustCompile(name string) *jsonschema.Schema {
	s, err := Compile(name)
	if err != nil {
		panic(err)
	}
	return s
}

// doc returns the parsed JSON document of the schema file name.
func doc(name string) (any, error) {
	mu.Lock()
	defer mu.Unlock()
	return docLocked(name)
}

func docLocked(name string) (any, error) {
	if d, ok := docs[name]; ok {
		return d, nil
	}
	data, err := FS.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("schemas: no schema %q", name)
	}
	d, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("schemas: %s: %w", name, err)
	}
	docs[name] = d
	return d, nil
}

// embedLoader resolves BaseURL+file from FS and nothing else: compiling a
// schema never touches the network or the file system.
type embedLoader struct{}

func (embedLoader) Load(url string) (any, error) {
	name, ok := strings.CutPrefix(url, BaseURL)
	if !ok {
		return nil, fmt.Errorf("schemas: will not load %s: only %s* is embedded", url, BaseURL)
	}
	return docLocked(name) // called from Compile, with mu held
}

// annotation returns the keyword kw of the subschema at the absolute schema
// location loc (BaseURL+file#/json/pointer), or nil.
func annotation(loc, kw string) any {
	file, ptr, _ := strings.Cut(loc, "#")
	name, ok := strings.CutPrefix(file, BaseURL)
	if !ok {
		return nil
	}
	d, err := doc(name)
	if err != nil {
		return nil
	}
	node := d
	for _, tok := range splitPointer(ptr) {
		switch n := node.(type) {
		case map[string]any:
			node = n[tok]
		case []any:
			i := 0
			if _, err := fmt.Sscanf(tok, "%d", &i); err != nil || i < 0 || i >= len(n) {
				return nil
			}
			node = n[i]
		default:
			return nil
		}
	}
	if m, ok := node.(map[string]any); ok {
		return m[kw]
	}
	return nil
}

// propertyNames returns the names under "properties" of the subschema at
// loc, following a local $ref.
func propertyNames(loc string) []string {
	for range 4 {
		if props, ok := annotation(loc, "properties").(map[string]any); ok {
			names := make([]string, 0, len(props))
			for k := range props {
				names = append(names, k)
			}
			sort.Strings(names)
			return names
		}
		ref, ok := annotation(loc, "$ref").(string)
		if !ok || !strings.HasPrefix(ref, "#") {
			return nil
		}
		file, _, _ := strings.Cut(loc, "#")
		loc = file + ref
	}
	return nil
}

func splitPointer(ptr string) []string {
	ptr = strings.TrimPrefix(ptr, "/")
	if ptr == "" {
		return nil
	}
	toks := strings.Split(ptr, "/")
	for i, t := range toks {
		t = strings.ReplaceAll(t, "~1", "/")
		toks[i] = strings.ReplaceAll(t, "~0", "~")
	}
	return toks
}

// prettyJSON is used in messages for non-string values.
func prettyJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Title is the title of the schema file name.
func Title(name string) string {
	d, err := doc(name)
	if err != nil {
		return ""
	}
	m, _ := d.(map[string]any)
	t, _ := m["title"].(string)
	return t
}
