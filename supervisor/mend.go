package supervisor

import (
	"cmp"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/orchestrator-zero/oz0/internal/lazyre"
	"github.com/orchestrator-zero/oz0/internal/textclip"
)

// What to do about a module a harness imports that its session cannot find is decided here, once:
// oz0 doctor and oz0 dev's start (supervisor/pyimports, which reads the imports before a job),
// a job that failed on it (the node) and oz0 plugin test (the conformance kit) all say ModuleMend.
// A module a dependency of the plugin provides is installed with what installs the plugin's
// dependencies (uv sync, npm ci); one that no dependency provides is added (uv add DIST, npm
// install PKG): syncing again would not install it.

// InstallMend says how to install the dependencies the plugin in dir lists: uv sync for a Python
// plugin, npm ci for a Node one.
func InstallMend(dir string, python bool) string {
	if python {
		return "run `uv sync` in " + dir + " (without uv: python3 -m venv .venv && .venv/bin/pip install -e .)"
	}
	return "run `npm ci` in " + dir
}

// ModuleMend says how to have module, which a harness of the plugin in dir imports and its
// session cannot find: Python's dotted name (google.adk) or Node's package (@scope/pkg). A module
// of the plugin's own is no dependency: it is to be added to the plugin.
func ModuleMend(dir, module string, python bool) string {
	if module == "" {
		return InstallMend(dir, python)
	}
	if !python {
		if i := strings.LastIndex(module, "/node_modules/"); i >= 0 {
			module = module[i+len("/node_modules/"):]
		}
		switch {
		case strings.HasPrefix(module, ".") || strings.HasPrefix(module, "/"):
			return "add " + module + " to the plugin, or import the file it has"
		case PackageJSONListed(dir, module):
			return InstallMend(dir, false)
		}
		return "run `npm install " + nodePackage(module) + "` in " + dir
	}
	top, _, _ := strings.Cut(module, ".")
	for _, own := range []string{filepath.Join(dir, "src", top), filepath.Join(dir, top), filepath.Join(dir, "src", top+".py"), filepath.Join(dir, top+".py")} {
		if _, err := os.Stat(own); err == nil {
			return "add " + module + " to the plugin, or import the module it has"
		}
	}
	if PyprojectListed(dir, module) != "" {
		return InstallMend(dir, true)
	}
	dist := Distribution(module)
	add := "run `uv add " + dist + "` in " + dir
	if _, err := os.Stat(filepath.Join(dir, "pyproject.toml")); err != nil {
		add = "create the plugin's pyproject.toml (`uv init --bare` in " + dir + ") and run `uv add " + dist + "` there"
	}
	return add + " (the distribution that provides " + module + ", if its name differs)"
}

// MissingMend says how to mend what MissingModule found (a line of Python's or Node's error):
// ModuleMend of the module it names.
func MissingMend(dir, missing string) string {
	python := IsPythonMissing(missing)
	return ModuleMend(dir, MissingModuleName(missing), python)
}

// missingNames find the module in Python's and Node's errors for one not installed.
var missingNames = lazyre.New(`No module named '([^']+)'|Cannot find (?:package|module) '([^']+)'`)

// MissingModuleName is the module a line of MissingModule names: requests of "ModuleNotFoundError:
// No module named 'requests'", zod of "Cannot find package 'zod' imported from …"; "" when it
// names none (an ImportError of a name inside a module).
func MissingModuleName(missing string) string {
	m := missingNames().FindStringSubmatch(missing)
	if m == nil {
		return ""
	}
	return cmp.Or(m[1], m[2])
}

// nodePackage is the package of a Node module specifier: @scope/pkg of @scope/pkg/sub, pkg of
// pkg/sub.
func nodePackage(spec string) string {
	parts := strings.SplitN(spec, "/", 3)
	if strings.HasPrefix(spec, "@") && len(parts) > 1 {
		return parts[0] + "/" + parts[1]
	}
	return parts[0]
}

// PackageJSONListed reports whether the package.json in dir lists the package of module spec
// among its dependencies or devDependencies.
func PackageJSONListed(dir, spec string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return false
	}
	var pkg struct {
		Dependencies    map[string]string `json:"dependencies"`
		DevDependencies map[string]string `json:"devDependencies"`
	}
	if json.Unmarshal(data, &pkg) != nil {
		return false
	}
	name := nodePackage(spec)
	_, dep := pkg.Dependencies[name]
	_, dev := pkg.DevDependencies[name]
	return dep || dev
}

// distributions are the PyPI distributions whose name is not the module's they provide, among
// those an agent commonly imports.
var distributions = map[string]string{
	"yaml": "pyyaml", "PIL": "pillow", "cv2": "opencv-python", "sklearn": "scikit-learn",
	"bs4": "beautifulsoup4", "dateutil": "python-dateutil", "dotenv": "python-dotenv",
	"jwt": "pyjwt", "attr": "attrs", "docx": "python-docx", "fitz": "pymupdf",
	"google.protobuf": "protobuf", "git": "gitpython", "magic": "python-magic",
}

// Distribution is the PyPI distribution that most likely provides module: google.adk is
// google-adk, yaml is pyyaml, requests is requests.
func Distribution(module string) string {
	top, _, _ := strings.Cut(module, ".")
	if d, ok := distributions[module]; ok {
		return d
	}
	if d, ok := distributions[top]; ok {
		return d
	}
	return strings.ToLower(strings.NewReplacer(".", "-", "_", "-").Replace(module))
}

// PyprojectListed is the dependency of the plugin's pyproject.toml in dir that provides module,
// by name (google.adk → google-adk==1.2.0, yaml → PyYAML>=6); "" when none does.
func PyprojectListed(dir, module string) string {
	norm := func(s string) string { return strings.ToLower(strings.NewReplacer("_", "-", ".", "-").Replace(s)) }
	top, _, _ := strings.Cut(module, ".")
	deps := PyprojectDependencies(dir)
	names := make([]string, len(deps))
	for i, d := range deps {
		names[i] = norm(requirementName().FindString(d))
	}
	// The likeliest distribution first, then any whose name starts with the top-level name's.
	for _, want := range []string{norm(Distribution(module)), norm(top)} {
		for i, name := range names {
			if name == want {
				return deps[i]
			}
		}
	}
	for i, name := range names {
		if strings.HasPrefix(name, norm(top)+"-") {
			return deps[i]
		}
	}
	return ""
}

var requirementName = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]*`)

// PyprojectDependencies is [project] dependencies of the pyproject.toml in dir; nil when it has
// none or cannot be read.
func PyprojectDependencies(dir string) []string {
	data, err := os.ReadFile(filepath.Join(dir, "pyproject.toml"))
	if err != nil {
		return nil
	}
	var doc struct {
		Project struct {
			Dependencies []string `toml:"dependencies"`
		} `toml:"project"`
	}
	if toml.Unmarshal(data, &doc) != nil {
		return nil
	}
	return doc.Project.Dependencies
}

// moduleMissingMarks are what Python's and Node's errors for a module that is not installed say.
// Python's ImportError only as its import system words it (a name missing from an installed
// module, an old release): a library raises ImportError for reasons of its own too (CrewAI's for a
// model it cannot route, a system library's for a .so that is not there), which no install of the
// plugin's dependencies mends.
var moduleMissingMarks = []string{"ModuleNotFoundError:", "ImportError: cannot import name ", "ImportError: No module named ", "ERR_MODULE_NOT_FOUND", "Cannot find package '", "Cannot find module '"}

// MissingModule is the line of text that says a module is not installed, clipped; "" when there
// is none. It prefers a line that names the module: Node's stack also says just
// code: 'ERR_MODULE_NOT_FOUND'.
func MissingModule(text string) string {
	found := ""
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		for _, mark := range moduleMissingMarks {
			if !strings.Contains(line, mark) {
				continue
			}
			if strings.Contains(line, "'") && !strings.HasPrefix(line, "code:") {
				return textclip.ClipN(line, 300)
			}
			found = cmp.Or(found, line)
		}
	}
	return textclip.ClipN(found, 300)
}

// IsPythonMissing reports whether what MissingModule found is Python's (else Node's).
func IsPythonMissing(missing string) bool {
	return strings.Contains(missing, "ModuleNotFoundError") || strings.Contains(missing, "ImportError")
}
