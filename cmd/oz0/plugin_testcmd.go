package main

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/conformance"
	"github.com/orchestrator-zero/oz0/fakemodel"
	"github.com/orchestrator-zero/oz0/internal/termtext"
	"github.com/orchestrator-zero/oz0/lint"
	"github.com/orchestrator-zero/oz0/plugin"
	"github.com/orchestrator-zero/oz0/supervisor"
	"github.com/orchestrator-zero/oz0/supervisor/ahead"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

type pluginTestOptions struct {
	IO *iostreams.IOStreams
	cmdutil.JSONFlags
	Dirs      []string // the plugins' directories, tested one after another in one report
	Harnesses []string
	Script    string
	Input     string
	InputSet  bool // --input was given: it wins over a script's input
	Timeout   time.Duration
	Grace     time.Duration
	Sandbox   sandbox.Tier // "": oz0 dev's default, standard where this machine allows it
	Ahead     ahead.Policy // --warm N (the default, 1), --cold
}

func newCmdPluginTest(f *cmdutil.Factory, runF func(*pluginTestOptions) error) *cobra.Command {
	opts := &pluginTestOptions{IO: f.IOStreams}
	var sandboxFlag string
	var warm int
	var cold bool
	cmd := &cobra.Command{
		Use:   "test [DIR...]",
		Short: "Check every harness of a plugin against harness protocol v1",
		Long: `Run every harness of the plugin with its real command, as a node does, against the gateway
and the fake model, in scripted scenarios: a plain run, an allowed tool call, a call whose
arguments the job changed, a denied call, a tool outside the agent's list, limits.max_steps
reached, and a cancel. Every line the harness writes is checked against the protocol's schemas.

Several DIRs (a repository's plugins: oz0 plugin list) are tested one after another, in one
report (--json: one list, each check with its plugin).

The plugins must lint clean first. Exit status: 0 all checks pass, 1 a check failed or the
plugin has lint errors, 2 usage, 3 the harness could not be run at all.`,
		Example: `  oz0 plugin test
  oz0 plugin test acme-triage --json
  oz0 plugin test plugins/*            # several plugins, one report
  oz0 plugin test --script my-model.yaml --input "The app crashes on login"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dirs = []string{"."}
			if len(args) > 0 {
				opts.Dirs = args
			}
			if len(opts.Dirs) > 1 && len(opts.Harnesses) > 0 {
				return cmdutil.Usagef("--harness picks a harness of one plugin: give one DIR with it")
			}
			if err := opts.Check(); err != nil {
				return err
			}
			opts.InputSet = cmd.Flags().Changed("input")
			if err := checkUTF8("--input", opts.Input, "a job's input is text: retype it"); err != nil {
				return err
			}
			if opts.Timeout <= 0 {
				return cmdutil.Usagef("--timeout must be longer than 0, e.g. --timeout %s", conformance.DefaultTimeout)
			}
			if opts.Grace <= 0 {
				return cmdutil.Usagef("--grace must be longer than 0, e.g. --grace %s", supervisor.DefaultGrace)
			}
			tier, err := sandbox.ParseTier(sandboxFlag)
			if err != nil {
				return cmdutil.Usagef("--sandbox: %v", err)
			}
			opts.Sandbox = tier
			if opts.Ahead, err = aheadPolicy(cmd, warm, cold); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return pluginTestRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddJSONFlags(cmd, &opts.JSONFlags, "the checks, once all have run")
	cmd.Flags().StringArrayVar(&opts.Harnesses, "harness", nil, "test only this harness (repeatable)")
	cmd.Flags().StringVar(&opts.Script, "script", "", "the fake model's script (default: the built-in one, which answers the byo-agent triage prompt)")
	cmd.Flags().StringVar(&opts.Input, "input", conformance.DefaultInput, "the job input of every scenario (default: the --script's input, if it has one, else the guide's ticket)")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", conformance.DefaultTimeout, "the longest one scenario may take")
	cmd.Flags().DurationVar(&opts.Grace, "grace", supervisor.DefaultGrace, "how long a harness has to exit after its last line or SIGTERM")
	cmd.Flags().StringVar(&sandboxFlag, "sandbox", "", "the sessions' sandbox: none, standard or strict (default: oz0 dev's, standard where this machine allows it)")
	addAheadFlags(cmd, &warm, &cold)
	_ = cmd.RegisterFlagCompletionFunc("harness", completeHarnesses)
	_ = cmd.RegisterFlagCompletionFunc("sandbox", cobra.FixedCompletions(sandbox.TierNames(), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.MarkFlagFilename("script", "yaml", "yml")
	cmd.ValidArgsFunction = completeDir
	return cmd
}

func pluginTestRun(ctx context.Context, opts *pluginTestOptions) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// Every plugin is loaded (and so linted) before any runs: one with lint errors runs none.
	var plugins []*plugin.Plugin
	for _, dir := range opts.Dirs {
		p, _, err := lint.Load(dir) // a plugin with lint errors gives a *diag.ReportError
		if err != nil {
			return err
		}
		for _, h := range opts.Harnesses {
			if p.Harness(h) == nil {
				return cmdutil.Usagef("--harness %s: the plugin in %s has no harness %s; it has %s", cmdutil.Quote(h), dir, cmdutil.Quote(h), strings.Join(harnessNames(p), ", "))
			}
		}
		plugins = append(plugins, p)
	}
	var script *fakemodel.Script
	if opts.Script != "" {
		var err error
		if script, err = fakemodel.LoadScript(opts.Script); err != nil {
			return err
		}
		// A recorded job's script carries its input, which its rules match: the scenarios send
		// it, unless --input says otherwise.
		if script.Input != "" && !opts.InputSet {
			opts.Input = script.Input
			if !opts.Enabled() {
				fmt.Fprintf(opts.IO.ErrOut, "oz0: the scenarios' input is the one in %s: %s\n", opts.Script, cmdutil.Quote(script.Input))
			}
		}
	}
	out := opts.IO.Out
	report := &conformance.Report{}
	for i, p := range plugins {
		started := "" // two plugins may have harnesses of one name
		if len(plugins) > 1 && !opts.Enabled() {
			if i > 0 {
				fmt.Fprintln(out)
			}
			fmt.Fprintf(out, "plugin %s (%s)\n", p.Manifest.Name, opts.Dirs[i])
		}
		rep, err := testPlugin(ctx, opts, p, script, out, &started)
		if rep != nil {
			report.Checks = append(report.Checks, rep.Checks...)
		}
		if err != nil {
			return err
		}
	}
	passed, failed, na := report.Counts()
	if opts.Enabled() {
		if err := opts.Write(opts.IO, report.Checks); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "%d passed, %d failed", passed, failed)
		if na > 0 {
			fmt.Fprintf(out, ", %d not applicable", na)
		}
		if n := report.NotRun(); n > 0 {
			fmt.Fprintf(out, ", %d not run", n)
		}
		fmt.Fprintln(out)
	}
	if failed > 0 {
		return &cmdutil.FindingsError{}
	}
	return nil
}

// testPlugin runs the checks of one plugin, each said as it ends (unless --json); started is the
// harness whose checks are being said.
func testPlugin(ctx context.Context, opts *pluginTestOptions, p *plugin.Plugin, script *fakemodel.Script, out io.Writer, started *string) (*conformance.Report, error) {
	return conformance.Run(ctx, p, conformance.Options{
		Script: script, Input: opts.Input, Timeout: opts.Timeout, Grace: opts.Grace, Harnesses: opts.Harnesses,
		Sandbox: opts.Sandbox, Ahead: opts.Ahead, Warn: func(w string) { fmt.Fprintln(opts.IO.ErrOut, "warning: "+w) },
		Progress: func(c conformance.Check) {
			if opts.Enabled() {
				return
			}
			if c.Harness != *started {
				*started = c.Harness
				fmt.Fprintf(out, "harness %s: protocol v1 against the gateway and the fake model\n", c.Harness)
				fmt.Fprintf(out, "  sandbox %s\n", c.Sandbox)
			}
			mark := "ok  "
			switch {
			case c.NotRun:
				fmt.Fprintf(out, "  --   %-19s %s (not run)\n", c.ID, c.Title)
				return
			case c.NotApplicable:
				mark = "n/a "
			case !c.Pass:
				mark = "FAIL"
			}
			fmt.Fprintf(out, "  %s %-19s %s (%.1fs)\n", mark, c.ID, c.Title, c.Elapsed.Seconds())
			if !c.Pass {
				fmt.Fprintf(out, "       expected: %s\n       got:      %s\n", termtext.Visible(c.Expected), termtext.Visible(c.Got))
			}
			if c.Diff != "" {
				// The request against the script's nearest rule, a line each, under what came.
				for _, l := range strings.Split(termtext.Visible(c.Diff), "\n") {
					fmt.Fprintf(out, "               %s\n", l)
				}
			}
			if c.Output != "" {
				// As the harness printed it: a traceback is read as Python wrote it.
				fmt.Fprintf(out, "       it printed:\n\n%s\n\n", c.Output)
			}
			if c.Hint != "" {
				fmt.Fprintf(out, "       do:       %s\n", c.Hint)
			}
			if c.Note != "" {
				fmt.Fprintf(out, "       note:     %s\n", termtext.Visible(c.Note))
			}
		},
	})
}

func harnessNames(p *plugin.Plugin) []string {
	names := make([]string, len(p.Manifest.Harnesses))
	for i, h := range p.Manifest.Harnesses {
		names[i] = h.Name
	}
	return names
}
