// Package doctor checks what a plugin author's machine needs for the oz0 dev loop, and says how
// to mend each miss.
package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orchestrator-zero/oz0/plugin"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/internal/lazyre"
	"github.com/orchestrator-zero/oz0/lint"
	"github.com/orchestrator-zero/oz0/supervisor"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

// Level is how a check came out.
type Level string

// The levels: a fail makes `oz0 doctor` exit 1; a warn is worth knowing but does not block.
const (
	OK   Level = "ok"
	Warn Level = "warn"
	Fail Level = "fail"
)

// Result is one check's outcome.
type Result struct {
	Check  string `json:"check"`
	Level  Level  `json:"level"`
	Detail string `json:"detail"`
	Mend   string `json:"mend,omitempty"` // how to mend a warn or a fail
}

// Env is what the checks look at.
type Env struct {
	PluginDir string
	Getenv    func(string) string
	LookPath  func(string) (string, error)
	// Sandbox says whether a sandbox tier works here; nil is sandbox.Check.
	Sandbox func(sandbox.Tier) error
}

// MinPython is the oldest Python the templates run on.
var MinPython = [2]int{3, 10}

// MinNode is the oldest Node the Node kit and its templates support: what @strands-agents/sdk
// declares (@google/adk, of adk-ts, needs 20), what the templates' engines.node and
// scripts/node.env say and what the tests run on (TestOneNode keeps them one); Node 20 reached its
// end of life on 2026-04-30.
const MinNode = 22

// Run runs every check, in order: Node's for a Node plugin (a package.json and no
// pyproject.toml), Python's for any other (and where there is no plugin: the guide's is Python).
func Run(ctx context.Context, env Env) []Result {
	if env.LookPath == nil {
		env.LookPath = exec.LookPath
	}
	p, rep, err := lint.Load(env.PluginDir) // once, for the plugin's kind and its check
	var re *diag.ReportError
	if errors.As(err, &re) {
		err = nil // findings, which the plugin check reports
	}
	pluginCheck := checkPlugin(env, rep, err)
	var rs []Result
	if nodePlugin(env.PluginDir, p) {
		rs = []Result{checkNode(ctx, env), pluginCheck, checkNodeModules(env)}
	} else {
		rs = []Result{checkPython(ctx, env), pluginCheck, checkVenv(ctx, env), checkImports(ctx, p, env), checkUV(ctx, env)}
	}
	return append(rs, checkDevServer(ctx, env), checkPort(), checkSandbox(env))
}

// nodePlugin reports whether dir holds a Node plugin: its manifest's runtime (p, the plugin as
// lint loaded it), or, where it did not load, a package.json and no pyproject.toml.
func nodePlugin(dir string, p *plugin.Plugin) bool {
	if p != nil {
		return p.Manifest.Runtime == "node"
	}
	_, errPkg := os.Stat(filepath.Join(dir, lint.PackageJSONFile))
	_, errPy := os.Stat(filepath.Join(dir, lint.PyprojectFile))
	return errPkg == nil && errPy != nil
}

var nodeVersion = lazyre.New(`^v(\d+)\.\d+\.\d+`)

// checkNode checks the node on PATH against MinNode and the plugin's engines.node (a ">=N").
func checkNode(ctx context.Context, env Env) Result {
	r := Result{Check: "node"}
	need, from := MinNode, "the Node kit"
	if n := enginesNode(env.PluginDir); n > need {
		need, from = n, "the plugin's package.json (engines.node)"
	}
	path, err := env.LookPath("node")
	if err != nil {
		r.Level, r.Detail = Fail, "node is not on PATH: the plugin's harness runs with it"
		r.Mend = fmt.Sprintf("install Node %d or newer (your OS's nodejs package, or nvm), with npm", need)
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	m := nodeVersion().FindStringSubmatch(strings.TrimSpace(string(out)))
	if err != nil || m == nil {
		r.Level, r.Detail, r.Mend = Fail, fmt.Sprintf("%s --version does not say a version (%q, %v)", path, strings.TrimSpace(string(out)), err), "check that "+path+" runs"
		return r
	}
	v := strings.TrimSpace(string(out))
	if major, _ := strconv.Atoi(m[1]); major < need {
		r.Level, r.Detail = Fail, fmt.Sprintf("node is %s (%s); %s needs Node %d or newer", v, path, from, need)
		r.Mend = fmt.Sprintf("install Node %d or newer and put it first on PATH", need)
		return r
	}
	r.Level, r.Detail = OK, fmt.Sprintf("node %s (%s)", v, path)
	return r
}

var atLeast = lazyre.New(`^\s*>=\s*v?(\d+)(\.\d+){0,2}\s*$`)

// enginesNode is the major version a plugin's package.json asks for with engines.node ">=N"; 0
// for any other constraint, or none.
func enginesNode(dir string) int {
	pkg, err := readPackageJSON(dir)
	if err != nil {
		return 0
	}
	m := atLeast().FindStringSubmatch(pkg.Engines.Node)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// packageJSON is what the Node checks read of a plugin's package.json.
type packageJSON struct {
	Engines      struct{ Node string } `json:"engines"`
	Dependencies map[string]string     `json:"dependencies"`
}

func readPackageJSON(dir string) (packageJSON, error) {
	var pkg packageJSON
	data, err := os.ReadFile(filepath.Join(dir, lint.PackageJSONFile))
	if err == nil {
		err = json.Unmarshal(data, &pkg)
	}
	return pkg, err
}

// checkNodeModules checks that each of the plugin's dependencies resolves as Node resolves it (a
// node_modules of the plugin or of a directory above it, as a workspace installs them), and, for
// npm, that what is installed is what the lock pins.
func checkNodeModules(env Env) Result {
	r := Result{Check: "node_modules"}
	pkg, err := readPackageJSON(env.PluginDir)
	if err != nil {
		r.Level, r.Detail, r.Mend = Warn, "cannot read the plugin's package.json: "+err.Error(), "oz0 plugin lint says what is wrong with it"
		return r
	}
	if len(pkg.Dependencies) == 0 {
		r.Level, r.Detail = OK, "the plugin has no dependencies to install"
		return r
	}
	install, where := installCommand(env.PluginDir)
	mend := "run " + install + " in " + where
	names := slices.Sorted(maps.Keys(pkg.Dependencies))
	for _, name := range names {
		if !resolves(env.PluginDir, name) {
			r.Level, r.Detail, r.Mend = Warn, fmt.Sprintf("the plugin's dependencies are not installed (%s is not): its sessions cannot import them", name), mend
			return r
		}
	}
	// npm records what it installed in node_modules/.package-lock.json, in its lock's form.
	locked, errL := readLock(env.PluginDir, "package-lock.json", "npm-shrinkwrap.json")
	installed, errI := readLock(filepath.Join(env.PluginDir, "node_modules"), ".package-lock.json")
	if errL != nil || errI != nil {
		r.Level, r.Detail = OK, fmt.Sprintf("the plugin's %d dependencies are installed", len(names))
		return r
	}
	for _, path := range slices.Sorted(maps.Keys(locked.Packages)) {
		p := locked.Packages[path]
		if !strings.HasPrefix(path, "node_modules/") || p.Optional || p.Dev || p.DevOptional || !p.forHere() {
			continue // the plugin itself; a package for another platform, or for its tests only
		}
		if got, ok := installed.Packages[path]; !ok || got.Version != p.Version {
			r.Level, r.Detail, r.Mend = Warn, fmt.Sprintf("node_modules is not what the lock pins: %s is %s there, %s installed", strings.TrimPrefix(path, "node_modules/"), p.Version, orNone(got.Version)), mend
			return r
		}
	}
	r.Level, r.Detail = OK, fmt.Sprintf("node_modules as the lock pins it (%d packages)", len(installed.Packages))
	return r
}

// resolves reports whether Node finds package name from dir: in dir's node_modules or a parent's.
func resolves(dir, name string) bool {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "node_modules", name, "package.json")); err == nil {
			return true
		}
		if filepath.Dir(d) == d {
			return false
		}
	}
}

// installCommand is the command that installs what the plugin's lock pins, and where to run it:
// the lock of the plugin, or of the workspace above it; npm's when there is none.
func installCommand(dir string) (string, string) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	for d := abs; ; d = filepath.Dir(d) {
		for _, lock := range lint.NodeLocks {
			if _, err := os.Stat(filepath.Join(d, lock.File)); err == nil {
				if d == abs {
					return lock.Install, "the plugin"
				}
				return lock.Install, d + " (the workspace's root)"
			}
		}
		if filepath.Dir(d) == d {
			return "npm install", "the plugin, and commit package-lock.json"
		}
	}
}

// lockFile is what checkNodeModules reads of an npm lock file.
type lockFile struct {
	Packages map[string]lockedPackage `json:"packages"`
}

type lockedPackage struct {
	Version     string   `json:"version"`
	Optional    bool     `json:"optional"`
	Dev         bool     `json:"dev"`
	DevOptional bool     `json:"devOptional"`
	OS          []string `json:"os"`
	CPU         []string `json:"cpu"`
}

// forHere reports whether the package installs on this system: npm skips one whose os or cpu
// leaves this one out ("darwin", "!win32"; "x64", "arm64"), in Node's names for them.
func (p lockedPackage) forHere() bool {
	return allows(p.OS, nodeName(runtime.GOOS)) && allows(p.CPU, nodeName(runtime.GOARCH))
}

// nodeName is Node's name (process.platform, process.arch) for Go's GOOS or GOARCH.
func nodeName(goName string) string {
	if n, ok := map[string]string{"windows": "win32", "amd64": "x64", "386": "ia32"}[goName]; ok {
		return n
	}
	return goName
}

// allows reads an npm os or cpu list: empty allows all; "!x" excludes x; otherwise only those named.
func allows(list []string, here string) bool {
	named := false
	for _, v := range list {
		if neg, ok := strings.CutPrefix(v, "!"); ok {
			if neg == here {
				return false
			}
			continue
		}
		named = true
		if v == here {
			return true
		}
	}
	return !named
}

// readLock reads the first of files in dir that is there.
func readLock(dir string, files ...string) (lockFile, error) {
	var l lockFile
	var err error
	for _, f := range files {
		var data []byte
		if data, err = os.ReadFile(filepath.Join(dir, f)); err == nil {
			err = json.Unmarshal(data, &l)
			return l, err
		}
	}
	return l, err
}

func orNone(v string) string {
	if v == "" {
		return "none"
	}
	return v
}

// checkSandbox says which sandbox tiers work here, and for one that does not, why and what to do.
func checkSandbox(env Env) Result {
	check := env.Sandbox
	if check == nil {
		check = sandbox.Check
	}
	r := Result{Check: "sandbox"}
	// The default tier, and the one that also has a network of its own.
	def, netTier := sandbox.Default, sandbox.Strict
	standard, strict := check(def), check(netTier)
	mend := func(err error) string {
		var u *sandbox.Unavailable
		if errors.As(err, &u) {
			return u.Mend
		}
		return "see how to check a machine in docs/sandbox.md"
	}
	switch {
	case standard == nil && strict == nil:
		r.Level, r.Detail = OK, fmt.Sprintf("%s (oz0 dev's default) and %s work here", def, netTier)
	case standard == nil:
		r.Level, r.Detail, r.Mend = Warn, fmt.Sprintf("%s (oz0 dev's default) works here; %s does not: %v", def, netTier, strict), mend(strict)
	default:
		r.Level, r.Detail, r.Mend = Warn, fmt.Sprintf("sessions run without a sandbox (tier none): %v", standard), mend(standard)
	}
	return r
}

var pyVersion = lazyre.New(`Python (\d+)\.(\d+)(\.\d+)?`)

func version(ctx context.Context, bin string) (string, int, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	if err != nil {
		return "", 0, 0, fmt.Errorf("%s --version: %v", bin, err)
	}
	m := pyVersion().FindStringSubmatch(string(out))
	if m == nil {
		return strings.TrimSpace(string(out)), 0, 0, fmt.Errorf("cannot read the version in %q", strings.TrimSpace(string(out)))
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	return strings.TrimPrefix(m[0], "Python "), major, minor, nil
}

func tooOld(major, minor int) bool {
	return major < MinPython[0] || (major == MinPython[0] && minor < MinPython[1])
}

func checkPython(ctx context.Context, env Env) Result {
	r := Result{Check: "python"}
	path, err := env.LookPath("python3")
	if err != nil {
		r.Level, r.Detail = Fail, "python3 is not on PATH"
		r.Mend = fmt.Sprintf("install Python %d.%d or newer (your OS's python3 package, or uv python install)", MinPython[0], MinPython[1])
		return r
	}
	v, major, minor, err := version(ctx, path)
	switch {
	case err != nil:
		r.Level, r.Detail, r.Mend = Fail, err.Error(), "check that "+path+" runs"
	case tooOld(major, minor):
		r.Level, r.Detail = Fail, fmt.Sprintf("python3 is %s (%s)", v, path)
		r.Mend = fmt.Sprintf("install Python %d.%d or newer; the templates need it", MinPython[0], MinPython[1])
	default:
		r.Level, r.Detail = OK, fmt.Sprintf("python3 %s (%s)", v, path)
	}
	return r
}

// checkPlugin reports the plugin's lint: its report, or the error that kept it from being read.
func checkPlugin(env Env, rep *diag.Report, err error) Result {
	r := Result{Check: "plugin"}
	switch {
	case err != nil:
		r.Level, r.Detail, r.Mend = Warn, err.Error(), "run oz0 doctor in a plugin's directory, or pass --plugin DIR"
	case hasRule(rep, diag.ManifestMissing):
		r.Level, r.Detail = Warn, "no oz0-plugin.yaml in "+env.PluginDir
		r.Mend = "cd into a plugin, or make one: oz0 plugin new NAME --template byo-agent --description \"...\""
	case rep.HasErrors():
		r.Level, r.Detail, r.Mend = Fail, fmt.Sprintf("the plugin in %s has lint findings: %s", env.PluginDir, diag.Summary(rep)), "run oz0 plugin lint and fix them; oz0 dev refuses to start until then"
	default:
		r.Level, r.Detail = OK, fmt.Sprintf("the plugin in %s lints clean (%s)", env.PluginDir, diag.Summary(rep))
	}
	return r
}

func hasRule(rep *diag.Report, rule diag.RuleID) bool {
	for _, f := range rep.Diagnostics {
		if f.Rule == rule {
			return true
		}
	}
	return false
}

func checkVenv(ctx context.Context, env Env) Result {
	r := Result{Check: "venv"}
	// With no plugin here, the plugin check has said so (and how to mend it) already.
	if _, err := os.Stat(filepath.Join(env.PluginDir, lint.ManifestFile)); err != nil {
		r.Level, r.Detail = OK, "no plugin in "+env.PluginDir+", so no venv to check"
		return r
	}
	if _, err := os.Stat(filepath.Join(env.PluginDir, "pyproject.toml")); err != nil {
		r.Level, r.Detail = OK, "no pyproject.toml: not a Python plugin, no venv needed"
		return r
	}
	py := filepath.Join(env.PluginDir, ".venv", "bin", "python")
	_, err := os.Stat(py)
	if err != nil && len(supervisor.PyprojectDependencies(env.PluginDir)) == 0 {
		r.Level, r.Detail = OK, "no .venv, and none needed: the plugin has no dependencies (sessions run with python3 and its src/ on PYTHONPATH)"
		return r
	}
	if err != nil {
		r.Level, r.Detail = Warn, "the plugin has no .venv: sessions run with python3 and the plugin's src/ on PYTHONPATH, without its dependencies"
		r.Mend = "run uv sync in the plugin (oz0 then runs its harness with .venv/bin/python)"
		return r
	}
	// Read, not run: the .venv is the plugin's, and nothing of the plugin's runs outside the
	// sandbox (a .venv shipped with a plugin could hold any program as bin/python).
	v, major, minor, err := venvVersion(env.PluginDir, py)
	switch {
	case err != nil:
		r.Level, r.Detail, r.Mend = Fail, "the plugin's .venv is broken: "+err.Error(), "remove .venv and run uv sync again"
	case tooOld(major, minor):
		r.Level, r.Detail, r.Mend = Fail, "the plugin's .venv has Python "+v, "recreate it with a newer Python: uv sync --python 3.12"
	default:
		r.Level, r.Detail = OK, fmt.Sprintf(".venv with Python %s", v)
	}
	return r
}

// venvVersion reads the Python version of the plugin's .venv in its pyvenv.cfg (version_info as
// uv writes it, version as python -m venv does), once its bin/python is seen to be an
// interpreter's binary rather than a script.
func venvVersion(pluginDir, python string) (string, int, int, error) {
	if !sandbox.IsBinary(python) {
		return "", 0, 0, fmt.Errorf("%s is not an interpreter's binary", python)
	}
	cfg := filepath.Join(pluginDir, ".venv", "pyvenv.cfg")
	data, err := os.ReadFile(cfg)
	if err != nil {
		return "", 0, 0, fmt.Errorf("it has no pyvenv.cfg: %v", err)
	}
	for _, key := range []string{"version_info", "version"} {
		for _, line := range strings.Split(string(data), "\n") {
			k, v, ok := strings.Cut(line, "=")
			if !ok || strings.TrimSpace(k) != key {
				continue
			}
			v = strings.TrimSpace(v)
			m := venvPyVersion().FindStringSubmatch(v)
			if m == nil {
				return "", 0, 0, fmt.Errorf("%s says %s = %q, not a Python version", cfg, key, v)
			}
			major, _ := strconv.Atoi(m[1])
			minor, _ := strconv.Atoi(m[2])
			return v, major, minor, nil
		}
	}
	return "", 0, 0, fmt.Errorf("%s says no version", cfg)
}

var venvPyVersion = lazyre.New(`^(\d+)\.(\d+)(\.\d+)?`)

func checkUV(ctx context.Context, env Env) Result {
	r := Result{Check: "uv"}
	path, err := env.LookPath("uv")
	if err != nil {
		r.Level, r.Detail = Warn, "uv is not on PATH: the guide's uv lock, uv sync and uv run need it"
		r.Mend = "install uv (https://docs.astral.sh/uv/getting-started/installation/); meanwhile python3 -m unittest discover -s tests runs the template's tests"
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		r.Level, r.Detail, r.Mend = Warn, path+" does not run: "+err.Error(), "reinstall uv"
		return r
	}
	r.Level, r.Detail = OK, strings.TrimSpace(string(out))+" ("+path+")"
	return r
}

func checkDevServer(ctx context.Context, env Env) Result {
	r := Result{Check: "dev server"}
	c, err := client.Find(env.Getenv, env.PluginDir)
	if errors.Is(err, client.ErrNoServer) {
		r.Level, r.Detail = Warn, apiv1.ContextEnv+" is not set and no oz0 dev runs on the plugin: oz0 run, job and secret need a running dev server"
		r.Mend = client.StartMend
		return r
	}
	if err != nil {
		r.Level, r.Detail, r.Mend = Fail, err.Error(), "export the line oz0 dev printed, or start oz0 dev in the plugin"
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := c.Info(ctx)
	if err != nil {
		r.Level, r.Detail, r.Mend = Fail, err.Error(), "start oz0 dev again and export the new OZ0_CONTEXT"
		return r
	}
	var agents []string
	for _, a := range info.Agents {
		agents = append(agents, fmt.Sprintf("%s → %s", a.Name, a.Record))
	}
	r.Level, r.Detail = OK, fmt.Sprintf("oz0 dev at %s runs %s", c.URL(), strings.Join(agents, ", "))
	return r
}

func checkPort() Result {
	r := Result{Check: "port"}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		r.Level, r.Detail, r.Mend = Fail, "cannot listen on loopback: "+err.Error(), "oz0 dev needs a free loopback port; check the firewall or sandbox"
		return r
	}
	r.Level, r.Detail = OK, "a free loopback port: "+l.Addr().String()
	l.Close()
	return r
}
