package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
)

type uiOptions struct {
	clientOptions
	Getenv func(string) string
	// Browse opens a URL in the browser; nil is openBrowser.
	Browse func(getenv func(string) string, url string) error
	Print  bool
}

func newCmdUI(f *cmdutil.Factory, runF func(*uiOptions) error) *cobra.Command {
	opts := &uiOptions{clientOptions: newClientOptions(f), Getenv: f.Getenv}
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Open the dev UI in the browser, logged in",
		Long: `Ask the running dev server for a fresh one-time login link of its web UI and open it in the
browser: the BROWSER environment variable's command if it is set (as gh does), else the system's
(xdg-open, open). With --print, only print the link. Each link logs one browser in, once.`,
		Example: `  oz0 ui
  oz0 ui --print
  BROWSER=firefox oz0 ui`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return uiRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Print, "print", false, "print the login link instead of opening it")
	return cmd
}

func uiRun(ctx context.Context, opts *uiOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	link, err := c.UILogin(ctx)
	if err != nil {
		return err
	}
	if opts.Print {
		fmt.Fprintln(opts.IO.Out, link)
		return nil
	}
	browse := opts.Browse
	if browse == nil {
		browse = openBrowser
	}
	fmt.Fprintf(opts.IO.ErrOut, "Opening %s/ui/ in your browser.\n", c.URL())
	if err := browse(opts.Getenv, link); err != nil {
		return fmt.Errorf("cannot open a browser (%v); set BROWSER to one, or open the link oz0 ui --print prints", err)
	}
	return nil
}

// openBrowser opens url with the command in BROWSER (its words, then the URL), as gh does, else
// the system's opener.
func openBrowser(getenv func(string) string, url string) error {
	var argv []string
	if b := strings.Fields(getenv("BROWSER")); len(b) > 0 {
		argv = append(b, url)
	} else if runtime.GOOS == "darwin" {
		argv = []string{"open", url}
	} else {
		argv = []string{"xdg-open", url}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", argv[0], err)
	}
	return nil
}
