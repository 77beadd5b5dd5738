package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/devserver"
	"github.com/orchestrator-zero/oz0/fakemodel"
	"github.com/orchestrator-zero/oz0/internal/procstart"
	"github.com/orchestrator-zero/oz0/supervisor/ahead"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
	"github.com/orchestrator-zero/oz0/telemetry"
)

type devOptions struct {
	IO      *iostreams.IOStreams
	Version string
	Ref     string // the build's ref, which the scripts oz0 dev writes point their schema at
	Getenv  func(string) string

	Plugins     []string
	Addr        string
	StateDir    string
	Ephemeral   bool
	ReadyFile   string
	FakeScript  string
	Hooks       string
	LogLevel    string
	LogFormat   string
	Verbose     bool
	Sandbox     sandbox.Tier // "" (Auto): standard where this machine allows it, else none
	NoRecord    bool         // keep no model call's request and answer
	MaxSessions int          // 0: node.DefaultMaxSessions()
	Ahead       ahead.Policy // when sessions are made: --warm N (the default, 1), --cold
	OTLP        telemetry.Config
}

var (
	logLevels  = []string{"debug", "info", "warn", "error"}
	logFormats = []string{"text", "json"}
)

func newCmdDev(f *cmdutil.Factory, runF func(*devOptions) error) *cobra.Command {
	opts := &devOptions{IO: f.IOStreams, Version: f.Version, Ref: f.Build.Ref, Getenv: f.Getenv}
	var sandboxFlag string
	var record bool // --record, the default now: accepted, with a note
	var warm int
	var cold bool
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a dev server and a node with the plugin, offline",
		Long: `Start one process with the control API, the durable job store, a node that runs sessions,
the model gateway and a fake model, on a loopback port. It loads the plugin in the current
directory (or each --plugin), lints it first, and reloads it when its files change.

It listens on 127.0.0.1:4747, or, when another plugin's oz0 dev has that port, on one of the
plugin's own (4748 to 4999); a restarted oz0 dev comes back on the same address with the same
token. oz0 run, oz0 job, oz0 ui and the rest find it from the plugin's folder; elsewhere,
export the OZ0_CONTEXT=... line it prints. State (jobs, events, secrets) lives in .oz0/dev/ of
the plugin.

It keeps every model call's request and answer, masked and bounded (8 MiB a call, 64 MiB a job),
for oz0 job show --calls, the UI's job page, oz0 job replay and oz0 job script; --no-record keeps
none.`,
		Example: `  oz0 dev
  oz0 dev --plugin ./acme-triage --addr 127.0.0.1:7311
  oz0 dev --ephemeral            # state in a temporary directory, gone when it stops
  oz0 dev --no-record            # keep no model call's request and answer`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("max-sessions") && opts.MaxSessions < 1 {
				return cmdutil.Usagef("--max-sessions must be at least 1, not %d", opts.MaxSessions)
			}
			var err error
			if opts.Ahead, err = aheadPolicy(cmd, warm, cold); err != nil {
				return err
			}
			if record && opts.NoRecord {
				return cmdutil.Usagef("--record and --no-record do not go together; --record is the default")
			}
			if record {
				fmt.Fprintln(opts.IO.ErrOut, "oz0 dev: --record is the default now (every model call is kept); the flag does nothing, and --no-record keeps none")
			}
			if opts.Ephemeral && opts.StateDir != "" {
				return cmdutil.Usagef("--ephemeral and --state-dir do not go together; choose one")
			}
			if opts.Verbose {
				if cmd.Flags().Changed("log-level") && opts.LogLevel != "debug" {
					return cmdutil.Usagef("-v is --log-level debug; give one or the other")
				}
				opts.LogLevel = "debug"
			}
			if !slices.Contains(logLevels, opts.LogLevel) {
				return cmdutil.Usagef("unknown --log-level %s; choose one of %s", cmdutil.Quote(opts.LogLevel), strings.Join(logLevels, ", "))
			}
			if !slices.Contains(logFormats, opts.LogFormat) {
				return cmdutil.Usagef("unknown --log-format %s; choose text or json", cmdutil.Quote(opts.LogFormat))
			}
			tier, err := sandbox.ParseTier(sandboxFlag)
			if err != nil {
				return cmdutil.Usagef("--sandbox: %v", err)
			}
			opts.Sandbox = tier
			if opts.Addr != "" {
				addr, err := loopbackAddr(opts.Addr)
				if err != nil {
					return err
				}
				opts.Addr = addr
			}
			if err := checkOutputFile("--ready-file", opts.ReadyFile); err != nil {
				return err
			}
			// The flags' values are checked here (the variables' when oz0 dev starts).
			if p := opts.OTLP.Protocol; p != "" && p != telemetry.ProtocolHTTP && p != telemetry.ProtocolGRPC {
				return cmdutil.Usagef("unknown --otlp-protocol %s; choose http/protobuf or grpc", cmdutil.Quote(p))
			}
			if ep := opts.OTLP.Endpoint; ep != "" {
				if u, err := url.Parse(ep); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return cmdutil.Usagef("--otlp-endpoint %s is not an http(s) URL such as http://localhost:4318", cmdutil.Quote(ep))
				}
			}
			if runF != nil {
				return runF(opts)
			}
			return devRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringArrayVar(&opts.Plugins, "plugin", nil, "a plugin directory to serve (repeatable; default: the current directory)")
	cmd.Flags().StringVar(&opts.Addr, "addr", "", "the loopback address to listen on (port 0: a free one; default: 127.0.0.1:4747, or this plugin's own port when that is taken)")
	cmd.Flags().StringVar(&opts.StateDir, "state-dir", "", "where jobs, events and secrets live (default: .oz0/dev of the first plugin)")
	cmd.Flags().BoolVar(&opts.Ephemeral, "ephemeral", false, "keep state in a temporary directory, removed when oz0 dev stops")
	cmd.Flags().StringVar(&opts.ReadyFile, "ready-file", "", "write the OZ0_CONTEXT value to this file once ready (for scripts)")
	cmd.Flags().StringVar(&opts.FakeScript, "fake-script", "", "the fake model's script (default: the built-in one)")
	cmd.Flags().StringVar(&opts.Hooks, "hooks", "", "the tenant's hooks file (default: hooks.yaml in the state directory, if there is one)")
	cmd.Flags().IntVar(&opts.MaxSessions, "max-sessions", 0, "the most sessions run at once, past one a core only while a core is free; more jobs wait, queued (default: 4 a core, at most one a 256 MiB of memory, 2 to 64)")
	addAheadFlags(cmd, &warm, &cold)
	cmd.Flags().BoolVar(&opts.NoRecord, "no-record", false, "keep no model call's request and answer (kept by default: oz0 job show --calls, replay, script)")
	cmd.Flags().BoolVar(&record, "record", false, "")
	_ = cmd.Flags().MarkHidden("record")
	cmd.Flags().StringVar(&opts.OTLP.Endpoint, "otlp-endpoint", "", "send each job's trace over OTLP to this backend, e.g. http://localhost:4318 (default: OTEL_EXPORTER_OTLP_ENDPOINT; docs/observability.md)")
	cmd.Flags().StringVar(&opts.OTLP.Protocol, "otlp-protocol", "", "the OTLP protocol: http/protobuf or grpc (default: OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf)")
	cmd.Flags().BoolVar(&opts.OTLP.Content, "otlp-content", false, "export prompt and completion contents too (default: not exported; OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true)")
	cmd.Flags().StringVar(&opts.LogLevel, "log-level", "info", "the least severe log lines shown on stderr: "+strings.Join(logLevels, ", "))
	cmd.Flags().StringVar(&opts.LogFormat, "log-format", "text", "the log lines' format: text (key=value) or json (one object a line)")
	cmd.Flags().BoolVarP(&opts.Verbose, "verbose", "v", false, "log more: every control API call too (--log-level debug)")
	_ = cmd.RegisterFlagCompletionFunc("log-level", cobra.FixedCompletions(logLevels, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("log-format", cobra.FixedCompletions(logFormats, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.MarkFlagDirname("plugin")
	_ = cmd.MarkFlagDirname("state-dir")
	_ = cmd.MarkFlagFilename("fake-script", "yaml", "yml")
	_ = cmd.MarkFlagFilename("hooks", "yaml", "yml")
	cmd.Flags().StringVar(&sandboxFlag, "sandbox", "", "the sessions' sandbox: none, standard or strict (default: standard where this machine allows it, else none, with a warning; docs/sandbox.md)")
	_ = cmd.RegisterFlagCompletionFunc("sandbox", cobra.FixedCompletions(sandbox.TierNames(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// logHandler formats the dev server's log lines on stderr as --log-level and --log-format say.
func logHandler(opts *devOptions) slog.Handler {
	var level slog.Level
	_ = level.UnmarshalText([]byte(opts.LogLevel)) // checked in flag parsing
	ho := &slog.HandlerOptions{Level: level}
	if opts.LogFormat == "json" {
		return slog.NewJSONHandler(opts.IO.ErrOut, ho)
	}
	return slog.NewTextHandler(opts.IO.ErrOut, ho)
}

func devRun(ctx context.Context, opts *devOptions) error {
	started := procstart.Time() // "ready in" counts what ran before main too
	// Ctrl-C, SIGTERM, or the terminal closing (SIGHUP) stop oz0 dev; they are caught for as long
	// as it runs, so that a second one hurries the stop rather than ending oz0 dev half done.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	if !signal.Ignored(syscall.SIGHUP) { // nohup oz0 dev: the terminal's end must not stop it
		signal.Notify(sigs, syscall.SIGHUP)
	}
	defer signal.Stop(sigs)
	ready := readyFile(opts.ReadyFile)
	if err := ready.clear(); err != nil {
		return err
	}
	var script *fakemodel.Script
	if opts.FakeScript != "" {
		var err error
		if script, err = fakemodel.LoadScript(opts.FakeScript); err != nil {
			return err
		}
	}
	var tokenFiles []string
	if opts.ReadyFile != "" {
		abs, err := filepath.Abs(opts.ReadyFile)
		if err != nil {
			return err
		}
		tokenFiles = append(tokenFiles, abs) // it holds the token: sessions must not read it
	}
	srv, err := devserver.Start(devserver.Config{
		TokenFiles: tokenFiles,
		PluginDirs: opts.Plugins, Addr: opts.Addr, StablePort: opts.Addr == "", StateDir: opts.StateDir, Ephemeral: opts.Ephemeral,
		Version: opts.Version, FakeScript: script, FakeScriptFile: opts.FakeScript, Out: opts.IO.Out, Log: opts.IO.ErrOut, LogHandler: logHandler(opts), Started: started,
		Getenv: opts.Getenv, HooksFile: opts.Hooks, Sandbox: opts.Sandbox, Record: !opts.NoRecord, Ref: opts.Ref,
		MaxSessions: opts.MaxSessions, Telemetry: opts.OTLP, Ahead: opts.Ahead,
	})
	if errors.Is(err, devserver.ErrAgentConflict) {
		return &cmdutil.FindingsError{Msg: err.Error()} // the plugins given cannot be served together
	}
	if err != nil {
		return err
	}
	if err := ready.write(srv.Context().String()); err != nil {
		srv.Close()
		return err
	}
	defer ready.remove()
	select {
	case <-sigs:
	case <-ctx.Done():
	}
	fmt.Fprintln(opts.IO.Out, "oz0 dev: stopping; running jobs are interrupted (Ctrl-C again ends their sessions at once)")
	return stopDev(srv, sigs, opts.IO.Out)
}

// stopDev closes srv. A second signal while it closes kills the running sessions at once
// (Server.Hurry) instead of waiting out their grace period; their jobs are still recorded as
// interrupted. A third ends oz0 dev where it stands: its next start tidies up after it, as after
// a crash.
func stopDev(srv interface {
	Close() error
	Hurry()
}, sigs <-chan os.Signal, out io.Writer) error {
	closed := make(chan error, 1)
	go func() { closed <- srv.Close() }()
	for hurried := false; ; {
		select {
		case err := <-closed:
			if err != nil {
				return err
			}
			fmt.Fprintln(out, "oz0 dev: stopped")
			return nil
		case <-sigs:
			if hurried {
				return errors.New("stopped at once, before it had recorded its jobs' ends: the next oz0 dev marks them interrupted and cleans up")
			}
			hurried = true
			fmt.Fprintln(out, "oz0 dev: ending the running sessions now (once more stops at once, untidied)")
			srv.Hurry()
		}
	}
}

// addAheadFlags adds --warm N and --cold, which oz0 dev and oz0 plugin test share.
func addAheadFlags(cmd *cobra.Command, warm *int, cold *bool) {
	cmd.Flags().IntVar(warm, "warm", 1, "make N sessions of each harness ahead of their jobs, its dependencies loaded: forked from a Python harness's fork server (at least 2; at the job when none is ready), else each started ahead (docs/sandbox.md)")
	cmd.Flags().BoolVar(cold, "cold", false, "make each session at its job, as the platform's cold start does (no session made ahead)")
}

// aheadPolicy is the policy --warm and --cold say.
func aheadPolicy(cmd *cobra.Command, warm int, cold bool) (ahead.Policy, error) {
	switch {
	case cold && cmd.Flags().Changed("warm"):
		return ahead.Policy{}, cmdutil.Usagef("--warm and --cold say opposite things; give one")
	case cold:
		return ahead.Policy{Mode: ahead.Cold}, nil
	case warm < 1:
		return ahead.Policy{}, cmdutil.Usagef("--warm must be at least 1, not %d (--cold makes none ahead)", warm)
	}
	return ahead.Policy{Mode: ahead.Warm, PerHarness: warm, Fork: true}, nil
}
