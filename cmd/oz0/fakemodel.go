package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/devserver/fakemodel"
	"github.com/orchestrator-zero/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/internal/iostreams"
)

func newCmdFakeModel(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fake-model <command>",
		Short: "A scripted fake model API, for tests and offline work",
		Example: `  oz0 fake-model serve
  oz0 fake-model serve --script replies.yaml --addr 127.0.0.1:8089`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCmdFakeModelServe(f, nil))
	return cmd
}

type fakeModelServeOptions struct {
	IO        *iostreams.IOStreams
	Script    string
	Addr      string
	ReadyFile string
	Verbose   bool
}

func newCmdFakeModelServe(f *cmdutil.Factory, runF func(context.Context, *fakeModelServeOptions) error) *cobra.Command {
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
			if err := checkLoopback(opts.Addr); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if runF != nil {
				return runF(ctx, opts)
			}
			return runFakeModelServe(ctx, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Script, "script", "s", "", "the script file (default: the built-in script)")
	cmd.Flags().StringVar(&opts.Addr, "addr", "127.0.0.1:0", "the loopback address to listen on; port 0 picks a free one")
	cmd.Flags().StringVar(&opts.ReadyFile, "ready-file", "", "write the URL into this file once listening (removed again on exit)")
	cmd.Flags().BoolVarP(&opts.Verbose, "verbose", "v", false, "log one line per request to stderr")
	_ = cmd.MarkFlagFilename("script", "yaml", "yml")
	return cmd
}

// checkLoopback refuses an address that is not on the loopback interface: the fake model API
// answers anyone who can reach it.
func checkLoopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return cmdutil.Usagef("--addr %q is not HOST:PORT; use e.g. --addr 127.0.0.1:8089, or port 0 for a free one", addr)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return cmdutil.Usagef("--addr %q has a bad port; use e.g. --addr 127.0.0.1:8089, or port 0 for a free one", addr)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return cmdutil.Usagef("--addr %q is not a loopback address: the fake model API only listens on 127.0.0.1, ::1 or localhost, e.g. --addr 127.0.0.1:8089", addr)
}

func runFakeModelServe(ctx context.Context, opts *fakeModelServeOptions) error {
	// A ready file from an earlier run must not be taken for this one's.
	if opts.ReadyFile != "" {
		if err := os.Remove(opts.ReadyFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("cannot remove the old --ready-file: %w", err)
		}
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
	if opts.Verbose {
		srv.Log = opts.IO.ErrOut
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	url := "http://" + ln.Addr().String()
	if opts.ReadyFile != "" {
		if err := writeFileAtomic(opts.ReadyFile, []byte(url+"\n")); err != nil {
			hs.Close()
			return fmt.Errorf("cannot write --ready-file: %w", err)
		}
		defer os.Remove(opts.ReadyFile)
	}
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

// writeFileAtomic writes data to a temporary file beside path and renames it into place, so a
// reader never sees a partial file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
