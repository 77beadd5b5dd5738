package main

import (
	"io"

	"github.com/orchestrator-zero/oz0/internal/client"
	"github.com/orchestrator-zero/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
	"github.com/orchestrator-zero/oz0/lint/diag"
)

// clientOptions is what every command that talks to the dev server has: its streams, and the
// client the Factory builds for the server in OZ0_CONTEXT.
type clientOptions struct {
	IO     *iostreams.IOStreams
	Client func() (*client.Client, error)
}

func newClientOptions(f *cmdutil.Factory) clientOptions {
	return clientOptions{IO: f.IOStreams, Client: f.Client}
}

// writeJSONLines prints one JSON object a line, as every --json listing does.
func writeJSONLines[T any](w io.Writer, items []T) error {
	enc := jsonutil.NewEncoder(w)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			return err
		}
	}
	return nil
}

// clipLine fits a value into a table cell: one line, at most n runes.
func clipLine(s string, n int) string { return diag.Squash(s, n) }
