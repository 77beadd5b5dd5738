package supervisor_test

import (
	"testing"

	"github.com/orchestrator-zero/oz0/supervisor"
)

// A module that is not installed is told apart from a library's own ImportError, which no
// install mends: CrewAI's refusal of a model it cannot route is an ImportError too.
func TestMissingModule(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"Traceback (most recent call last):\nModuleNotFoundError: No module named 'crewai'\n", "ModuleNotFoundError: No module named 'crewai'"},
		{"ImportError: cannot import name 'LlmAgent' from 'google.adk.agents' (/p/.venv/x.py)", "ImportError: cannot import name 'LlmAgent' from 'google.adk.agents' (/p/.venv/x.py)"},
		{"ImportError: No module named _sqlite3", "ImportError: No module named _sqlite3"},
		{"ImportError: Unable to initialize LLM with model 'anthropic/fake-model'. The model did not match any supported native provider (openai, anthropic), and the LiteLLM fallback package is not installed.", ""},
		{"ImportError: Error importing native provider: ANTHROPIC_API_KEY is required", ""},
		{"ImportError: libGL.so.1: cannot open shared object file: No such file or directory", ""},
		{"ImportError: attempted relative import with no known parent package", ""},
		{"Error [ERR_MODULE_NOT_FOUND]: Cannot find package '@strands-agents/sdk' imported from /p/src/agent.mjs\n  code: 'ERR_MODULE_NOT_FOUND'", "Error [ERR_MODULE_NOT_FOUND]: Cannot find package '@strands-agents/sdk' imported from /p/src/agent.mjs"},
		{"RuntimeError: the tool failed", ""},
	} {
		if got := supervisor.MissingModule(c.text); got != c.want {
			t.Errorf("MissingModule(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}
