package sandbox

import (
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
	os.Symlink(shared, filepath.Join(plugin, "node_modules"))
	os.Symlink(venv, filepath.Join(plugin, ".venv"))
	got := DependencyPaths(plugin)
	want := []string{venv, shared, filepath.Join(workspace, "node_modules")}
	if !slices.Equal(got, want) {
		t.Errorf("DependencyPaths: %v, want the linked .venv and node_modules, then the workspace's node_modules: %v", got, want)
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
	if got := DependencyPaths(alone); len(got) != 0 {
		t.Errorf("a plugin with its own node_modules: %v, want nothing", got)
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
