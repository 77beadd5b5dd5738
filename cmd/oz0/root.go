package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/lint/diag"
)

// newCmdRoot builds the whole command tree.
func newCmdRoot(f *cmdutil.Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "oz0 <command>",
		Short: "The Orchestrator Zero plugin toolchain and local dev CLI",
		Long: `oz0 scaffolds, lints, tests and runs Orchestrator Zero agent plugins.

Start with a plugin from a template, check it, and run its tests:`,
		Example: `  oz0 plugin new acme-triage --template byo-agent --description "Sorts support tickets"
  cd acme-triage
  oz0 plugin lint`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       f.Version,
		Args:          noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	root.SetVersionTemplate("oz0 version {{.Version}}\n")
	root.SetIn(f.IOStreams.In)
	root.SetOut(f.IOStreams.Out)
	root.SetErr(f.IOStreams.ErrOut)
	root.SetFlagErrorFunc(flagError)
	root.CompletionOptions.DisableDefaultCmd = true

	root.AddCommand(newCmdVersion(f))
	root.AddCommand(newCmdCompletion(f))
	root.AddCommand(newCmdPlugin(f))
	root.AddCommand(newCmdDev(f, nil))
	root.AddCommand(newCmdRun(f, nil))
	root.AddCommand(newCmdSecret(f))
	root.AddCommand(newCmdJob(f))
	root.AddCommand(newCmdApproval(f))
	root.AddCommand(newCmdDoctor(f, nil))
	root.AddCommand(newCmdFakeModel(f))
	return root
}

// execute runs the command tree and turns its error into an exit code and one line on stderr,
// after the findings the error carries, if any.
func execute(f *cmdutil.Factory, args []string) int {
	root := newCmdRoot(f)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	var findings *cmdutil.FindingsError
	if err != nil && !(errors.As(err, &findings) && findings.Msg == "") {
		line := err.Error()
		if summary, ok := reportFindings(f.IOStreams.ErrOut, err, f.Version); ok {
			line = summary
		}
		fmt.Fprintf(f.IOStreams.ErrOut, "oz0: %s\n", oneLine(line))
	}
	return cmdutil.ExitCode(err)
}

// oneLine keeps an error to the one line the README promises.
func oneLine(s string) string { return diag.Squash(s, 0) }

// flagError makes cobra's flag errors usage errors that point at the help.
func flagError(cmd *cobra.Command, err error) error {
	return cmdutil.Usagef("%s; see '%s --help'", err, cmd.CommandPath())
}

// noArgs rejects arguments on commands that take none, naming an unknown subcommand as such.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if cmd.HasSubCommands() {
		return cmdutil.Usagef("unknown command %q for %q; see '%s --help'", args[0], cmd.CommandPath(), cmd.CommandPath())
	}
	return cmdutil.Usagef("%s takes no arguments, got %q; see '%s --help'", cmd.CommandPath(), args[0], cmd.CommandPath())
}

// argsBetween accepts min..max positional arguments, describing them by names in the error.
func argsBetween(min, max int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < min {
			return cmdutil.Usagef("%s needs %s; see '%s --help'", cmd.CommandPath(), names, cmd.CommandPath())
		}
		if len(args) > max {
			return cmdutil.Usagef("%s takes %s, got %d arguments (quote a value with spaces); see '%s --help'", cmd.CommandPath(), names, len(args), cmd.CommandPath())
		}
		return nil
	}
}

// groupCmd is a command that only holds subcommands: alone, it shows its help.
func groupCmd(use, short, long, example string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long, Example: example,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(subs...)
	return cmd
}
