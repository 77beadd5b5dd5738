package main

import (
	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
)

func newCmdPlugin(f *cmdutil.Factory) *cobra.Command {
	return groupCmd("plugin <command>", "Scaffold, lint and test plugins", "",
		`  oz0 plugin new acme-triage --template byo-agent --description "Sorts support tickets"
  oz0 plugin templates
  oz0 plugin lint acme-triage
  oz0 plugin list plugins --json`,
		newCmdPluginNew(f, nil), newCmdPluginTemplates(f, nil), newCmdPluginLint(f, nil), newCmdPluginTest(f, nil), newCmdPluginList(f, nil))
}
