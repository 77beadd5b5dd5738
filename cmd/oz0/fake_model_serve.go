package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/fakemodel"
)

func newCmdFakeModel(f *cmdutil.Factory) *cobra.Command {
	return groupCmd("fake-model <command>", "A scripted fake model API, for tests and offline work", "",
		`  oz0 fake-model serve
  oz0 fake-model serve --script replies.yaml --addr 127.0.0.1:8089`,
		newCmdFakeModelServe(f, nil))
}

type fakeModelServeOptions struct {
	IO        *iostreams.IOStreams
	Script    string
	Addr      string
	ReadyFile string
	Verbose   bool
}

func newCmdFakeModelServe(f *cmdutil.Factory, runF func(*fakeModelServeOptions) error) *cobra.Command {
	opts := &fakeModelServeOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "serve [--script FILE] [--addr HOST:PORT] [--ready-file FILE]",
		Short: "Serve Anthropic's Messages API and OpenAI's Chat Completions API from a script",
		Long: `Serve a fake model API on a loopback address, offline and deterministic: Anthropic's Messages
API (POST /v1/messages, streaming included, /v1/messages/count_tokens, /v1/models) and OpenAI's
Chat Completions API (POST /v1/chat/completions, streaming included, /v1/models).

A script (YAML) is ordered rules: the first whose match fits a request answers it with text,
JSON, tool calls or an error. Without --script, the built-in script answers: it sorts the
byo-agent template's support tickets, so the guide works offline. The script format is in
docs/fake-model.md; a script with problems is reported like oz0 plugin lint does, and nothing is
served (exit 1).

Once listening, one line goes to stdout with the URL, and --ready-file gets the URL too, so a
script can wait for it. Point the SDKs at it with ANTHROPIC_BASE_URL=URL and
OPENAI_BASE_URL=URL/v1; keys are not checked unless the script sets require_key.
SIGINT or SIGTERM stops it (exit 0).`,
		Example: `  oz0 fake-model serve                                   # the built-in script, on a free port
  oz0 fake-model serve --script replies.yaml --addr 127.0.0.1:8089
  oz0 fake-model serve --script replies.yaml --ready-file fm.url &
  until [ -s fm.url ]; do sleep 0.1; done
  ANTHROPIC_BASE_URL=$(cat fm.url) ANTHROPIC_API_KEY=test uv run pytest`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			addr, err := loopbackAddr(opts.Addr)
			if err != nil {
				return err
			}
			opts.Addr = addr
			if err := checkOutputFile("--ready-file", opts.ReadyFile); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return fakeModelServeRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Script, "script", "s", "", "the script file (default: the built-in script)")
	cmd.Flags().StringVar(&opts.Addr, "addr", "127.0.0.1:0", "the loopback address to listen on; port 0 picks a free one")
	cmd.Flags().StringVar(&opts.ReadyFile, "ready-file", "", "write the URL into this file once listening (removed again on exit)")
	cmd.Flags().BoolVarP(&opts.Verbose, "verbose", "v", false, "log one line per request to stderr")
	_ = cmd.MarkFlagFilename("script", "yaml", "yml")
	return cmd
}

func fakeModelServeRun(ctx context.Context, opts *fakeModelServeOptions) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ready := readyFile(opts.ReadyFile)
	if err := ready.clear(); err != nil {
		return err
	}
	script := fakemodel.DefaultScript()
	if opts.Script != "" {
		s, err := fakemodel.LoadScript(opts.Script)
		if err != nil {
			return err
		}
		script = s
	}

	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w; choose another port with --addr, or port 0 for a free one", opts.Addr, err)
	}
	srv := fakemodel.New(script)
	srv.KeepRequests = -1 // no one reads them: kept, they held up to 1000 bodies
	if opts.Verbose {
		srv.Log = opts.IO.ErrOut
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	url := "http://" + ln.Addr().String()
	if err := ready.write(url); err != nil {
		hs.Close()
		return err
	}
	defer ready.remove()
	name := script.Name
	if opts.Script != "" {
		name = opts.Script
	}
	fmt.Fprintf(opts.IO.Out, "fake model API listening on %s (script: %s)\n", url, name)

	select {
	case err := <-served:
		return fmt.Errorf("the fake model API stopped: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil {
		hs.Close() // streams still running after the grace period are cut
	}
	return nil
}
