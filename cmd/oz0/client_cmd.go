package main

import (
	"encoding/json"
	"io"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/devserver/client"
	"github.com/orchestrator-zero/oz0/internal/cmdutil"
)

// withClient runs fn with a client for the dev server in OZ0_CONTEXT, mapping a missing context
// and the API's refusals of what the user asked to usage errors.
func withClient(f *cmdutil.Factory, fn func(*client.Client, []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := client.FromEnv(f.Getenv)
		if err != nil {
			return cmdutil.Usagef("%s", err)
		}
		if err := fn(c, args); err != nil {
			return apiUsageError(err)
		}
		return nil
	}
}

// writeJSONLines prints one JSON object a line, as every --json listing does.
func writeJSONLines[T any](w io.Writer, items []T) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			return err
		}
	}
	return nil
}
