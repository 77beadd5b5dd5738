package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/lint"
)

type pluginListOptions struct {
	IO *iostreams.IOStreams
	cmdutil.JSONFlags
	Dir string
}

func newCmdPluginList(f *cmdutil.Factory, runF func(*pluginListOptions) error) *cobra.Command {
	opts := &pluginListOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "list [DIR]",
		Short: "List the plugins under a directory",
		Long: `List every plugin (a directory with an oz0-plugin.yaml) under DIR (default: the current
directory), DIR itself included: its path, the name and version its manifest says, and whether
it has eval files (evals/*.yaml). It does not look into a plugin's directory, a hidden directory
(.git, .venv) or node_modules.

For a repository of many plugins: --json (or --jq) gives the list a CI matrix runs over, a job
a plugin (docs/ci.md).`,
		Example: `  oz0 plugin list
  oz0 plugin list plugins --jq '[.[].path]'             # a matrix's paths
  oz0 plugin list --jq '[.[] | select(.evals) | .path]'  # the plugins with eval cases`,
		Args: argsBetween(0, 1, "at most one DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = "."
			if len(args) == 1 {
				opts.Dir = args[0]
			}
			if err := opts.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return pluginListRun(opts)
		},
	}
	cmdutil.AddJSONFlags(cmd, &opts.JSONFlags, "the plugins")
	cmd.ValidArgsFunction = completeDir
	return cmd
}

func pluginListRun(opts *pluginListOptions) error {
	found, err := lint.Find(opts.Dir)
	if re := (*lint.RootError)(nil); errors.As(err, &re) {
		return cmdutil.Usagef("%s", re.Error()) // a DIR that is not one is how the command was called
	}
	if err != nil {
		return err
	}
	if opts.Enabled() {
		return opts.Write(opts.IO, found)
	}
	if len(found) == 0 {
		fmt.Fprintf(opts.IO.ErrOut, "no plugins under %s; make one with: oz0 plugin new NAME --template byo-agent\n", opts.Dir)
		return nil
	}
	t := newTable(opts.IO, "PATH", "NAME", "VERSION", "EVALS").keepWhole("PATH", "VERSION", "EVALS")
	for _, p := range found {
		evals := "no"
		if p.Evals {
			evals = "yes"
		}
		t.row(p.Path, p.Name, p.Version, evals)
	}
	return t.Render()
}
