package cmdutil

import (
	"github.com/orchestrator-zero/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/internal/prompt"
)

// Factory hands commands their dependencies, so tests can replace any of them.
type Factory struct {
	IOStreams *iostreams.IOStreams
	Version   string
	// Getwd returns the directory commands resolve relative paths against.
	Getwd func() (string, error)
	// Getenv reads the environment (OZ0_CONTEXT).
	Getenv func(string) string
	// Prompter asks a person for missing values; only used when IOStreams.CanPrompt().
	Prompter prompt.Prompter
}
