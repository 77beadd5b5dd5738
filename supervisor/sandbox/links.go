package sandbox

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/orchestrator-zero/oz0/internal/lazyre"
)

// A plugin is shipped by its author, and its links are the author's: a .venv, a node_modules or
// the harness's program that links outside the plugin would have the sandbox show whatever it
// points at (the user's home, other sessions' directories under /tmp, the host's /proc). What the
// sandbox shows where a link of the plugin's leads is therefore what such a link legitimately is
// (a virtual environment, a shared node_modules, an interpreter), and never a directory of the
// host's own (offLimits).

// LinkError is a link of the plugin's that the sandbox refuses to show: the session does not
// start, rather than fail later with a module that cannot be found.
type LinkError struct {
	Link   string // the link, as the plugin has it
	Target string // where it leads (links resolved)
	Why    string // why the sandbox does not show it
	Mend   string // how to mend it
}

func (e *LinkError) Error() string {
	return fmt.Sprintf("the sandbox does not show %s, a link to %s: %s; %s", e.Link, e.Target, e.Why, e.Mend)
}

// offLimits says why the sandbox never shows dir (links resolved) for a link, or "" when it may:
// the root, the user's home or a directory that holds it, the host's kernel and runtime
// filesystems, the temporary directory's root (other sessions' directories, with their keys, lie
// there), and a directory that holds the plugin (what lies beside it: other plugins, the node's
// state).
func offLimits(dir, pluginDir string) string {
	holds := func(d, p string) bool { return d == p || under(p, []string{d}) }
	switch {
	case dir == "/":
		return "it is the root of the filesystem"
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		for _, h := range uniq(filepath.Clean(home), realPath(home)) {
			if holds(dir, h) {
				return "it is your home directory or holds it"
			}
		}
	}
	for _, sys := range []string{"/proc", "/sys", "/dev", "/run"} {
		if holds(sys, dir) {
			return "it is in " + sys + ", the host's own"
		}
	}
	tmp := filepath.Clean(os.TempDir())
	for _, t := range uniq(tmp, realPath(tmp)) {
		if holds(dir, t) {
			return "it is the temporary directory's root or holds it, where other sessions' directories lie"
		}
	}
	if pluginDir != "" {
		for _, p := range uniq(filepath.Clean(pluginDir), realPath(pluginDir)) {
			if dir != p && holds(dir, p) {
				return "it holds the plugin's directory, and what lies beside it"
			}
		}
	}
	return ""
}

// checkDependencyLink checks a .venv or node_modules that is a link (link, resolved to target):
// a linked .venv must be a Python virtual environment (its target holds pyvenv.cfg), a linked
// node_modules a directory named node_modules (a shared install), and neither off limits.
func checkDependencyLink(link, target, pluginDir string) error {
	name := filepath.Base(link)
	mend := "make node_modules the plugin's own: npm install"
	if name == ".venv" {
		mend = "make .venv a virtual environment: uv sync"
	}
	if why := offLimits(target, pluginDir); why != "" {
		return &LinkError{Link: link, Target: target, Why: why, Mend: mend}
	}
	switch name {
	case ".venv":
		if fi, err := os.Stat(filepath.Join(target, "pyvenv.cfg")); err != nil || !fi.Mode().IsRegular() {
			return &LinkError{Link: link, Target: target, Why: "it is not a Python virtual environment (it has no pyvenv.cfg)", Mend: mend}
		}
	case "node_modules":
		if filepath.Base(target) != "node_modules" {
			return &LinkError{Link: link, Target: target, Why: "a linked node_modules must lead to a directory named node_modules", Mend: mend}
		}
	}
	return nil
}

// interpreterName matches the programs a plugin's link may lead to outside it: a Python or Node
// interpreter's binary (a virtual environment's python links to its base interpreter).
var interpreterName = lazyre.New(`^(python([23](\.[0-9]+)?t?)?|node|nodejs)$`)

// programPaths are the directories the program that runs the harness needs shown (InstallPaths),
// none when it lies in the plugin or in one of its dependencies (deps), shown already. One the
// plugin holds that leads outside them (links resolved) must be a Python or Node interpreter in a
// bin directory, whose installation is shown; anything else would show a directory of the
// plugin author's choosing.
func programPaths(program, pluginDir string, deps []string) ([]string, error) {
	real, err := filepath.EvalSymlinks(program)
	if err != nil || !filepath.IsAbs(real) {
		return nil, nil
	}
	if pluginDir == "" {
		return InstallPaths(program), nil
	}
	shown := []string{realPath(pluginDir)}
	for _, d := range deps {
		shown = append(shown, realPath(d))
	}
	if under(real, shown) {
		return nil, nil
	}
	if !under(filepath.Clean(program), uniq(filepath.Clean(pluginDir), realPath(pluginDir))) {
		return InstallPaths(program), nil
	}
	mend := "make it a file of the plugin's, or a link to a Python or Node interpreter (a virtual environment's python: uv sync)"
	if !interpreterName().MatchString(filepath.Base(real)) || filepath.Base(filepath.Dir(real)) != "bin" {
		return nil, &LinkError{Link: program, Target: real, Why: "a program of the plugin's that leads outside it must be a Python or Node interpreter (python3.N, node) in a bin directory", Mend: mend}
	}
	if why := offLimits(filepath.Dir(real), pluginDir); why != "" {
		return nil, &LinkError{Link: program, Target: real, Why: why, Mend: mend}
	}
	return InstallPaths(program), nil
}
