package sandbox

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/orchestrator-zero/oz0/internal/lowprio"
)

// compileScript compiles, with the standard library alone, each .py file under the directories
// it is given, where Python keeps its bytecode (__pycache__ beside the file). The bytecode is
// checked against a hash of its source at each import, not its time and size: an edit saved in the
// second it was compiled, to a file of the same size, is seen (a session would run the old code).
// It follows no symbolic link (a link to a directory outside the plugin would have it write
// there), and skips hidden directories, caches and node_modules. A file that does not compile is
// left to the session, whose import says why.
const compileScript = `import compileall, os, py_compile, sys
for top in sys.argv[1:]:
    for root, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("__pycache__", "node_modules")
                         and not os.path.islink(os.path.join(root, d)))
        for name in sorted(files):
            path = os.path.join(root, name)
            if name.endswith(".py") and not os.path.islink(path):
                compileall.compile_file(path, quiet=2, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
`

// compileTimeout bounds one compilation of a plugin's source.
const compileTimeout = 2 * time.Minute

var compiling sync.Map // plugin directory → *sync.Mutex: one compilation at a time per plugin

// CompileSource writes the bytecode of the plugin's own Python modules (dirs: its import path,
// src/), where Python keeps it, so that a session, which sees the plugin read-only and can keep
// nothing it compiles, does not compile them at each job (harness.py and wiring.py of a
// template: 7 ms). The dependencies' bytecode is `uv sync`'s (compile-bytecode).
//
// It runs outside any sandbox, so nothing of the plugin's runs: not program when it is the
// plugin's (a script as .venv/bin/python), only the interpreter binary it links to, outside the
// plugin, started by its own path (so the .venv's pyvenv.cfg, which names where the standard
// library is, is not read), isolated and without site (no .pth file, no sitecustomize). Only
// files of dirs whose real path lies in pluginDir are compiled. It returns what went wrong;
// nothing is compiled then.
func CompileSource(program, pluginDir string, dirs []string) error {
	exe, err := filepath.EvalSymlinks(program)
	if err != nil {
		return err
	}
	if !IsBinary(exe) || inDir(exe, pluginDir) {
		return fmt.Errorf("%s is not an interpreter's binary outside the plugin: its bytecode is compiled in its sessions", program)
	}
	root := realPath(pluginDir)
	var tops []string
	for _, d := range dirs {
		if real, err := filepath.EvalSymlinks(d); err == nil && real != root && under(real, []string{root}) {
			tops = append(tops, real)
		}
	}
	if len(tops) == 0 {
		return nil
	}
	mu, _ := compiling.LoadOrStore(root, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), compileTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, append([]string{"-I", "-S", "-c", compileScript}, tops...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"}
	cmd.Dir, cmd.SysProcAttr = root, askAttr()
	// At a low priority: it must not slow what runs meanwhile (oz0 dev's first answer).
	if err := lowprio.Start(cmd); err != nil {
		return err
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("compiling the plugin's modules: %w", err)
	}
	return nil
}

// CompileSourceAhead is CompileSource in the background: a node calls it when it starts and when
// a plugin reloads. What goes wrong leaves the sessions to compile what they import.
func CompileSourceAhead(program, pluginDir string, dirs []string) {
	go func() { _ = CompileSource(program, pluginDir, dirs) }()
}
