package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// uvEnvFile holds the uv version the scripts run and their fixed resolution date, for the shell
// scripts and these tests alike.
const uvEnvFile = "../../scripts/uv.env"

// uvSettings are scripts/uv.env's values.
type uvSettings struct {
	version      string // OZ0_UV_VERSION: the uv scripts/test-deps.sh installs
	excludeNewer string // OZ0_UV_EXCLUDE_NEWER: UV_EXCLUDE_NEWER, so a lock resolves the same every run
}

func readUVEnv() (uvSettings, error) {
	data, err := os.ReadFile(uvEnvFile)
	if err != nil {
		return uvSettings{}, err
	}
	vals := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return uvSettings{}, fmt.Errorf("%s: %q is not KEY=VALUE", uvEnvFile, line)
		}
		vals[k] = v
	}
	s := uvSettings{version: vals["OZ0_UV_VERSION"], excludeNewer: vals["OZ0_UV_EXCLUDE_NEWER"]}
	if s.version == "" || s.excludeNewer == "" {
		return uvSettings{}, fmt.Errorf("%s: OZ0_UV_VERSION and OZ0_UV_EXCLUDE_NEWER must both be set", uvEnvFile)
	}
	return s, nil
}

// uvPaths are where test-deps.sh keeps uv and its download cache; the same defaults as there.
type uvPaths struct {
	uvSettings
	home  string // OZ0_UV_HOME: uv is home/bin/uv
	cache string // UV_CACHE_DIR
}

// testCacheDir is ${XDG_CACHE_HOME:-$HOME/.cache}/oz0-test, the caches oz0's tests share.
func testCacheDir() (string, error) {
	if x := os.Getenv("XDG_CACHE_HOME"); x != "" {
		return filepath.Join(x, "oz0-test"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".cache", "oz0-test"), nil
}

func findUV() (uvPaths, error) {
	root, err := testCacheDir()
	if err != nil {
		return uvPaths{}, err
	}
	settings, err := readUVEnv()
	if err != nil {
		return uvPaths{}, err
	}
	p := uvPaths{uvSettings: settings, home: os.Getenv("OZ0_UV_HOME"), cache: os.Getenv("UV_CACHE_DIR")}
	if p.home == "" {
		p.home = filepath.Join(root, "uv-"+settings.version)
	}
	if p.cache == "" {
		p.cache = filepath.Join(root, "uv-cache")
	}
	return p, nil
}

// uvBinDir is the directory put first on the scripts' PATH: uv's own when uv is installed;
// otherwise a directory (made once per test run) whose `uv` fails every use with the mend, so
// a script that needs uv fails saying what to do instead of skipping or "not found".
func uvBinDir(t *testing.T, p uvPaths) (string, error) {
	bin := filepath.Join(p.home, "bin")
	if fi, err := os.Stat(filepath.Join(bin, "uv")); err == nil && fi.Mode().IsRegular() {
		return bin, nil
	}
	dir := t.TempDir()
	msg := fmt.Sprintf("uv is missing (no %s): run scripts/test-deps.sh", filepath.Join(bin, "uv"))
	script := "#!/bin/sh\necho '" + msg + "' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "uv"), []byte(script), 0o755); err != nil {
		return "", err
	}
	return dir, nil
}

// uvPassThrough are the variables of the test's environment that say how to reach PyPI.
var uvPassThrough = []string{
	"SSL_CERT_FILE", "SSL_CERT_DIR",
	"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy",
	"UV_DEFAULT_INDEX", "UV_INDEX", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_NATIVE_TLS", "UV_SYSTEM_CERTS",
	"UV_HTTP_TIMEOUT", "UV_CONCURRENT_DOWNLOADS",
}

// setupUV gives a script uv as scripts/uv-env.sh gives it to the shell scripts: the pinned uv first on
// PATH, the shared download cache, never a downloaded Python (the machine's python3), and the
// fixed resolution date. uv compiles bytecode at sync where the plugin's pyproject.toml says so (the
// templates do), as it does for their authors.
func setupUV(env *testscript.Env, p uvPaths, binDir string) {
	// A script that shows what a machine without uv gets sets PATH to this.
	env.Setenv("PATH_WITHOUT_UV", env.Getenv("PATH"))
	env.Setenv("PATH", binDir+string(os.PathListSeparator)+env.Getenv("PATH"))
	// How this machine reaches the package index (its CA bundle, a proxy, a mirror) carries over
	// into the scripts' otherwise bare environment, as it does for `go test` itself.
	for _, k := range uvPassThrough {
		if v, ok := os.LookupEnv(k); ok {
			env.Setenv(k, v)
		}
	}
	for _, kv := range p.environ() {
		k, v, _ := strings.Cut(kv, "=")
		env.Setenv(k, v)
	}
}

// environ is what scripts/uv-env.sh exports besides PATH: the shared download cache, never a
// downloaded Python (the machine's python3), and the fixed resolution date.
func (p uvPaths) environ() []string {
	return []string{"UV_CACHE_DIR=" + p.cache, "UV_PYTHON_DOWNLOADS=never", "UV_EXCLUDE_NEWER=" + p.excludeNewer}
}
