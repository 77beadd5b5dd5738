package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/scaffold"
)

func newCmdPluginTemplates(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:     "templates",
		Short:   "List the plugin templates",
		Example: "  oz0 plugin templates",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			tw := tabwriter.NewWriter(f.IOStreams.Out, 0, 4, 2, ' ', 0)
			for _, t := range scaffold.Templates() {
				fmt.Fprintf(tw, "%s\t%s\n", t.Name, t.Description)
			}
			return tw.Flush()
		},
	}
}
