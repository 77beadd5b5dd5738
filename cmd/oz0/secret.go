package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/internal/termtext"
)

func newCmdSecret(f *cmdutil.Factory) *cobra.Command {
	return groupCmd("secret <command>", "Set, list and remove the tenant's secrets on the dev server",
		`Secrets are the tenant's: provider keys such as ANTHROPIC_API_KEY, which the gateway adds to
model calls on their way out. Values are never printed, and are masked in every job's stream and
trace. Setting ANTHROPIC_API_KEY or OPENAI_API_KEY creates that provider's model record.`,
		`  printf %s "$ANTHROPIC_API_KEY" | oz0 secret set ANTHROPIC_API_KEY
  oz0 secret set ANTHROPIC_API_KEY --base-url http://127.0.0.1:8080   # behind your own gateway
  oz0 secret list
  oz0 secret rm OPENAI_API_KEY`,
		newCmdSecretSet(f, nil), newCmdSecretList(f, nil), newCmdSecretRm(f, nil))
}

type secretSetOptions struct {
	clientOptions
	Name    string
	BaseURL string
}

func newCmdSecretSet(f *cmdutil.Factory, runF func(*secretSetOptions) error) *cobra.Command {
	opts := &secretSetOptions{clientOptions: newClientOptions(f)}
	cmd := &cobra.Command{
		Use:   "set NAME",
		Short: "Set a secret, its value read from stdin",
		Long: `Set a secret. The value is read from stdin (without echo on a terminal); one trailing newline
is trimmed. --base-url points a provider key's record at another upstream.`,
		Example: `  printf %s "$ANTHROPIC_API_KEY" | oz0 secret set ANTHROPIC_API_KEY
  oz0 secret set OPENAI_API_KEY          # on a terminal: asks for it without echo`,
		Args: secretName,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(opts)
			}
			return secretSetRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.BaseURL, "base-url", "", "for ANTHROPIC_API_KEY or OPENAI_API_KEY: the provider's upstream base URL")
	return cmd
}

func secretSetRun(ctx context.Context, opts *secretSetOptions) error {
	// The client first: no point asking for a value there is nowhere to send.
	c, err := opts.Client()
	if err != nil {
		return err
	}
	value, err := readSecret(opts)
	if err != nil {
		return err
	}
	change, err := c.SetSecret(ctx, opts.Name, value, opts.BaseURL)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "oz0: secret %s set\n", opts.Name)
	printSecretChange(opts.IO, change)
	return nil
}

// readSecret reads a secret's value from stdin: without echo on a terminal, one trailing newline
// trimmed.
func readSecret(opts *secretSetOptions) (string, error) {
	ios, name := opts.IO, opts.Name
	var b []byte
	var err error
	if file, ok := ios.In.(*os.File); ok && ios.IsStdinTTY() {
		fmt.Fprintf(ios.ErrOut, "%s (input hidden): ", name)
		b, err = term.ReadPassword(int(file.Fd()))
		fmt.Fprintln(ios.ErrOut)
	} else {
		b, err = io.ReadAll(io.LimitReader(ios.In, apiv1.MaxSecretValue+2))
	}
	if err != nil {
		return "", fmt.Errorf("cannot read the value: %w", err)
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	if len(b) == 0 {
		return "", cmdutil.Usagef("the value of %s is empty; pipe it in: printf %%s \"$VALUE\" | oz0 secret set %s", name, name)
	}
	if len(b) > apiv1.MaxSecretValue {
		return "", cmdutil.Usagef("the value of %s is over %d KiB, the most a secret holds; check what was piped in", name, apiv1.MaxSecretValue>>10)
	}
	if err := checkUTF8("the value of "+name, string(b), "a secret is text: check what was piped in"); err != nil {
		return "", err
	}
	return string(b), nil
}

// secretName accepts one NAME that a secret can have.
func secretName(cmd *cobra.Command, args []string) error {
	if err := argsBetween(1, 1, "one NAME")(cmd, args); err != nil {
		return err
	}
	if !apiv1.ValidSecretName(args[0]) {
		return cmdutil.Usagef("secret name %s is not valid; use capitals, digits and _, starting with a capital, like ANTHROPIC_API_KEY", cmdutil.Quote(args[0]))
	}
	return nil
}

type secretListOptions struct {
	clientOptions
	cmdutil.JSONFlags
}

func newCmdSecretList(f *cmdutil.Factory, runF func(*secretListOptions) error) *cobra.Command {
	opts := &secretListOptions{clientOptions: newClientOptions(f)}
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the secrets' names and when they were set; never their values",
		Example: "  oz0 secret list\n  oz0 secret list --json\n  oz0 secret list --jq '.[].name'",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return secretListRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddJSONFlags(cmd, &opts.JSONFlags, "the secrets' names")
	return cmd
}

func secretListRun(ctx context.Context, opts *secretListOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	list, err := c.Secrets(ctx)
	if err != nil {
		return err
	}
	if opts.Enabled() {
		return opts.Write(opts.IO, list)
	}
	if len(list) == 0 {
		io.WriteString(opts.IO.ErrOut, "no secrets; set one with: printf %s \"$KEY\" | oz0 secret set NAME\n")
		return nil
	}
	t := newTable(opts.IO, "NAME", "SET", "UPSTREAM")
	for _, s := range list {
		// A provider key's upstream, the provider's own said so; none for another secret.
		upstream := s.Upstream
		if upstream != "" && s.BaseURL == "" {
			upstream += " (the provider's own)"
		}
		t.row(s.Name, t.time(s.SetAt), upstream)
	}
	return t.Render()
}

type secretRmOptions struct {
	clientOptions
	Name string
}

func newCmdSecretRm(f *cmdutil.Factory, runF func(*secretRmOptions) error) *cobra.Command {
	opts := &secretRmOptions{clientOptions: newClientOptions(f)}
	return &cobra.Command{
		Use:     "rm NAME",
		Short:   "Remove a secret",
		Example: "  oz0 secret rm OPENAI_API_KEY",
		Args:    secretName,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(opts)
			}
			return secretRmRun(cmd.Context(), opts)
		},
		ValidArgsFunction: fromServer(f, listSecrets),
	}
}

func secretRmRun(ctx context.Context, opts *secretRmOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	change, err := c.RemoveSecret(ctx, opts.Name)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "oz0: secret %s removed\n", opts.Name)
	printSecretChange(opts.IO, change)
	return nil
}

// printSecretChange says what a secret's change did to the agents' model records, as oz0 dev
// says it on its output: an agent moved, or one a provider key left on the fake model, and why.
func printSecretChange(ios *iostreams.IOStreams, change apiv1.SecretChange) {
	for _, note := range change.Notes {
		fmt.Fprintf(ios.ErrOut, "oz0: %s\n", termtext.OneLine(note))
	}
}
