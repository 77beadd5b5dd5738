package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// steps returns the plan's steps as "kind dst" strings.
func steps(t *testing.T, c Config) []string {
	t.Helper()
	ops, err := c.plan()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range ops {
		out = append(out, o.Kind+" "+o.Dst)
	}
	return out
}

func TestPlanShowsHidesAndOrders(t *testing.T) {
	tmp := t.TempDir()
	plugin := filepath.Join(tmp, "plug")
	state := filepath.Join(plugin, ".oz0", "dev")
	work := filepath.Join(tmp, "session", "work")
	elsewhere := filepath.Join(tmp, "elsewhere")
	for _, d := range []string{state, work, elsewhere} {
		os.MkdirAll(d, 0o755)
	}
	got := steps(t, Config{Tier: Standard, PluginDir: plugin, Writable: []string{work}, Hide: []string{state, elsewhere}})
	for _, want := range []string{"devfs /dev", "proc /proc", "tmpfs /tmp", "ro " + plugin, "rw " + work, "hide " + state} {
		if !slices.Contains(got, want) {
			t.Errorf("the plan has no %q:\n%s", want, strings.Join(got, "\n"))
		}
	}
	// What nothing shown holds needs no hiding; a hidden path comes after what holds it.
	if slices.Contains(got, "hide "+elsewhere) {
		t.Errorf("the plan hides %s, which nothing shows", elsewhere)
	}
	if slices.Index(got, "hide "+state) < slices.Index(got, "ro "+plugin) {
		t.Errorf("the state is hidden before the plugin is shown:\n%s", strings.Join(got, "\n"))
	}
}

func TestPlanRefusesToHideWhatTheSessionNeeds(t *testing.T) {
	tmp := t.TempDir()
	plugin := filepath.Join(tmp, "state", "plug")
	os.MkdirAll(plugin, 0o755)
	_, err := (&Config{Tier: Standard, PluginDir: plugin, Hide: []string{filepath.Join(tmp, "state")}}).plan()
	if err == nil || !strings.Contains(err.Error(), "it holds "+plugin) {
		t.Errorf("err %v, want a refusal naming the plugin", err)
	}
}

func TestDependencyPaths(t *testing.T) {
	tmp, _ := filepath.EvalSymlinks(t.TempDir())
	workspace := filepath.Join(tmp, "repo")
	plugin := filepath.Join(workspace, "plugins", "acme")
	shared := filepath.Join(tmp, "cache", "node_modules")
	venv := filepath.Join(tmp, "venvs", "acme")
	for _, d := range []string{filepath.Join(workspace, "node_modules"), plugin, shared, venv} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(venv, "pyvenv.cfg"), []byte("home = /usr/bin\n"), 0o644)
	os.Symlink(shared, filepath.Join(plugin, "node_modules"))
	os.Symlink(venv, filepath.Join(plugin, ".venv"))
	got, err := DependencyPaths(plugin)
	want := []string{venv, shared, filepath.Join(workspace, "node_modules")}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("DependencyPaths: %v, %v, want the linked .venv and node_modules, then the workspace's node_modules: %v", got, err, want)
	}
	plan := steps(t, Config{Tier: Standard, PluginDir: plugin})
	for _, p := range want {
		if !slices.Contains(plan, "ro "+p) {
			t.Errorf("the plan does not show %s:\n%s", p, strings.Join(plan, "\n"))
		}
	}
	// A plugin with its own, real node_modules and no workspace needs nothing more.
	alone := filepath.Join(tmp, "alone")
	os.MkdirAll(filepath.Join(alone, "node_modules"), 0o755)
	if got, err := DependencyPaths(alone); err != nil || len(got) != 0 {
		t.Errorf("a plugin with its own node_modules: %v, %v, want nothing", got, err)
	}
}

func TestInstallPaths(t *testing.T) {
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "python", "bin")
	lib := filepath.Join(tmp, "python", "lib")
	os.MkdirAll(bin, 0o755)
	os.MkdirAll(lib, 0o755)
	exe := filepath.Join(bin, "python3.12")
	os.WriteFile(exe, nil, 0o755)
	venv := filepath.Join(tmp, "plug", ".venv", "bin")
	os.MkdirAll(venv, 0o755)
	os.Symlink(exe, filepath.Join(venv, "python"))
	got := InstallPaths(filepath.Join(venv, "python"))
	real, _ := filepath.EvalSymlinks(bin)
	realLib, _ := filepath.EvalSymlinks(lib)
	if !slices.Equal(got, []string{real, realLib}) {
		t.Errorf("InstallPaths of a venv's python: %v, want its installation's bin and lib", got)
	}
	home := filepath.Join(tmp, "home")
	os.MkdirAll(home, 0o755)
	t.Setenv("HOME", home)
	prog := filepath.Join(home, "a-program")
	os.WriteFile(prog, nil, 0o755)
	realProg, _ := filepath.EvalSymlinks(prog)
	if got := InstallPaths(prog); !slices.Equal(got, []string{realProg}) {
		t.Errorf("a program in the home: %v, want the program alone: the home is never shown", got)
	}
}

func TestListenAddrs(t *testing.T) {
	got, err := ListenAddrs("http://127.0.0.1:7311/gateway/anthropic", "http://127.0.0.1:7311/gateway/openai")
	if err != nil || !slices.Equal(got, []string{"127.0.0.1:7311"}) {
		t.Errorf("got %v, %v", got, err)
	}
	if got, _ := ListenAddrs("http://localhost:80/x"); !slices.Equal(got, []string{"127.0.0.1:80", "[::1]:80"}) {
		t.Errorf("localhost: %v", got)
	}
	for _, bad := range []string{"https://127.0.0.1:1", "http://10.0.0.1:80/x", ""} {
		if _, err := ListenAddrs(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// A plugin's links are its author's: a .venv or node_modules that leads anywhere but to what it
// claims to be, or to a directory of the host's own, is refused, and the plan says where it leads,
// why, and how to mend it.
func TestDependencyLinksRefused(t *testing.T) {
	tmp, _ := filepath.EvalSymlinks(t.TempDir())
	home := filepath.Join(tmp, "home")
	tmpRoot := filepath.Join(tmp, "tmproot")
	notVenv := filepath.Join(tmp, "secrets")
	homeModules := filepath.Join(home, "node_modules")
	for _, d := range []string{filepath.Join(home, ".ssh"), tmpRoot, notVenv, homeModules, filepath.Join(tmp, "ws", "node_modules")} {
		os.MkdirAll(d, 0o755)
	}
	t.Setenv("HOME", home)
	t.Setenv("TMPDIR", tmpRoot)
	cases := []struct {
		name, target, why, mend string
	}{
		{"node_modules", home, "it is your home directory or holds it", "npm install"},
		{"node_modules", tmp, "it is your home directory or holds it", "npm install"},
		{"node_modules", tmpRoot, "it is the temporary directory's root", "npm install"},
		{"node_modules", "/proc", "it is in /proc, the host's own", "npm install"},
		{"node_modules", "/", "it is the root of the filesystem", "npm install"},
		{"node_modules", notVenv, "must lead to a directory named node_modules", "npm install"},
		{"node_modules", "..", "it holds the plugin's directory", "npm install"},
		{".venv", notVenv, "it is not a Python virtual environment (it has no pyvenv.cfg)", "make .venv a virtual environment: uv sync"},
		{".venv", "/sys", "it is in /sys, the host's own", "uv sync"},
		{".venv", "/run", "it is in /run, the host's own", "uv sync"},
		{".venv", home, "it is your home directory or holds it", "uv sync"},
	}
	for i, tc := range cases {
		plugin := filepath.Join(tmp, "ws", fmt.Sprintf("plug%d", i))
		os.MkdirAll(plugin, 0o755)
		link := filepath.Join(plugin, tc.name)
		if err := os.Symlink(tc.target, link); err != nil {
			t.Fatal(err)
		}
		if !isDir(link) {
			continue // the host has no such directory (/run)
		}
		_, err := (&Config{Tier: Standard, PluginDir: plugin}).plan()
		var le *LinkError
		if !errors.As(err, &le) {
			t.Errorf("%s -> %s: err %v, want a refusal", tc.name, tc.target, err)
			continue
		}
		msg := err.Error()
		for _, want := range []string{"the sandbox does not show " + link + ", a link to " + realPath(link), tc.why, tc.mend} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s -> %s: %q does not say %q", tc.name, tc.target, msg, want)
			}
		}
	}
	// A workspace's node_modules (a parent's) that is a link is held to the same rule.
	ws := filepath.Join(tmp, "ws2")
	plugin := filepath.Join(ws, "plug")
	os.MkdirAll(plugin, 0o755)
	os.Symlink("/proc", filepath.Join(ws, "node_modules"))
	if _, err := DependencyPaths(plugin); err == nil || !strings.Contains(err.Error(), "/proc") {
		t.Errorf("a workspace's node_modules linked to /proc: %v, want a refusal", err)
	}
	// What a link legitimately is stays shown: a node_modules in the home, a virtual environment.
	ok := filepath.Join(tmp, "ok")
	venv := filepath.Join(tmp, "venvs", "ok")
	os.MkdirAll(ok, 0o755)
	os.MkdirAll(venv, 0o755)
	os.WriteFile(filepath.Join(venv, "pyvenv.cfg"), nil, 0o644)
	os.Symlink(homeModules, filepath.Join(ok, "node_modules"))
	os.Symlink(venv, filepath.Join(ok, ".venv"))
	if got, err := DependencyPaths(ok); err != nil || !slices.Equal(got, []string{venv, homeModules}) {
		t.Errorf("a venv and a node_modules in the home: %v, %v", got, err)
	}
}

// The program that runs the harness, when the plugin holds it and it leads outside the plugin,
// must be an interpreter in a bin directory: its installation is shown, nothing else is.
func TestProgramLinksRefused(t *testing.T) {
	tmp, _ := filepath.EvalSymlinks(t.TempDir())
	home := filepath.Join(tmp, "home")
	tools := filepath.Join(home, "secret-tools", "bin")
	base := filepath.Join(tmp, "cpython", "bin")
	tmpRoot := filepath.Join(tmp, "tmproot")
	for _, d := range []string{tools, base, filepath.Join(tmp, "cpython", "lib"), tmpRoot} {
		os.MkdirAll(d, 0o755)
	}
	t.Setenv("HOME", home)
	t.Setenv("TMPDIR", tmpRoot)
	for _, f := range []string{filepath.Join(tools, "x"), filepath.Join(tools, "python3"), filepath.Join(home, "python3"), filepath.Join(base, "python3.12"), filepath.Join(tmpRoot, "run")} {
		os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755)
	}
	plan := func(target, prog string) (string, []string, error) {
		t.Helper()
		plugin, _ := os.MkdirTemp(tmp, "plug")
		exe := filepath.Join(plugin, prog)
		os.MkdirAll(filepath.Dir(exe), 0o755)
		if err := os.Symlink(target, exe); err != nil {
			t.Fatal(err)
		}
		ops, err := (&Config{Tier: Standard, PluginDir: plugin, Argv: []string{exe}}).plan()
		var got []string
		for _, o := range ops {
			got = append(got, o.Kind+" "+o.Dst)
		}
		return exe, got, err
	}
	for _, tc := range []struct{ target, prog, why string }{
		{filepath.Join(tools, "x"), ".venv/bin/python", "must be a Python or Node interpreter"},
		{filepath.Join(tools, "x"), "harness", "must be a Python or Node interpreter"},
		{filepath.Join(tmpRoot, "run"), "run", "must be a Python or Node interpreter"},
		{filepath.Join(home, "python3"), ".venv/bin/python", "in a bin directory"},
	} {
		exe, got, err := plan(tc.target, tc.prog)
		var le *LinkError
		if !errors.As(err, &le) || !strings.Contains(err.Error(), tc.why) || !strings.Contains(err.Error(), "the sandbox does not show "+exe) {
			t.Errorf("%s -> %s: %v, want a refusal saying %q\n%s", tc.prog, tc.target, err, tc.why, strings.Join(got, "\n"))
		}
	}
	// A venv's python that links to its base interpreter: the installation is shown.
	_, got, err := plan(filepath.Join(base, "python3.12"), ".venv/bin/python")
	if err != nil || !slices.Contains(got, "ro "+base) || !slices.Contains(got, "ro "+filepath.Join(tmp, "cpython", "lib")) {
		t.Errorf("a venv's python: %v\n%s", err, strings.Join(got, "\n"))
	}
	// An interpreter's name in the home's bin is fine; the home is never shown.
	_, got, err = plan(filepath.Join(tools, "python3"), ".venv/bin/python")
	if err != nil || !slices.Contains(got, "ro "+tools) || slices.Contains(got, "ro "+home) {
		t.Errorf("a python in the home: %v\n%s", err, strings.Join(got, "\n"))
	}
	// A program outside the plugin (the user's PATH) directly in the temporary directory's root
	// is shown alone.
	if got := InstallPaths(filepath.Join(tmpRoot, "run")); !slices.Equal(got, []string{filepath.Join(tmpRoot, "run")}) {
		t.Errorf("a program in the temporary directory's root: %v, want it alone", got)
	}
}
