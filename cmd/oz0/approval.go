package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/devserver/client"
	"github.com/orchestrator-zero/oz0/devserver/render"
	"github.com/orchestrator-zero/oz0/internal/cmdutil"
)

func newCmdApproval(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approval <command>",
		Short: "The approvals inbox: tool calls waiting for a person",
		Long: `A tool in an agent's harness.requires_approval, or one a hook asks about, waits here for a
person, for as long as it takes (the wait does not count toward the job's timeout). Approve it
once, for the rest of its job, or always (a rule for its <harness>.<tool>, until revoked); or deny
it with a reason, which reaches the harness and so the model.`,
		Example: `  oz0 approval list
  oz0 approval approve apr_abc123
  oz0 approval approve apr_abc123 --scope always
  oz0 approval deny apr_abc123 --reason "billing is told by a person"
  oz0 approval rules
  oz0 approval revoke rule_abc123`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	ctx := context.Background()
	out := f.IOStreams.Out

	var listJSON, all bool
	list := &cobra.Command{
		Use:     "list",
		Short:   "List the approvals waiting for a person",
		Example: "  oz0 approval list\n  oz0 approval list --all --json",
		Args:    noArgs,
		RunE: withClient(f, func(c *client.Client, _ []string) error {
			list, err := c.Approvals(ctx, all)
			if err != nil {
				return err
			}
			if listJSON {
				return writeJSONLines(out, list)
			}
			if len(list) == 0 {
				fmt.Fprintln(f.IOStreams.ErrOut, "no approvals waiting")
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "APPROVAL\tJOB\tCALL\tARGUMENTS\tWHY\tSINCE\tSTATUS")
			for _, a := range list {
				status := string(a.Status)
				if a.Reason != "" {
					status += ": " + a.Reason
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.Job, a.Target(), clipLine(render.CompactJSON(a.Arguments), 60), a.Why, a.CreatedAt.Local().Format(time.DateTime), status)
			}
			return tw.Flush()
		}),
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print JSON lines")
	list.Flags().BoolVar(&all, "all", false, "also the answered, withdrawn and interrupted ones")

	var scope string
	approve := &cobra.Command{
		Use:     "approve ID",
		Short:   "Approve a waiting tool call: once, for the rest of its job, or always",
		Example: "  oz0 approval approve apr_abc123\n  oz0 approval approve apr_abc123 --scope job",
		Args:    argsBetween(1, 1, "one approval ID"),
		RunE: withClient(f, func(c *client.Client, args []string) error {
			a, rule, err := c.Approve(ctx, args[0], scope)
			if err != nil {
				return err
			}
			switch a.Scope {
			case "job":
				fmt.Fprintf(out, "approved %s: %s, and its other calls for the rest of job %s\n", a.ID, a.Target(), a.Job)
			case "always":
				fmt.Fprintf(out, "approved %s: %s, always (rule %s; oz0 approval revoke %s to stop)\n", a.ID, a.Target(), rule.ID, rule.ID)
			default:
				fmt.Fprintf(out, "approved %s: %s, this call\n", a.ID, a.Target())
			}
			return nil
		}),
	}
	approve.Flags().StringVar(&scope, "scope", "once", "once, job (the rest of this job) or always (a rule for this <harness>.<tool>)")
	_ = approve.RegisterFlagCompletionFunc("scope", cobra.FixedCompletions([]string{"once", "job", "always"}, cobra.ShellCompDirectiveNoFileComp))

	var reason string
	deny := &cobra.Command{
		Use:     "deny ID --reason R",
		Short:   "Deny a waiting tool call; the reason reaches the model",
		Example: `  oz0 approval deny apr_abc123 --reason "billing is told by a person"`,
		Args:    argsBetween(1, 1, "one approval ID"),
		RunE: withClient(f, func(c *client.Client, args []string) error {
			if reason == "" {
				return cmdutil.Usagef("a denial needs --reason \"...\": the harness, and so the model, reads it")
			}
			a, err := c.Deny(ctx, args[0], reason)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "denied %s: %s (%s)\n", a.ID, a.Target(), a.Reason)
			return nil
		}),
	}
	deny.Flags().StringVar(&reason, "reason", "", "why, for the model to read")

	var rulesJSON bool
	rules := &cobra.Command{
		Use:     "rules",
		Short:   "List the always rules: calls approved without asking",
		Example: "  oz0 approval rules",
		Args:    noArgs,
		RunE: withClient(f, func(c *client.Client, _ []string) error {
			rules, err := c.Rules(ctx)
			if err != nil {
				return err
			}
			if rulesJSON {
				return writeJSONLines(out, rules)
			}
			if len(rules) == 0 {
				fmt.Fprintln(f.IOStreams.ErrOut, "no rules: every call that needs a person asks")
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RULE\tCALL\tFROM\tSINCE")
			for _, r := range rules {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.ID, r.Target, r.Approval, r.CreatedAt.Local().Format(time.DateTime))
			}
			return tw.Flush()
		}),
	}
	rules.Flags().BoolVar(&rulesJSON, "json", false, "print JSON lines")
	revoke := &cobra.Command{
		Use:     "revoke RULE",
		Short:   "Revoke an always rule (by its id or its <harness>.<tool>)",
		Example: "  oz0 approval revoke rule_abc123\n  oz0 approval revoke acme-triage.notify_team",
		Args:    argsBetween(1, 1, "one RULE"),
		RunE: withClient(f, func(c *client.Client, args []string) error {
			r, err := c.RevokeRule(ctx, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "revoked %s: %s asks a person again\n", r.ID, r.Target)
			return nil
		}),
	}
	cmd.AddCommand(list, approve, deny, rules, revoke)
	return cmd
}
