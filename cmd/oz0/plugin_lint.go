package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/devserver/fakemodel"
	"github.com/orchestrator-zero/oz0/devserver/hooks"
	"github.com/orchestrator-zero/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/lint"
	"github.com/orchestrator-zero/oz0/lint/diag"
)

type pluginLintOptions struct {
	IO          *iostreams.IOStreams
	Version     string // oz0's, for SARIF
	Dir         string
	Format      string
	FakeScripts []string
	HooksFiles  []string
}

func newCmdPluginLint(f *cmdutil.Factory, runF func(*pluginLintOptions) error) *cobra.Command {
	opts := &pluginLintOptions{IO: f.IOStreams, Version: f.Version}
	cmd := &cobra.Command{
		Use:   "lint [DIR]",
		Short: "Check a plugin against the schemas and the cross-file rules",
		Long: `Validate oz0-plugin.yaml, agents/*.yaml and skills/*/SKILL.md against the JSON Schemas,
then the rules that span files. Rules are listed in docs/lint-rules.md.

--fake-script and --hooks check a fake model script and a hooks file as well, in the same report
and format, so that every YAML file oz0 reads can be checked in CI.

Exit status: 0 clean (warnings allowed), 1 errors found, 2 usage, 3 cannot read.`,
		Example: `  oz0 plugin lint
  oz0 plugin lint acme-triage --format json
  oz0 plugin lint --format sarif > oz0.sarif
  oz0 plugin lint --format github   # annotations in a GitHub Actions log
  oz0 plugin lint --fake-script tests/replies.yaml --hooks ../ops/hooks.yaml`,
		Args: argsBetween(0, 1, "at most one DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = "."
			if len(args) == 1 {
				opts.Dir = args[0]
			}
			if !slices.Contains(diag.Formats, opts.Format) {
				return cmdutil.Usagef("unknown --format %q; choose one of %s", opts.Format, strings.Join(diag.Formats, ", "))
			}
			if runF != nil {
				return runF(opts)
			}
			return pluginLintRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", diag.FormatText, "output format: "+strings.Join(diag.Formats, ", "))
	cmd.Flags().StringArrayVar(&opts.FakeScripts, "fake-script", nil, "also check this fake model script (repeatable)")
	cmd.Flags().StringArrayVar(&opts.HooksFiles, "hooks", nil, "also check this hooks file (repeatable)")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(diag.Formats, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.MarkFlagFilename("fake-script", "yaml", "yml")
	_ = cmd.MarkFlagFilename("hooks", "yaml", "yml")
	return cmd
}

func pluginLintRun(opts *pluginLintOptions) error {
	rep, err := lint.Run(opts.Dir)
	if err != nil {
		return err
	}
	if len(opts.FakeScripts)+len(opts.HooksFiles) > 0 {
		// One report: the plugin's files shown as they are from here, like the other files.
		for i := range rep.Diagnostics {
			rep.Diagnostics[i].File = rep.Path(rep.Diagnostics[i])
		}
		rep.Dir = ""
		for _, name := range opts.FakeScripts {
			if err := addFileReport(rep, name, func() error { _, err := fakemodel.LoadScript(name); return err }); err != nil {
				return err
			}
		}
		for _, name := range opts.HooksFiles {
			if err := addFileReport(rep, name, func() error {
				set, err := hooks.Load(name)
				if err == nil {
					set.Close()
				}
				return err
			}); err != nil {
				return err
			}
		}
	}
	if err := diag.Write(opts.IO.Out, rep, opts.Format, opts.Version); err != nil {
		return err
	}
	if rep.HasErrors() {
		return &cmdutil.FindingsError{}
	}
	return nil
}

// addFileReport loads the file name with load and adds its problems to rep; a file that cannot be
// read at all is an error of its own.
func addFileReport(rep *diag.Report, name string, load func() error) error {
	if _, err := os.Stat(name); err != nil {
		return fmt.Errorf("cannot read %s: %w", name, errors.Unwrap(err))
	}
	err := load()
	var re *diag.ReportError
	if errors.As(err, &re) {
		rep.Add(re.Report.Diagnostics...)
		return nil
	}
	return err
}
