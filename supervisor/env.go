package supervisor

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/internal/textclip"
)

// Env is what the node puts in a session's environment beyond the session's own directories
// (rule 6). Every session gets exactly PATH, HOME (the state directory), LANG, TMPDIR (inside the
// state directory), PYTHONUNBUFFERED=1, ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY, OPENAI_BASE_URL,
// OPENAI_API_KEY, OZ0_JOB and OZ0_AGENT (from the request), ANTHROPIC_CUSTOM_HEADERS and
// OPENAI_CUSTOM_HEADERS (the Oz0-Job and Oz0-Agent headers, which Anthropic's and OpenAI's SDKs
// add to every call, so a framework's model client sends them unasked), and — for a Python
// harness only — PYTHONPATH (the plugin's src/); and, when the node receives spans, TRACEPARENT,
// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_EXPORTER_OTLP_HEADERS and
// OTEL_SERVICE_NAME (Env.OTLPEndpoint). A variable whose value would be empty is left out. Nothing of the node's own environment is passed on but its PATH when Env.PATH is empty.
type Env struct {
	// PATH is the session's PATH; "" is the node's PATH, or DefaultPATH when that is empty. For a
	// Python harness run from the plugin's .venv, .venv/bin is put first.
	PATH string
	// LANG is the session's LANG; "" is DefaultLANG.
	LANG string
	// The gateway's faces and the session's own key (never the tenant's provider key).
	AnthropicBaseURL string
	AnthropicAPIKey  string
	OpenAIBaseURL    string
	OpenAIAPIKey     string
	// The node's OTLP receiver, for the session's own spans (its framework's): TRACEPARENT (the
	// W3C trace context naming the job's span, the parent of the session's spans),
	// OTEL_EXPORTER_OTLP_ENDPOINT (with OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf) and
	// OTEL_EXPORTER_OTLP_HEADERS (the session's key, as the receiver takes it), and
	// OTEL_SERVICE_NAME (the agent). Empty: none of them.
	Traceparent  string
	OTLPEndpoint string
	OTLPHeaders  string
}

// The defaults of Env.
const (
	DefaultPATH = "/usr/local/bin:/usr/bin:/bin"
	DefaultLANG = "C.UTF-8"
)

// AllowedEnv lists the names a session's environment may hold, PYTHONPATH included.
var AllowedEnv = []string{
	"PATH", "HOME", "LANG", "TMPDIR", "PYTHONUNBUFFERED",
	"ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY",
	"OZ0_JOB", "OZ0_AGENT", "ANTHROPIC_CUSTOM_HEADERS", "OPENAI_CUSTOM_HEADERS", "PYTHONPATH",
	"TRACEPARENT", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_SERVICE_NAME",
}

// resolveCommand returns the session's argv and environment, for a session whose state
// directory is stateDir. The program resolves, in order:
//
//   - Python (python, python3, python3.N): the plugin's .venv/bin/python when it exists (with
//     .venv/bin first on PATH), else the program, or python3, on the session's PATH; either way
//     with the plugin's src/ on PYTHONPATH when the plugin has one.
//   - a path with a slash: relative to the plugin directory unless absolute.
//   - a bare name: looked up on the session's PATH (not the node's).
//
// The file an interpreter runs (ScriptArg: node harness.mjs, deno run main.ts) is relative to
// the plugin directory too, since the session runs in an empty working directory of its own.
func resolveCommand(argv []string, pluginDir, stateDir string, e Env, req *harnesskit.SessionRequest) ([]string, []string, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, nil, errors.New("the harness has no command")
	}
	path := e.PATH
	if path == "" {
		path = os.Getenv("PATH")
	}
	if path == "" {
		path = DefaultPATH
	}
	lang := e.LANG
	if lang == "" {
		lang = DefaultLANG
	}
	var pythonPath string
	name := argv[0]
	var exe string
	switch {
	case IsPython(name) && !strings.ContainsRune(name, '/'):
		var err error
		if exe, path, pythonPath, err = PythonEnv(name, pluginDir, path); err != nil {
			return nil, nil, err
		}
	case strings.ContainsRune(name, '/'):
		exe = name
		if !filepath.IsAbs(exe) {
			exe = filepath.Join(pluginDir, exe)
		}
		if !isExecutable(exe) {
			return nil, nil, fmt.Errorf("the harness command %s is not an executable file (%s)", name, exe)
		}
	default:
		if exe = lookPath(name, path); exe == "" {
			return nil, nil, fmt.Errorf("the harness command %s is not on the session's PATH (%s)", name, path)
		}
	}
	args := append([]string{exe}, argv[1:]...)
	if i := ScriptArg(argv); i > 0 && !filepath.IsAbs(args[i]) {
		args[i] = filepath.Join(pluginDir, args[i])
	}
	env := []string{
		"PATH=" + path,
		"HOME=" + stateDir,
		"LANG=" + lang,
		"TMPDIR=" + filepath.Join(stateDir, "tmp"),
		"PYTHONUNBUFFERED=1",
	}
	add := func(k, v string) {
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	add("ANTHROPIC_BASE_URL", e.AnthropicBaseURL)
	add("ANTHROPIC_API_KEY", e.AnthropicAPIKey)
	add("OPENAI_BASE_URL", e.OpenAIBaseURL)
	add("OPENAI_API_KEY", e.OpenAIAPIKey)
	add("OZ0_JOB", req.Job)
	add("OZ0_AGENT", req.Agent)
	if req.Job != "" && req.Agent != "" {
		headers := "Oz0-Job: " + req.Job + "\nOz0-Agent: " + req.Agent
		add("ANTHROPIC_CUSTOM_HEADERS", headers)
		add("OPENAI_CUSTOM_HEADERS", headers)
	}
	add("PYTHONPATH", pythonPath)
	if e.OTLPEndpoint != "" {
		add("TRACEPARENT", e.Traceparent)
		add("OTEL_EXPORTER_OTLP_ENDPOINT", e.OTLPEndpoint)
		add("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
		add("OTEL_EXPORTER_OTLP_HEADERS", e.OTLPHeaders)
		add("OTEL_SERVICE_NAME", req.Agent)
	}
	return args, env, nil
}

// PythonEnv is how a session runs the Python program (python, python3, python3.N) of a harness of
// the plugin in pluginDir, with the session's PATH path: the plugin's .venv/bin/python when it
// exists (with .venv/bin first on PATH), else program, or python3, on path; and PYTHONPATH, the
// plugin's src/ when it has one. oz0 doctor imports a harness's modules with the same.
func PythonEnv(program, pluginDir, path string) (exe, sessionPath, pythonPath string, err error) {
	sessionPath = path
	venvBin := filepath.Join(pluginDir, ".venv", "bin")
	if py := filepath.Join(venvBin, "python"); isExecutable(py) {
		exe = py
		sessionPath = venvBin + string(os.PathListSeparator) + path
	} else if exe = cmpOr(lookPath(program, path), lookPath("python3", path)); exe == "" {
		return "", "", "", fmt.Errorf("the harness command is %s, but the plugin has no .venv (run `uv sync` in %s) and there is no %s on the PATH %s", program, pluginDir, program, path)
	}
	if src := filepath.Join(pluginDir, "src"); isDir(src) {
		pythonPath = src
	}
	return exe, sessionPath, pythonPath, nil
}

// InstallMend says how to install the dependencies of the plugin in dir that a harness imports:
// uv sync for a Python plugin, npm ci for a Node one. oz0 plugin test, oz0 doctor and a job that
// failed on a missing module say the same.
func InstallMend(dir string, python bool) string {
	if python {
		return "run `uv sync` in " + dir + " (without uv: python3 -m venv .venv && .venv/bin/pip install -e .)"
	}
	return "run `npm ci` in " + dir
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

// lookPath finds name in the directories of path, like exec.LookPath but with the session's PATH
// rather than the node's; empty entries (the current directory) are skipped.
func lookPath(name, path string) string {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p
		}
	}
	return ""
}

func isExecutable(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0
}

func isDir(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.IsDir()
}

// removeAll removes dir, making unwritable directories in it writable first.
func removeAll(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
