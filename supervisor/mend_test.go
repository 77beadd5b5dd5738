package supervisor

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/internal/testbin"
)

func TestDistribution(t *testing.T) {
	for module, want := range map[string]string{
		"requests": "requests", "google.adk": "google-adk", "yaml": "pyyaml", "langchain_core": "langchain-core",
		"google.protobuf": "protobuf", "PIL.Image": "pillow",
	} {
		if got := Distribution(module); got != want {
			t.Errorf("Distribution(%s) = %s, want %s", module, got, want)
		}
	}
}

func TestPyprojectDependencies(t *testing.T) {
	dir := t.TempDir()
	if got := PyprojectDependencies(dir); got != nil {
		t.Errorf("no pyproject.toml: %q", got)
	}
	testbin.WriteFiles(t, dir, map[string]string{"pyproject.toml": "[project\nbroken"})
	if got := PyprojectDependencies(dir); got != nil {
		t.Errorf("a broken pyproject.toml: %q", got)
	}
	testbin.WriteFiles(t, dir, map[string]string{"pyproject.toml": "[project]\ndependencies = [\"google-genai==1.0\", \"google-adk==1.2.0\", \"PyYAML>=6\"]\n"})
	if got := PyprojectDependencies(dir); !slices.Equal(got, []string{"google-genai==1.0", "google-adk==1.2.0", "PyYAML>=6"}) {
		t.Errorf("PyprojectDependencies = %q", got)
	}
	for module, want := range map[string]string{"google.adk": "google-adk==1.2.0", "google": "google-genai==1.0", "yaml": "PyYAML>=6", "requests": ""} {
		if got := PyprojectListed(dir, module); got != want {
			t.Errorf("PyprojectListed(%s) = %q, want %q", module, got, want)
		}
	}
}

// One mend for a module a session cannot find, from the line of the error a job failed with, as
// oz0 doctor says it before: synced when a dependency provides it, added when none does, added to
// the plugin when it is the plugin's own.
func TestMissingMend(t *testing.T) {
	dir := t.TempDir()
	testbin.WriteFiles(t, dir, map[string]string{
		"pyproject.toml":       "[project]\nname = \"acme\"\ndependencies = [\"google-adk==1.2.0\"]\n",
		"src/acme/__init__.py": "",
		"package.json":         `{"dependencies": {"@strands-agents/sdk": "1.0.0"}, "devDependencies": {"typescript": "5"}}`,
	})
	for missing, want := range map[string]string{
		"ModuleNotFoundError: No module named 'requests'":                                         "run `uv add requests` in " + dir + " (the distribution that provides requests, if its name differs)",
		"ModuleNotFoundError: No module named 'yaml'":                                             "run `uv add pyyaml` in " + dir,
		"ModuleNotFoundError: No module named 'google.adk'":                                       "run `uv sync` in " + dir,
		"ModuleNotFoundError: No module named 'acme.tools'":                                       "add acme.tools to the plugin",
		"ImportError: cannot import name 'x' from 'y'":                                            "run `uv sync` in " + dir,
		"Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'zod' imported from /p/src/main.mjs":   "run `npm install zod` in " + dir,
		"Error [ERR_MODULE_NOT_FOUND]: Cannot find package '@strands-agents/sdk' imported from x": "run `npm ci` in " + dir,
		"Error: Cannot find module '@aws/thing/sub'":                                              "run `npm install @aws/thing` in " + dir,
		"Error: Cannot find module './tools.mjs'":                                                 "add ./tools.mjs to the plugin",
		"Error: Cannot find module '/p/node_modules/typescript/lib/x.js'":                         "run `npm ci` in " + dir,
	} {
		if got := MissingMend(dir, missing); !strings.HasPrefix(got, want) {
			t.Errorf("MissingMend(%q) = %s, want %s…", missing, got, want)
		}
	}
	// Without a pyproject.toml, uv add has no project to add to.
	os.Remove(filepath.Join(dir, "pyproject.toml"))
	if got := MissingMend(dir, "ModuleNotFoundError: No module named 'requests'"); !strings.Contains(got, "uv init --bare") {
		t.Errorf("without pyproject.toml: %s", got)
	}
}
