package supervisor

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/orchestrator-zero/oz0/internal/lazyre"
)

// How a harness's command line reads, for the node that runs it and for lint, which checks what
// the node will resolve: the program, the module python -m runs, and the file an interpreter runs.

var pythonProgram = lazyre.New(`^python(?:3(?:\.\d+)?)?$`)

// IsPython reports whether a command's program is Python (python, python3, python3.N): the
// plugin's .venv python when it has one.
func IsPython(program string) bool { return pythonProgram().MatchString(filepath.Base(program)) }

// PythonModule returns the module of `python [options] -m MODULE` (or -mMODULE) and its index in
// argv; "" and -1 when the command is not Python or runs no module (a script, -c code, stdin).
func PythonModule(argv []string) (module string, at int) {
	if len(argv) < 2 || !IsPython(argv[0]) {
		return "", -1
	}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "-m":
			if i+1 < len(argv) {
				return argv[i+1], i + 1
			}
			return "", -1
		case strings.HasPrefix(a, "-m"):
			return a[2:], i
		case a == "-c" || a == "-" || !strings.HasPrefix(a, "-"):
			return "", -1
		case a == "-W" || a == "-X":
			i++ // an option with a value
		}
	}
	return "", -1
}

// interpreters maps a program that runs a script to its options that end the command line (the
// code follows inline, so there is no script) and its options that take a value.
var interpreters = map[string]struct{ inline, valued []string }{
	"node":    {[]string{"-e", "--eval", "-p", "--print", "-"}, []string{"-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions"}},
	"nodejs":  {[]string{"-e", "--eval", "-p", "--print", "-"}, []string{"-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions"}},
	"bun":     {[]string{"-e", "--eval", "-p", "--print"}, []string{"-r", "--preload", "--cwd"}},
	"deno":    {[]string{"-"}, nil},
	"tsx":     {[]string{"-e", "--eval", "-p", "--print"}, []string{"--tsconfig", "--import"}},
	"ts-node": {[]string{"-e", "--eval", "-p", "--print"}, []string{"-r", "--require", "-P", "--project"}},
	"ruby":    {[]string{"-e", "-"}, []string{"-I", "-r"}},
	"perl":    {[]string{"-e", "-E", "-"}, []string{"-I", "-M", "-m"}},
	"bash":    {[]string{"-c", "-s", "-"}, []string{"-o", "-O"}},
	"sh":      {[]string{"-c", "-s", "-"}, []string{"-o"}},
	"zsh":     {[]string{"-c", "-s", "-"}, []string{"-o"}},
	"php":     {[]string{"-r", "-"}, []string{"-c", "-d"}},
}

// ScriptArg returns the index in argv of the file an interpreter runs: node harness.mjs, deno run
// main.ts, bun run index.ts, python agent.py, bash run.sh. It is -1 when the command names none:
// python -m MODULE, inline code (node -e), an unknown program (run directly), a deno subcommand
// other than run. The node resolves that file (and a program written as a path) against the
// plugin directory, as its author wrote it; other arguments are passed as they are.
func ScriptArg(argv []string) int {
	if len(argv) < 2 {
		return -1
	}
	prog := filepath.Base(argv[0])
	if IsPython(prog) {
		if _, at := PythonModule(argv); at >= 0 {
			return -1
		}
		return firstOperand(argv, 1, []string{"-c", "-m", "-"}, []string{"-W", "-X"})
	}
	it, ok := interpreters[prog]
	if !ok {
		return -1
	}
	start := 1
	switch prog {
	case "deno":
		// deno [options] run [options] FILE
		i := firstOperand(argv, 1, it.inline, it.valued)
		if i < 0 || argv[i] != "run" {
			return -1
		}
		start = i + 1
	case "bun":
		if i := firstOperand(argv, 1, it.inline, it.valued); i >= 0 && argv[i] == "run" {
			start = i + 1
		}
	}
	return firstOperand(argv, start, it.inline, it.valued)
}

// firstOperand is the index of the first argument from start that is not an option; -1 when an
// option in inline comes first (the code is inline) or there is none.
func firstOperand(argv []string, start int, inline, valued []string) int {
	for i := start; i < len(argv); i++ {
		a := argv[i]
		switch {
		case slices.Contains(inline, a):
			return -1
		case a == "--":
			if i+1 < len(argv) {
				return i + 1
			}
			return -1
		case !strings.HasPrefix(a, "-") || a == "":
			return i
		case slices.Contains(valued, a):
			i++
		}
	}
	return -1
}
