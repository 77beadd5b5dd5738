package main

import (
	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/internal/cmdutil"
)

func newCmdPlugin(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin <command>",
		Short: "Scaffold, lint and test plugins",
		Example: `  oz0 plugin new acme-triage --template byo-agent --description "Sorts support tickets"
  oz0 plugin templates
  oz0 plugin lint acme-triage`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCmdPluginNew(f, nil))
	cmd.AddCommand(newCmdPluginTemplates(f))
	cmd.AddCommand(newCmdPluginLint(f, nil))
	cmd.AddCommand(newCmdPluginTest(f, nil))
	return cmd
}
