package harnesskit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Env is what the node puts in a session's environment beyond the session's own directories
// (rule 6). Every session gets exactly PATH, HOME (the state directory), LANG, TMPDIR (inside the
// state directory), PYTHONUNBUFFERED=1, ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY, OPENAI_BASE_URL,
// OPENAI_API_KEY, OZ0_JOB and OZ0_AGENT (from the request), and — for a Python harness only —
// PYTHONPATH (the plugin's src/). A variable whose value would be empty is left out. Nothing of
// the node's own environment is passed on but its PATH when Env.PATH is empty.
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
	"OZ0_JOB", "OZ0_AGENT", "PYTHONPATH",
}

// isPython reports whether a command's first word names Python, run the way a plugin author
// expects: from the plugin's virtual environment when it has one.
func isPython(name string) bool { return name == "python" || name == "python3" }

// resolveCommand returns the executable of argv[0] and the session's environment, for a session
// whose state directory is stateDir. The rules, in order:
//
//   - python or python3: the plugin's .venv/bin/python when it exists (with .venv/bin first on
//     PATH), else python3 looked up on the session's PATH; either way with the plugin's src/ on
//     PYTHONPATH when the plugin has one.
//   - a path with a slash: relative to the plugin directory unless absolute.
//   - a bare name: looked up on the session's PATH (not the node's).
func resolveCommand(argv []string, pluginDir, stateDir string, e Env, req *SessionRequest) (string, []string, error) {
	if len(argv) == 0 || argv[0] == "" {
		return "", nil, errors.New("the harness has no command")
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
	case isPython(name):
		venvBin := filepath.Join(pluginDir, ".venv", "bin")
		if py := filepath.Join(venvBin, "python"); isExecutable(py) {
			exe = py
			path = venvBin + string(os.PathListSeparator) + path
		} else if exe = lookPath("python3", path); exe == "" {
			return "", nil, fmt.Errorf("the harness command is %s, but the plugin has no .venv (run `uv sync` in %s) and there is no python3 on the PATH %s", name, pluginDir, path)
		}
		if src := filepath.Join(pluginDir, "src"); isDir(src) {
			pythonPath = src
		}
	case strings.ContainsRune(name, '/'):
		exe = name
		if !filepath.IsAbs(exe) {
			exe = filepath.Join(pluginDir, exe)
		}
		if !isExecutable(exe) {
			return "", nil, fmt.Errorf("the harness command %s is not an executable file (%s)", name, exe)
		}
	default:
		if exe = lookPath(name, path); exe == "" {
			return "", nil, fmt.Errorf("the harness command %s is not on the session's PATH (%s)", name, path)
		}
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
	add("PYTHONPATH", pythonPath)
	return exe, env, nil
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
