// Package nodedeps finds the installed dependencies of oz0's Node templates for its tests and
// benchmarks: scripts/node-deps.sh (make test-deps) runs npm ci of each template's lock file into
// a cache shared across runs, one directory per content of its package.json and lock file, and
// marks an install once it is complete.
package nodedeps

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
)

// Cache is where the installs are: $OZ0_NODE_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/oz0-test/node,
// as scripts/node-deps.sh has it.
func Cache() string {
	if dir := os.Getenv("OZ0_NODE_CACHE"); dir != "" {
		return dir
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		base = filepath.Join(os.Getenv("HOME"), ".cache")
	}
	return filepath.Join(base, "oz0-test", "node")
}

// NodeModules returns the node_modules directory of the template in the directory templates
// (scaffold/templates of the repository) and whether its install is complete.
func NodeModules(templates, template string) (dir string, installed bool, err error) {
	sum := sha256.New()
	for _, name := range []string{"package.json", "package-lock.json"} {
		data, err := os.ReadFile(filepath.Join(templates, template, name))
		if err != nil {
			return "", false, err
		}
		sum.Write(data)
	}
	dir = filepath.Join(Cache(), template+"-"+hex.EncodeToString(sum.Sum(nil))[:16], "node_modules")
	_, err = os.Stat(filepath.Join(dir, ".oz0-complete"))
	return dir, err == nil, nil
}

// Missing is what a test that needs the install says when it is not there.
func Missing(template, dir string) string {
	return "the " + template + " template's dependencies are not installed in " + dir + ": run make test-deps (scripts/node-deps.sh)"
}
