package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/lint"
)

type pluginLintOptions struct {
	IO      *iostreams.IOStreams
	Version string // oz0's, for SARIF
	Dir     string
	Format  string
}

func newCmdPluginLint(f *cmdutil.Factory, runF func(*pluginLintOptions) error) *cobra.Command {
	opts := &pluginLintOptions{IO: f.IOStreams, Version: f.Version}
	cmd := &cobra.Command{
		Use:   "lint [DIR]",
		Short: "Check a plugin against the schemas and the cross-file rules",
		Long: `Validate oz0-plugin.yaml, agents/*.yaml and skills/*/SKILL.md against the JSON Schemas,
then the rules that span files. Rules are listed in docs/lint-rules.md.

Exit status: 0 clean (warnings allowed), 1 errors found, 2 usage, 3 cannot read.`,
		Example: `  oz0 plugin lint
  oz0 plugin lint acme-triage --format json
  oz0 plugin lint --format sarif > oz0.sarif
  oz0 plugin lint --format github   # annotations in a GitHub Actions log`,
		Args: argsBetween(0, 1, "at most one DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = "."
			if len(args) == 1 {
				opts.Dir = args[0]
			}
			if !slices.Contains(lint.Formats, opts.Format) {
				return cmdutil.Usagef("unknown --format %q; choose one of %s", opts.Format, strings.Join(lint.Formats, ", "))
			}
			if runF != nil {
				return runF(opts)
			}
			return pluginLintRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", lint.Formats[0], "output format: "+strings.Join(lint.Formats, ", "))
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(lint.Formats, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func pluginLintRun(opts *pluginLintOptions) error {
	rep, err := lint.Run(opts.Dir)
	if err != nil {
		return err
	}
	if err := lint.Write(opts.IO.Out, rep, opts.Format, opts.Version); err != nil {
		return err
	}
	if rep.HasErrors() {
		return &cmdutil.FindingsError{}
	}
	return nil
}
