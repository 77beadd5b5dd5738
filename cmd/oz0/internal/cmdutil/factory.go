package cmdutil

import (
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/prompt"
	"github.com/orchestrator-zero/oz0/internal/buildinfo"
)

// Factory hands commands their dependencies, so tests can replace any of them.
type Factory struct {
	IOStreams *iostreams.IOStreams
	// Build is which build of oz0 this is; Version is its Build.Version, for messages.
	Build   buildinfo.Info
	Version string
	// Getwd returns the directory commands resolve relative paths against.
	Getwd func() (string, error)
	// Getenv reads the environment (OZ0_CONTEXT, and what oz0 dev passes on).
	Getenv func(string) string
	// Prompter asks a person; only used when IOStreams.CanPrompt().
	Prompter prompt.Prompter
}

// Client returns a client for the dev server in OZ0_CONTEXT, else the one running on the plugin
// of the working directory; its error says how to mend a missing or malformed one.
func (f *Factory) Client() (*client.Client, error) {
	dir := "."
	if f.Getwd != nil {
		if wd, err := f.Getwd(); err == nil {
			dir = wd
		}
	}
	return client.Find(f.Getenv, dir)
}
