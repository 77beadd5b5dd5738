// Command oz0 is the Orchestrator Zero plugin toolchain and local dev CLI.
package main

import (
	"os"

	// A session's sandbox re-executes oz0 as the session's init: that runs from this package's
	// init function, before main and cobra, and never returns (see sandbox.Process).
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/prompt"
	_ "github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

func main() {
	stop := startProfile(os.Args[1:])
	code := run(os.Args[1:])
	stop()
	os.Exit(code)
}

func run(args []string) int {
	build := readBuildInfo()
	f := &cmdutil.Factory{
		IOStreams: iostreams.System(),
		Build:     build,
		Version:   build.Version,
		Getwd:     os.Getwd,
		Getenv:    os.Getenv,
		Prompter:  prompt.Huh{},
	}
	return execute(f, args)
}
