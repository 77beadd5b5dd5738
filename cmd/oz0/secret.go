package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/orchestrator-zero/oz0/devserver/client"
	"github.com/orchestrator-zero/oz0/devserver/secrets"
	"github.com/orchestrator-zero/oz0/internal/cmdutil"
)

func newCmdSecret(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secret <command>",
		Short: "Set, list and remove the tenant's secrets on the dev server",
		Long: `Secrets are the tenant's: provider keys such as ANTHROPIC_API_KEY, which the gateway adds to
model calls on their way out. Values are never printed, and are masked in every job's stream and
trace. Setting ANTHROPIC_API_KEY or OPENAI_API_KEY creates that provider's model record.`,
		Example: `  printf %s "$ANTHROPIC_API_KEY" | oz0 secret set ANTHROPIC_API_KEY
  oz0 secret set ANTHROPIC_API_KEY --base-url http://127.0.0.1:8080   # behind your own gateway
  oz0 secret list
  oz0 secret rm OPENAI_API_KEY`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	var baseURL string
	set := &cobra.Command{
		Use:   "set NAME",
		Short: "Set a secret, its value read from stdin",
		Long: `Set a secret. The value is read from stdin (without echo on a terminal); one trailing newline
is trimmed. --base-url points a provider key's record at another upstream.`,
		Example: `  printf %s "$ANTHROPIC_API_KEY" | oz0 secret set ANTHROPIC_API_KEY
  oz0 secret set OPENAI_API_KEY          # on a terminal: asks for it without echo`,
		Args: argsBetween(1, 1, "one NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if !secrets.ValidName(name) {
				return cmdutil.Usagef("secret name %q is not valid; use capitals, digits and _, starting with a capital, like ANTHROPIC_API_KEY", name)
			}
			c, err := client.FromEnv(f.Getenv)
			if err != nil {
				return cmdutil.Usagef("%s", err)
			}
			value, err := readSecret(f, name)
			if err != nil {
				return err
			}
			if err := c.SetSecret(context.Background(), name, value, baseURL); err != nil {
				return apiUsageError(err)
			}
			fmt.Fprintf(f.IOStreams.ErrOut, "oz0: secret %s set\n", name)
			return nil
		},
	}
	set.Flags().StringVar(&baseURL, "base-url", "", "for ANTHROPIC_API_KEY or OPENAI_API_KEY: the provider's upstream base URL")
	var asJSON bool
	list := &cobra.Command{
		Use:     "list",
		Short:   "List the secrets' names and when they were set; never their values",
		Example: "  oz0 secret list\n  oz0 secret list --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client.FromEnv(f.Getenv)
			if err != nil {
				return cmdutil.Usagef("%s", err)
			}
			list, err := c.Secrets(context.Background())
			if err != nil {
				return apiUsageError(err)
			}
			if asJSON {
				return writeJSONLines(f.IOStreams.Out, list)
			}
			if len(list) == 0 {
				io.WriteString(f.IOStreams.ErrOut, "no secrets; set one with: printf %s \"$KEY\" | oz0 secret set NAME\n")
				return nil
			}
			tw := tabwriter.NewWriter(f.IOStreams.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSET\tUPSTREAM")
			for _, s := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.SetAt.Local().Format(time.DateTime), s.BaseURL)
			}
			return tw.Flush()
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON lines")
	rm := &cobra.Command{
		Use:     "rm NAME",
		Short:   "Remove a secret",
		Example: "  oz0 secret rm OPENAI_API_KEY",
		Args:    argsBetween(1, 1, "one NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client.FromEnv(f.Getenv)
			if err != nil {
				return cmdutil.Usagef("%s", err)
			}
			if err := c.RemoveSecret(context.Background(), args[0]); err != nil {
				return apiUsageError(err)
			}
			fmt.Fprintf(f.IOStreams.ErrOut, "oz0: secret %s removed\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(set, list, rm)
	return cmd
}

// readSecret reads a secret's value from stdin: without echo on a terminal, one trailing newline
// trimmed.
func readSecret(f *cmdutil.Factory, name string) (string, error) {
	var b []byte
	var err error
	if file, ok := f.IOStreams.In.(*os.File); ok && f.IOStreams.IsStdinTTY() {
		fmt.Fprintf(f.IOStreams.ErrOut, "%s (input hidden): ", name)
		b, err = term.ReadPassword(int(file.Fd()))
		fmt.Fprintln(f.IOStreams.ErrOut)
	} else {
		b, err = io.ReadAll(io.LimitReader(f.IOStreams.In, secrets.MaxValue+2))
	}
	if err != nil {
		return "", fmt.Errorf("cannot read the value: %w", err)
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	if len(b) == 0 {
		return "", cmdutil.Usagef("the value of %s is empty; pipe it in: printf %%s \"$VALUE\" | oz0 secret set %s", name, name)
	}
	if len(b) > secrets.MaxValue {
		return "", cmdutil.Usagef("the value of %s is over %d KiB", name, secrets.MaxValue>>10)
	}
	return string(b), nil
}
