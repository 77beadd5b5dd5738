package main

import (
	"os"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/orchestrator-zero/oz0/internal/nodedeps"
)

// templatesDir is scaffold/templates of this repository.
const templatesDir = "../../scaffold/templates"

func init() {
	scriptCmds["nodemodules"] = cmdNodeModules
	// [nodemodules:TEMPLATE]: the template's dependencies are installed (make test-deps).
	scriptConds["nodemodules"] = func(template string) (bool, error) {
		_, installed, err := nodedeps.NodeModules(templatesDir, template)
		return installed, err
	}
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
	dir, installed, err := nodedeps.NodeModules(templatesDir, args[0])
	ts.Check(err)
	if !installed {
		ts.Fatalf("%s", nodedeps.Missing(args[0], dir))
	}
	ts.Check(os.Symlink(dir, ts.MkAbs("node_modules")))
}
