package supervisor

import (
	"os"
	"path/filepath"

	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

// runsInterpreter reports whether a session of command runs the interpreter that its Python
// program runs rather than the program itself: in every tier, since a sandbox hides what a
// wrapper such as pyenv's shim needs (the user's home), and the wrapper costs each session of
// tier none ~150 ms before Python starts.
func runsInterpreter(command []string) bool {
	return len(command) > 0 && IsPython(command[0])
}

// AskAhead asks, in the background, what Start(spec) would ask as the session starts (which
// interpreter the Python program on the session's PATH runs, when spec's tier runs that
// interpreter), and compiles the plugin's own modules (sandbox.CompileSource), so that the first
// sessions find it done: a node calls it when it starts and when a plugin reloads. Only Command,
// PluginDir, Env and Sandbox.Tier of spec are read. It returns at once; what goes wrong is the
// sessions' to say.
func AskAhead(spec Spec) {
	if !runsInterpreter(spec.Command) {
		return
	}
	pluginDir, err := filepath.Abs(cmpOr(spec.PluginDir, "."))
	if err != nil {
		return
	}
	// Sessions ask in their own directories under the temporary directory: its parent is as
	// near as the question can be asked before there is a session.
	dir := cmpOr(spec.TempDir, os.TempDir())
	argv, env, err := resolveCommand(spec.Command, pluginDir, dir, spec.Env, &harnesskit.SessionRequest{})
	if err != nil {
		return
	}
	sandbox.AskPythonInterpreter(argv[0], env, dir, pluginDir)
	if src := filepath.Join(pluginDir, "src"); isDir(src) {
		sandbox.CompileSourceAhead(argv[0], pluginDir, []string{src})
	}
}
