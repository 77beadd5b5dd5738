package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orchestrator-zero/oz0/supervisor/sandbox/internal/initproc"
)

// Config is one session's sandbox: what the harness runs and what it may see.
type Config struct {
	Tier Tier
	// Argv, Env and Dir are the harness's command as the node resolved it: Argv[0] an absolute
	// path on the host, Dir one of Writable.
	Argv []string
	Env  []string
	Dir  string
	// PluginDir is shown read-only, with the installation of the program that runs the harness
	// (see InstallPaths).
	PluginDir string
	// ReadOnly are more paths to show read-only.
	ReadOnly []string
	// Writable are shown read-write: the session's working and state directories.
	Writable []string
	// Hide are paths the session must not see even where a directory it sees holds them: the
	// node's state directory (it may sit in the plugin), other plugins.
	Hide []string
	// Root is an empty directory of the node's, not shown to the session, that the session's
	// root is mounted on.
	Root string
	// Listen are the loopback host:ports where a Strict session reaches the gateway; the node
	// serves them (Process.Listeners).
	Listen []string
	// UID and GID are the harness's ids inside the sandbox; the supervisor sets them from IDs.
	UID, GID int
}

type op = initproc.Op

const (
	opSymlink = initproc.OpSymlink
	opRO      = initproc.OpRO
	opRW      = initproc.OpRW
	opDevice  = initproc.OpDevice
	opTmpfs   = initproc.OpTmpfs
	opDevfs   = initproc.OpDevfs
	opHide    = initproc.OpHide
	opProc    = initproc.OpProc
)

// systemDirs are shown read-only when the host has them: the programs and libraries every
// harness needs, and /etc's configuration. Each is a directory of the system, not of a user.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix"}

// devices are bound from the host's /dev: the ones programs open without asking. Not /dev/tty:
// a session has no controlling terminal, and the host's /dev/tty is the terminal of whoever
// opens it (a harness that had one could write on the user's terminal and feed it input).
var devices = []string{"null", "zero", "full", "random", "urandom"}

// plan lists the steps that build the session's root: the system's directories read-only, a
// fresh /dev, /proc and /tmp, the plugin and the program's installation read-only, the session's
// directories read-write, and what must be hidden covered.
func (c *Config) plan() ([]op, error) {
	var p rootPlan
	p.showSystem()
	p.makeFresh()
	p.showResolvConf()
	if err := p.showSession(c); err != nil {
		return nil, err
	}
	if err := p.hide(c.Hide); err != nil {
		return nil, err
	}
	return p.ops, nil
}

// rootPlan is a plan being made: its steps so far, and what they show.
type rootPlan struct {
	ops     []op
	visible []string        // host paths (resolved) of the system's directories shown
	shown   []string        // visible and the session's own paths
	need    map[string]bool // the session's own paths, which must stay visible
}

// showSystem shows the system's directories the host has, read-only, and its links among them
// (/bin -> usr/bin) as links.
func (p *rootPlan) showSystem() {
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
			continue
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(d)
			if err != nil {
				continue
			}
			p.ops = append(p.ops, op{Kind: opSymlink, Src: target, Dst: d})
		case fi.IsDir():
			p.ops = append(p.ops, op{Kind: opRO, Src: d, Dst: d})
			p.visible = append(p.visible, realPath(d))
		}
	}
}

// makeFresh makes the session's own /dev (the devices programs open without asking, the stdio
// links), /dev/shm, /proc and /tmp.
func (p *rootPlan) makeFresh() {
	p.ops = append(p.ops, op{Kind: opDevfs, Dst: "/dev"})
	for _, d := range devices {
		p.ops = append(p.ops, op{Kind: opDevice, Src: "/dev/" + d, Dst: "/dev/" + d, Optional: true})
	}
	for i, name := range []string{"stdin", "stdout", "stderr"} {
		p.ops = append(p.ops, op{Kind: opSymlink, Src: fmt.Sprintf("/proc/self/fd/%d", i), Dst: "/dev/" + name})
	}
	p.ops = append(p.ops,
		op{Kind: opSymlink, Src: "/proc/self/fd", Dst: "/dev/fd"},
		op{Kind: opTmpfs, Dst: "/dev/shm"},
		op{Kind: opProc, Dst: "/proc"},
		op{Kind: opTmpfs, Dst: "/tmp"},
	)
}

// showResolvConf shows the file /etc/resolv.conf names: it is often a link into /run, which is
// not shown.
func (p *rootPlan) showResolvConf() {
	if target, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && !under(target, p.visible) {
		p.ops = append(p.ops, op{Kind: opRO, Src: target, Dst: target, Optional: true})
	}
}

// showSession shows the session's own paths, bound where the host has them so that every path
// the node gave the harness (its argv, its request's workdir and state_dir) means the same
// inside: the plugin, its dependencies, the program's installation and c.ReadOnly read-only,
// c.Writable read-write. A link of the plugin's that leads where the sandbox does not show is an
// error (links.go).
func (p *rootPlan) showSession(c *Config) error {
	type bind struct {
		path string
		rw   bool
	}
	var binds []bind
	p.need = map[string]bool{}
	addRO := func(path string) {
		if path == "" {
			return
		}
		path = filepath.Clean(path)
		for _, q := range uniq(path, realPath(path)) {
			if !under(q, p.visible) {
				binds = append(binds, bind{path: q})
			}
			p.need[q] = true
		}
	}
	var deps []string
	if c.PluginDir != "" {
		addRO(c.PluginDir)
		var err error
		if deps, err = DependencyPaths(c.PluginDir); err != nil {
			return err
		}
		for _, d := range deps {
			addRO(d)
		}
	}
	if len(c.Argv) > 0 {
		install, err := programPaths(c.Argv[0], c.PluginDir, deps)
		if err != nil {
			return err
		}
		for _, d := range install {
			addRO(d)
		}
	}
	for _, d := range c.ReadOnly {
		addRO(d)
	}
	for _, d := range c.Writable {
		d = filepath.Clean(d)
		binds = append(binds, bind{path: d, rw: true})
		p.need[d] = true
	}
	slices.SortFunc(binds, func(a, b bind) int { return strings.Compare(a.path, b.path) })
	binds = slices.CompactFunc(binds, func(a, b bind) bool { return a.path == b.path && a.rw == b.rw })
	p.shown = slices.Clone(p.visible)
	for _, b := range binds {
		kind := opRO
		if b.rw {
			kind = opRW
		}
		p.ops = append(p.ops, op{Kind: kind, Src: b.path, Dst: b.path})
		p.shown = append(p.shown, b.path)
	}
	return nil
}

// hide covers what must not be seen, where something shown holds it; a path that holds one the
// session needs cannot be hidden.
func (p *rootPlan) hide(paths []string) error {
	var hides []string
	for _, h := range paths {
		if h == "" {
			continue
		}
		h = filepath.Clean(h)
		for _, q := range uniq(h, realPath(h)) {
			for n := range p.need {
				if n == q || strings.HasPrefix(n, q+"/") {
					return fmt.Errorf("the sandbox cannot hide %s: it holds %s, which the session needs", q, n)
				}
			}
			if under(q, p.shown) {
				if _, err := os.Lstat(q); err == nil {
					hides = append(hides, q)
				}
			}
		}
	}
	slices.Sort(hides)
	for _, h := range slices.Compact(hides) {
		p.ops = append(p.ops, op{Kind: opHide, Dst: h})
	}
	return nil
}

// DependencyPaths are the directories of a plugin's dependencies that lie outside it: a .venv or
// node_modules that is a link (uv's UV_PROJECT_ENVIRONMENT, a shared install), shown where it
// points, and the node_modules of the plugin's parent directories, where Node looks for packages
// after the plugin's own (an npm, pnpm or yarn workspace installs them at its root). A link that
// is not what it claims to be (a .venv that is no virtual environment, a node_modules that is not
// one) or that leads where the sandbox never shows (offLimits) is a *LinkError.
func DependencyPaths(pluginDir string) ([]string, error) {
	var paths []string
	for _, name := range []string{".venv", "node_modules"} {
		if p := filepath.Join(pluginDir, name); isSymlink(p) && isDir(p) {
			target := realPath(p)
			if err := checkDependencyLink(p, target, pluginDir); err != nil {
				return nil, err
			}
			paths = append(paths, target)
		}
	}
	abs, err := filepath.Abs(pluginDir)
	if err != nil {
		return paths, nil
	}
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		if p := filepath.Join(dir, "node_modules"); isDir(p) {
			if isSymlink(p) {
				if err := checkDependencyLink(p, realPath(p), pluginDir); err != nil {
					return nil, err
				}
			}
			paths = append(paths, p)
		}
		if dir == filepath.Dir(dir) {
			return paths, nil
		}
	}
}

// InstallPaths are the directories a program needs besides itself: the directory its file
// (links resolved) is in and, when that is a bin directory, its installation's lib and lib64
// (where an interpreter keeps its library: pyenv's, uv's or nvm's installations). A program that
// lies directly in a directory the sandbox never shows (a user's home, / , the temporary
// directory's root: offLimits) is shown alone, never that directory.
func InstallPaths(program string) []string {
	real, err := filepath.EvalSymlinks(program)
	if err != nil || !filepath.IsAbs(real) {
		return nil
	}
	dir := filepath.Dir(real)
	if offLimits(dir, "") != "" {
		return []string{real}
	}
	paths := []string{dir}
	if filepath.Base(dir) == "bin" {
		for _, lib := range []string{"lib", "lib64"} {
			if p := filepath.Join(filepath.Dir(dir), lib); isDir(p) {
				paths = append(paths, p)
			}
		}
	}
	return paths
}

// ListenAddrs returns the loopback host:ports that base URLs name, for a Strict session: the
// gateway's faces must be on loopback, which the session's network has.
func ListenAddrs(baseURLs ...string) ([]string, error) {
	var addrs []string
	for _, u := range baseURLs {
		if u == "" {
			continue
		}
		rest, ok := strings.CutPrefix(u, "http://")
		if !ok {
			return nil, fmt.Errorf("the gateway URL %s is not http:// on loopback, which a strict sandbox needs", u)
		}
		hostport, _, _ := strings.Cut(rest, "/")
		host, port, err := net.SplitHostPort(hostport)
		if err != nil {
			host, port = hostport, "80"
		}
		switch {
		case host == "localhost":
			addrs = append(addrs, net.JoinHostPort("127.0.0.1", port), net.JoinHostPort("::1", port))
		case net.ParseIP(host) != nil && net.ParseIP(host).IsLoopback():
			addrs = append(addrs, net.JoinHostPort(host, port))
		default:
			return nil, fmt.Errorf("the gateway URL %s is not on loopback, which a strict sandbox needs", u)
		}
	}
	if len(addrs) == 0 {
		return nil, errors.New("a strict sandbox needs the gateway's URL")
	}
	slices.Sort(addrs)
	return slices.Compact(addrs), nil
}

// under reports whether path p is one of dirs or inside one.
func under(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, d+"/") || d == "/" {
			return true
		}
	}
	return false
}

// realPath is p with its links resolved, or p when that fails.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

func uniq(a, b string) []string {
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}

func isSymlink(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode()&os.ModeSymlink != 0
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
