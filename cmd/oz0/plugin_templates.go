package main

import (
	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/scaffold"
)

type pluginTemplatesOptions struct {
	IO *iostreams.IOStreams
	cmdutil.JSONFlags
}

// templateJSON is a template as --json shows it.
type templateJSON struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

func newCmdPluginTemplates(f *cmdutil.Factory, runF func(*pluginTemplatesOptions) error) *cobra.Command {
	opts := &pluginTemplatesOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:     "templates",
		Short:   "List the plugin templates",
		Example: "  oz0 plugin templates\n  oz0 plugin templates --jq '.[].name'",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return pluginTemplatesRun(opts)
		},
	}
	cmdutil.AddJSONFlags(cmd, &opts.JSONFlags, "the templates")
	return cmd
}

func pluginTemplatesRun(opts *pluginTemplatesOptions) error {
	var list []templateJSON
	for _, t := range scaffold.Templates() {
		list = append(list, templateJSON{Name: t.Name, Description: t.Description})
	}
	if opts.Enabled() {
		return opts.Write(opts.IO, list)
	}
	t := newTable(opts.IO, "TEMPLATE", "DESCRIPTION")
	for _, tp := range list {
		t.row(tp.Name, tp.Description)
	}
	return t.Render()
}
