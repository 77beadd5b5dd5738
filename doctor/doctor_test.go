package doctor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/harnesskit/sandbox"
)

func noEnv(string) string { return "" }

func TestPythonMissingFailsWithAMend(t *testing.T) {
	r := checkPython(context.Background(), Env{LookPath: func(string) (string, error) { return "", errors.New("not found") }})
	if r.Level != Fail || !strings.Contains(r.Mend, "install Python 3.10") {
		t.Errorf("got %+v", r)
	}
}

func TestPythonTooOld(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "python3")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho Python 3.8.10\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := checkPython(context.Background(), Env{LookPath: func(string) (string, error) { return fake, nil }})
	if r.Level != Fail || !strings.Contains(r.Detail, "3.8.10") {
		t.Errorf("got %+v", r)
	}
}

func TestUVMissingIsAWarning(t *testing.T) {
	r := checkUV(context.Background(), Env{LookPath: func(string) (string, error) { return "", errors.New("not found") }})
	if r.Level != Warn || r.Mend == "" {
		t.Errorf("got %+v", r)
	}
}

func TestDevServer(t *testing.T) {
	if r := checkDevServer(context.Background(), Env{Getenv: noEnv}); r.Level != Warn {
		t.Errorf("unset: %+v", r)
	}
	dead := func(string) string { return "http://127.0.0.1:1#oz0t_abc" }
	if r := checkDevServer(context.Background(), Env{Getenv: dead}); r.Level != Fail || !strings.Contains(r.Detail, "no dev server") {
		t.Errorf("dead: %+v", r)
	}
	bad := func(string) string { return "nonsense" }
	if r := checkDevServer(context.Background(), Env{Getenv: bad}); r.Level != Fail {
		t.Errorf("bad: %+v", r)
	}
}

func TestVenvAndPlugin(t *testing.T) {
	dir := t.TempDir()
	if r := checkPlugin(Env{PluginDir: dir}); r.Level != Warn || !strings.Contains(r.Mend, "oz0 plugin new") {
		t.Errorf("no manifest: %+v", r)
	}
	// No plugin here at all: the venv check does not call it "not a Python plugin".
	os.WriteFile(filepath.Join(dir, "pyproject.toml"), []byte("[project]\nname='x'\n"), 0o644)
	if r := checkVenv(context.Background(), Env{PluginDir: dir}); r.Level != OK || r.Detail != "no plugin in "+dir+", so no venv to check" {
		t.Errorf("no plugin: %+v", r)
	}
	os.Remove(filepath.Join(dir, "pyproject.toml"))
	os.WriteFile(filepath.Join(dir, "oz0-plugin.yaml"), []byte("apiVersion: oz0/v1\n"), 0o644)
	if r := checkVenv(context.Background(), Env{PluginDir: dir}); r.Level != OK || !strings.Contains(r.Detail, "not a Python plugin") {
		t.Errorf("no pyproject: %+v", r)
	}
	os.WriteFile(filepath.Join(dir, "pyproject.toml"), []byte("[project]\nname='x'\n"), 0o644)
	if r := checkVenv(context.Background(), Env{PluginDir: dir}); r.Level != Warn || !strings.Contains(r.Mend, "uv sync") {
		t.Errorf("no venv: %+v", r)
	}
	os.MkdirAll(filepath.Join(dir, ".venv", "bin"), 0o755)
	os.WriteFile(filepath.Join(dir, ".venv", "bin", "python"), []byte("#!/bin/sh\nexit 1\n"), 0o755)
	if r := checkVenv(context.Background(), Env{PluginDir: dir}); r.Level != Fail || !strings.Contains(r.Mend, "remove .venv") {
		t.Errorf("broken venv: %+v", r)
	}
}

func TestSandbox(t *testing.T) {
	refused := &sandbox.Unavailable{Tier: sandbox.Standard, Reason: "user namespaces are disabled (sysctl user.max_user_namespaces = 0)", Mend: "sudo sysctl -w user.max_user_namespaces=15000"}
	for _, tc := range []struct {
		name             string
		standard, strict error
		level            Level
		detail, mend     string
	}{
		{"both", nil, nil, OK, "standard (oz0 dev's default) and strict work here", ""},
		{"no strict", nil, &sandbox.Unavailable{Tier: sandbox.Strict, Reason: "no loopback", Mend: "m"}, Warn, "strict does not: the strict sandbox cannot work here: no loopback", "m"},
		{"none", refused, refused, Warn, "sessions run without a sandbox (tier none): the standard sandbox cannot work here: user namespaces are disabled", "sudo sysctl -w user.max_user_namespaces=15000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := checkSandbox(Env{Sandbox: func(tier sandbox.Tier) error {
				if tier == sandbox.Standard {
					return tc.standard
				}
				return tc.strict
			}})
			if r.Level != tc.level || !strings.Contains(r.Detail, tc.detail) || r.Mend != tc.mend {
				t.Errorf("got %+v", r)
			}
		})
	}
}
