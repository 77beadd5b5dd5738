package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/devserver"
	"github.com/orchestrator-zero/oz0/devserver/fakemodel"
	"github.com/orchestrator-zero/oz0/harnesskit/sandbox"
	"github.com/orchestrator-zero/oz0/internal/cmdutil"
)

type devOptions struct {
	Plugins    []string
	Addr       string
	StateDir   string
	Ephemeral  bool
	ReadyFile  string
	FakeScript string
	Hooks      string
	Sandbox    string
}

func newCmdDev(f *cmdutil.Factory) *cobra.Command {
	opts := &devOptions{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a dev server and a node with the plugin, offline",
		Long: `Start one process with the control API, the durable job store, a node that runs sessions,
the model gateway and a fake model, on a loopback port. It loads the plugin in the current
directory (or each --plugin), lints it first, and reloads it when its files change.

It prints the export OZ0_CONTEXT=... line that oz0 run, oz0 job and oz0 secret need in
another terminal. State (jobs, events, secrets) lives in .oz0/dev/ of the plugin.`,
		Example: `  oz0 dev
  oz0 dev --plugin ./acme-triage --addr 127.0.0.1:7311
  oz0 dev --ephemeral            # state in a temporary directory, gone when it stops`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runDev(f, opts) },
	}
	cmd.Flags().StringArrayVar(&opts.Plugins, "plugin", nil, "a plugin directory to serve (repeatable; default: the current directory)")
	cmd.Flags().StringVar(&opts.Addr, "addr", "127.0.0.1:0", "the loopback address to listen on (port 0: a free one)")
	cmd.Flags().StringVar(&opts.StateDir, "state-dir", "", "where jobs, events and secrets live (default: .oz0/dev of the first plugin)")
	cmd.Flags().BoolVar(&opts.Ephemeral, "ephemeral", false, "keep state in a temporary directory, removed when oz0 dev stops")
	cmd.Flags().StringVar(&opts.ReadyFile, "ready-file", "", "write the OZ0_CONTEXT value to this file once ready (for scripts)")
	cmd.Flags().StringVar(&opts.FakeScript, "fake-script", "", "the fake model's script (default: the built-in one)")
	cmd.Flags().StringVar(&opts.Hooks, "hooks", "", "the tenant's hooks file (default: hooks.yaml in the state directory, if there is one)")
	cmd.Flags().StringVar(&opts.Sandbox, "sandbox", "", "the sessions' sandbox: none, standard or strict (default: standard where this machine allows it, else none, with a warning; docs/sandbox.md)")
	return cmd
}

func runDev(f *cmdutil.Factory, opts *devOptions) error {
	started := time.Now()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var script *fakemodel.Script
	if opts.FakeScript != "" {
		var err error
		if script, err = fakemodel.LoadScript(opts.FakeScript); err != nil {
			return err
		}
	}
	if opts.Ephemeral && opts.StateDir != "" {
		return cmdutil.Usagef("--ephemeral and --state-dir do not go together; choose one")
	}
	tier, err := sandbox.ParseTier(opts.Sandbox)
	if err != nil {
		return cmdutil.Usagef("--sandbox: %v", err)
	}
	srv, err := devserver.Start(ctx, devserver.Config{
		PluginDirs: opts.Plugins, Addr: opts.Addr, StateDir: opts.StateDir, Ephemeral: opts.Ephemeral,
		Version: f.Version, FakeScript: script, Out: f.IOStreams.Out, Log: f.IOStreams.ErrOut, Started: started,
		Getenv: f.Getenv, HooksFile: opts.Hooks, Sandbox: tier,
	})
	var startErr *devserver.StartError
	if errors.As(err, &startErr) {
		return &cmdutil.FindingsError{Msg: startErr.Msg}
	}
	if err != nil {
		return err
	}
	if opts.ReadyFile != "" {
		if err := writeFileAtomic(opts.ReadyFile, []byte(srv.Context().String()+"\n")); err != nil {
			srv.Close()
			return err
		}
		defer os.Remove(opts.ReadyFile)
	}
	<-ctx.Done()
	stop()
	fmt.Fprintln(f.IOStreams.Out, "oz0 dev: stopping; running jobs are interrupted")
	if err := srv.Close(); err != nil {
		return err
	}
	fmt.Fprintln(f.IOStreams.Out, "oz0 dev: stopped")
	return nil
}
