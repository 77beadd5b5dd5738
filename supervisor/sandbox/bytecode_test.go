package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pythonBinary is the interpreter the machine's python3 runs (pyenv's is a shim), its links
// followed: an interpreter's binary.
func pythonBinary(t *testing.T) (exe, version string) {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable); print('%d.%d' % sys.version_info[:2])").Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	lines := strings.Fields(string(out))
	exe, err = filepath.EvalSymlinks(lines[0])
	if err != nil || !IsBinary(exe) {
		t.Fatalf("python3 (%s) is not a binary: %v", exe, err)
	}
	return exe, lines[1]
}

func writeFiles(t *testing.T, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func pycs(t *testing.T, dir string) []string {
	t.Helper()
	found, _ := filepath.Glob(filepath.Join(dir, "__pycache__", "*.pyc"))
	return found
}

// The plugin's own modules get their bytecode where Python looks for it, compiled by the
// interpreter its .venv links to; a link out of the plugin is not followed, a module that does
// not compile is left to the session, and the plugin's .venv (pyvenv.cfg, a sitecustomize of
// src/) runs nothing.
func TestCompileSourceWritesTheBytecodeOfThePluginsModules(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	mark := filepath.Join(outside, "ran")
	src := filepath.Join(dir, "src")
	exe, version := pythonBinary(t)
	writeFiles(t, map[string]string{
		filepath.Join(src, "pkg", "__init__.py"):    "",
		filepath.Join(src, "pkg", "harness.py"):     "def main():\n    return 1\n",
		filepath.Join(src, "pkg", "broken.py"):      "def (:\n",
		filepath.Join(src, "sitecustomize.py"):      "open(" + quote(mark) + ", 'w').write('sitecustomize')\n",
		filepath.Join(outside, "elsewhere", "x.py"): "X = 1\n",
		// A .venv whose pyvenv.cfg has an interpreter started through it take its standard
		// library from the plugin.
		filepath.Join(dir, ".venv", "pyvenv.cfg"):                                       "home = " + filepath.Join(dir, "evil", "bin") + "\n",
		filepath.Join(dir, "evil", "lib", "python"+version, "os.py"):                    "",
		filepath.Join(dir, "evil", "lib", "python"+version, "encodings", "__init__.py"): "import _io\n_io.open(" + quote(mark) + ", 'w').write('its standard library')\n",
	})
	if err := os.Symlink(filepath.Join(outside, "elsewhere"), filepath.Join(src, "pkg", "linked")); err != nil {
		t.Fatal(err)
	}
	python := filepath.Join(dir, ".venv", "bin", "python")
	os.MkdirAll(filepath.Dir(python), 0o755)
	if err := os.Symlink(exe, python); err != nil {
		t.Fatal(err)
	}
	if err := CompileSource(python, dir, []string{src}); err != nil {
		t.Error(err)
	}
	if got := pycs(t, filepath.Join(src, "pkg")); len(got) != 2 {
		t.Errorf("the package's bytecode is %v; want __init__'s and harness's", got)
	}
	if got := pycs(t, filepath.Join(outside, "elsewhere")); len(got) > 0 {
		t.Errorf("bytecode was written out of the plugin, through a link: %v", got)
	}
	if b, err := os.ReadFile(mark); err == nil {
		t.Errorf("the plugin's code ran outside a session: %q", b)
	}
}

// A .venv/bin/python that is the plugin's own (a script) is never run outside a session.
func TestCompileSourceRunsNoInterpreterOfThePlugins(t *testing.T) {
	dir := t.TempDir()
	mark := filepath.Join(t.TempDir(), "ran")
	python := filepath.Join(dir, ".venv", "bin", "python")
	writeFiles(t, map[string]string{
		python: "#!/bin/sh\ntouch " + mark + "\n",
		filepath.Join(dir, "src", "pkg", "__init__.py"): "",
	})
	if err := CompileSource(python, dir, []string{filepath.Join(dir, "src")}); err == nil {
		t.Error("a script of the plugin's was taken as its interpreter")
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("the plugin's .venv/bin/python ran outside a session")
	}
}

func quote(s string) string { return "'" + s + "'" }

// An edit saved in the second the module was compiled, to a file of the same size, is what the
// next import runs: the bytecode is checked against its source's hash, not its time and size.
func TestCompiledBytecodeDoesNotHideAnEdit(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	mod := filepath.Join(src, "mod.py")
	writeFiles(t, map[string]string{mod: "V = 1\n"})
	exe, _ := pythonBinary(t)
	python := filepath.Join(dir, ".venv", "bin", "python")
	os.MkdirAll(filepath.Dir(python), 0o755)
	if err := os.Symlink(exe, python); err != nil {
		t.Fatal(err)
	}
	if err := CompileSource(python, dir, []string{src}); err != nil {
		t.Fatal(err)
	}
	if len(pycs(t, src)) != 1 {
		t.Fatal("mod.py was not compiled")
	}
	info, err := os.Stat(mod)
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, map[string]string{mod: "V = 2\n"})
	if err := os.Chtimes(mod, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(exe, "-B", "-c", "import sys; sys.path.insert(0, sys.argv[1]); import mod; print(mod.V)", src).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "2" {
		t.Errorf("the edited module imported as %q (%v); want V = 2", out, err)
	}
}
