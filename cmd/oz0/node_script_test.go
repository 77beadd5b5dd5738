package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	scriptCmds["nodemodules"] = cmdNodeModules
	scriptConds["nodemodules"] = func(template string) (bool, error) {
		dir, err := nodeModules(template)
		if err != nil {
			return false, err
		}
		_, err = os.Stat(filepath.Join(dir, ".oz0-complete"))
		return err == nil, nil
	}
}

// nodeCache is where scripts/node-deps.sh installs the Node templates' dependencies.
func nodeCache() string {
	if dir := os.Getenv("OZ0_NODE_CACHE"); dir != "" {
		return dir
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		base = filepath.Join(os.Getenv("HOME"), ".cache")
	}
	return filepath.Join(base, "oz0-test", "node")
}

// nodeModules is the node_modules directory of a Node template's dependencies in the cache: one
// per content of its package.json and lock file, as scripts/node-deps.sh names it.
func nodeModules(template string) (string, error) {
	src := filepath.Join("..", "..", "scaffold", "templates", template)
	sum := sha256.New()
	for _, name := range []string{"package.json", "package-lock.json"} {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return "", err
		}
		sum.Write(data)
	}
	return filepath.Join(nodeCache(), template+"-"+hex.EncodeToString(sum.Sum(nil))[:16], "node_modules"), nil
}

// cmdNodeModules links the installed dependencies of a Node template into the current directory
// (a plugin scaffolded from it) as its node_modules, as `npm ci` would install them:
// nodemodules TEMPLATE. They come from the cache scripts/node-deps.sh fills (make test-deps); a
// script checks they are there first with the condition [nodemodules:TEMPLATE], and skips,
// saying so, when they are not.
func cmdNodeModules(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: nodemodules TEMPLATE")
	}
	dir, err := nodeModules(args[0])
	ts.Check(err)
	if _, err := os.Stat(filepath.Join(dir, ".oz0-complete")); err != nil {
		ts.Fatalf("the %s template's dependencies are not installed in %s: run make test-deps (scripts/node-deps.sh)", args[0], dir)
	}
	ts.Check(os.Symlink(dir, ts.MkAbs("node_modules")))
}
