package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/doctor"
)

type doctorOptions struct {
	IO     *iostreams.IOStreams
	Getenv func(string) string
	Plugin string
	cmdutil.JSONFlags
}

func newCmdDoctor(f *cmdutil.Factory, runF func(*doctorOptions) error) *cobra.Command {
	opts := &doctorOptions{IO: f.IOStreams, Getenv: f.Getenv}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check this machine for the oz0 dev loop, and say how to mend each miss",
		Long: `Check python, the plugin (it lints), its .venv (needed when it has dependencies), that its
harnesses' imports are installed, as their sessions would find them (their files are read, never
run; a framework that is not installed fails, naming the module, where it is imported and the
mend), uv (for a Node plugin: node, against the plugin's engines.node,
and its node_modules against package-lock.json), the dev server in OZ0_CONTEXT or running on the
plugin, a free loopback port, and which sandbox tiers work here (and if one does not, why).
Exit status 1 when a check fails; warnings do not fail it.`,
		Example: "  oz0 doctor\n  oz0 doctor --plugin acme-triage --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return doctorRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Plugin, "plugin", ".", "the plugin's directory")
	_ = cmd.MarkFlagDirname("plugin")
	cmdutil.AddJSONFlags(cmd, &opts.JSONFlags, "the checks")
	return cmd
}

func doctorRun(ctx context.Context, opts *doctorOptions) error {
	results := doctor.Run(ctx, doctor.Env{PluginDir: opts.Plugin, Getenv: opts.Getenv})
	out := opts.IO.Out
	failed := 0
	width := 10 // the checks' names, in a column
	for _, r := range results {
		width = max(width, len(r.Check))
	}
	for _, r := range results {
		if r.Level == doctor.Fail {
			failed++
		}
		if opts.Enabled() {
			continue
		}
		fmt.Fprintf(out, "%-4s  %-*s  %s\n", r.Level, width, r.Check, r.Detail)
		if r.Mend != "" {
			fmt.Fprintf(out, "      %-*s  mend: %s\n", width, "", r.Mend)
		}
	}
	if opts.Enabled() {
		if err := opts.Write(opts.IO, results); err != nil {
			return err
		}
	}
	switch {
	case failed > 0 && opts.Enabled():
		return &cmdutil.FindingsError{} // the JSON says which, with their mends
	case failed > 0:
		return &cmdutil.FindingsError{Msg: fmt.Sprintf("%d check(s) failed; see the mend lines above", failed)}
	}
	return nil
}
