package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/render"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
)

func newCmdApproval(f *cmdutil.Factory) *cobra.Command {
	return groupCmd("approval <command>", "The approvals inbox: tool calls waiting for a person",
		`A tool in an agent's harness.requires_approval, or one a hook asks about, waits here for a
person, for as long as it takes (the wait does not count toward the job's timeout). Approve it
once, for the rest of its job, or always (a rule for its <harness>.<tool>, until revoked); or deny
it with a reason, which reaches the harness and so the model.`,
		`  oz0 approval list
  oz0 approval approve apr_abc123
  oz0 approval approve apr_abc123 --scope always
  oz0 approval deny apr_abc123 --reason "billing is told by a person"
  oz0 approval rules
  oz0 approval revoke rule_abc123`,
		newCmdApprovalList(f, nil), newCmdApprovalApprove(f, nil), newCmdApprovalDeny(f, nil),
		newCmdApprovalRules(f, nil), newCmdApprovalRevoke(f, nil))
}

type approvalListOptions struct {
	clientOptions
	cmdutil.JSONFlags
	All bool
}

func newCmdApprovalList(f *cmdutil.Factory, runF func(*approvalListOptions) error) *cobra.Command {
	opts := &approvalListOptions{clientOptions: newClientOptions(f)}
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the approvals waiting for a person, newest first",
		Example: "  oz0 approval list\n  oz0 approval list --all --json\n  oz0 approval list --jq '.[].id'",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return approvalListRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddJSONFlags(cmd, &opts.JSONFlags, "the approvals")
	cmd.Flags().BoolVar(&opts.All, "all", false, "also the answered, withdrawn and interrupted ones")
	return cmd
}

func approvalListRun(ctx context.Context, opts *approvalListOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	list, err := c.Approvals(ctx, opts.All)
	if err != nil {
		return err
	}
	if opts.Enabled() {
		return opts.Write(opts.IO, list)
	}
	if len(list) == 0 {
		fmt.Fprintln(opts.IO.ErrOut, "no approvals waiting")
		return nil
	}
	t := newTable(opts.IO, "APPROVAL", "JOB", "CALL", "ARGUMENTS", "WHY", "SINCE", "STATUS").keepWhole("APPROVAL", "JOB", "CALL", "SINCE")
	for _, a := range list {
		status := string(a.Status)
		if a.Reason != "" {
			status += ": " + a.Reason
		}
		t.row(a.ID, a.Job, a.Target(), approvalArguments(a), a.Why, t.time(a.CreatedAt), status)
	}
	return t.Render()
}

// approvalArguments shows an approval's arguments as compact JSON; arguments a list clipped (over
// 4 KiB) show their start, their size and where they are whole.
func approvalArguments(a apiv1.Approval) string {
	if !a.ArgumentsClipped {
		return render.CompactJSON(a.Arguments)
	}
	var start string
	_ = json.Unmarshal(a.Arguments, &start)
	return fmt.Sprintf("%s (%d bytes in all: oz0 job show %s has them whole)", start, a.ArgumentsBytes, a.Job)
}

var approvalScopes = []string{apiv1.ScopeOnce, apiv1.ScopeJob, apiv1.ScopeAlways}

type approvalApproveOptions struct {
	clientOptions
	ID    string
	Scope string
}

func newCmdApprovalApprove(f *cmdutil.Factory, runF func(*approvalApproveOptions) error) *cobra.Command {
	opts := &approvalApproveOptions{clientOptions: newClientOptions(f)}
	cmd := &cobra.Command{
		Use:     "approve ID",
		Short:   "Approve a waiting tool call: once, for the rest of its job, or always",
		Example: "  oz0 approval approve apr_abc123\n  oz0 approval approve apr_abc123 --scope job",
		Args:    oneID("approval", apiv1.ApprovalIDPrefix, "oz0 approval list"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if !slices.Contains(approvalScopes, opts.Scope) {
				return cmdutil.Usagef("unknown --scope %s; choose once, job or always", cmdutil.Quote(opts.Scope))
			}
			if runF != nil {
				return runF(opts)
			}
			return approvalApproveRun(cmd.Context(), opts)
		},
		ValidArgsFunction: fromServer(f, listPendingApprovals),
	}
	cmd.Flags().StringVar(&opts.Scope, "scope", apiv1.ScopeOnce, "once, job (the rest of this job) or always (a rule for this <harness>.<tool>)")
	_ = cmd.RegisterFlagCompletionFunc("scope", cobra.FixedCompletions(approvalScopes, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func approvalApproveRun(ctx context.Context, opts *approvalApproveOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	a, rule, err := c.Approve(ctx, opts.ID, opts.Scope)
	if err != nil {
		return err
	}
	out := opts.IO.Out
	switch {
	case a.Scope == apiv1.ScopeJob:
		fmt.Fprintf(out, "approved %s: %s, and its other calls for the rest of job %s\n", a.ID, a.Target(), a.Job)
	case a.Scope == apiv1.ScopeAlways && rule != nil:
		fmt.Fprintf(out, "approved %s: %s, always (rule %s; oz0 approval revoke %s to stop)\n", a.ID, a.Target(), rule.ID, rule.ID)
	default:
		fmt.Fprintf(out, "approved %s: %s, this call\n", a.ID, a.Target())
	}
	return nil
}

type approvalDenyOptions struct {
	clientOptions
	ID     string
	Reason string
}

func newCmdApprovalDeny(f *cmdutil.Factory, runF func(*approvalDenyOptions) error) *cobra.Command {
	opts := &approvalDenyOptions{clientOptions: newClientOptions(f)}
	cmd := &cobra.Command{
		Use:     "deny ID --reason R",
		Short:   "Deny a waiting tool call; the reason reaches the model",
		Example: `  oz0 approval deny apr_abc123 --reason "billing is told by a person"`,
		Args:    oneID("approval", apiv1.ApprovalIDPrefix, "oz0 approval list"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if opts.Reason == "" {
				return cmdutil.Usagef("a denial needs --reason \"...\": the harness, and so the model, reads it")
			}
			if err := checkUTF8("--reason", opts.Reason, "retype it"); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return approvalDenyRun(cmd.Context(), opts)
		},
		ValidArgsFunction: fromServer(f, listPendingApprovals),
	}
	cmd.Flags().StringVar(&opts.Reason, "reason", "", "why, for the model to read")
	return cmd
}

func approvalDenyRun(ctx context.Context, opts *approvalDenyOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	a, err := c.Deny(ctx, opts.ID, opts.Reason)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "denied %s: %s (%s)\n", a.ID, a.Target(), a.Reason)
	return nil
}

type approvalRulesOptions struct {
	clientOptions
	cmdutil.JSONFlags
}

func newCmdApprovalRules(f *cmdutil.Factory, runF func(*approvalRulesOptions) error) *cobra.Command {
	opts := &approvalRulesOptions{clientOptions: newClientOptions(f)}
	cmd := &cobra.Command{
		Use:     "rules",
		Short:   "List the always rules: calls approved without asking",
		Example: "  oz0 approval rules\n  oz0 approval rules --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return approvalRulesRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddJSONFlags(cmd, &opts.JSONFlags, "the rules")
	return cmd
}

func approvalRulesRun(ctx context.Context, opts *approvalRulesOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	rules, err := c.Rules(ctx)
	if err != nil {
		return err
	}
	if opts.Enabled() {
		return opts.Write(opts.IO, rules)
	}
	if len(rules) == 0 {
		fmt.Fprintln(opts.IO.ErrOut, "no rules: every call that needs a person asks")
		return nil
	}
	t := newTable(opts.IO, "RULE", "CALL", "FROM", "SINCE").keepWhole("RULE", "FROM")
	for _, r := range rules {
		t.row(r.ID, r.Target, r.Approval, t.time(r.CreatedAt))
	}
	return t.Render()
}

type approvalRevokeOptions struct {
	clientOptions
	Rule string // its id or its <harness>.<tool>
}

func newCmdApprovalRevoke(f *cmdutil.Factory, runF func(*approvalRevokeOptions) error) *cobra.Command {
	opts := &approvalRevokeOptions{clientOptions: newClientOptions(f)}
	return &cobra.Command{
		Use:     "revoke RULE",
		Short:   "Revoke an always rule (by its id or its <harness>.<tool>)",
		Example: "  oz0 approval revoke rule_abc123\n  oz0 approval revoke acme-triage.notify_team",
		Args:    ruleArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Rule = args[0]
			if runF != nil {
				return runF(opts)
			}
			return approvalRevokeRun(cmd.Context(), opts)
		},
		ValidArgsFunction: fromServer(f, listRules),
	}
}

func approvalRevokeRun(ctx context.Context, opts *approvalRevokeOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	r, err := c.RevokeRule(ctx, opts.Rule)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "revoked %s: %s asks a person again\n", r.ID, r.Target)
	return nil
}

// ruleArg accepts one RULE: a rule ID, or the <harness>.<tool> it approves.
func ruleArg(cmd *cobra.Command, args []string) error {
	if err := argsBetween(1, 1, "one RULE")(cmd, args); err != nil {
		return err
	}
	rule := args[0]
	if apiv1.ValidID(apiv1.RuleIDPrefix, rule) {
		return nil
	}
	harness, tool, ok := strings.Cut(rule, ".")
	if ok && harness != "" && tool != "" && len(rule) <= 256 && utf8.ValidString(rule) &&
		strings.IndexFunc(rule, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) < 0 {
		return nil
	}
	return cmdutil.Usagef("%s is neither a rule ID (rule_…) nor the <harness>.<tool> of a rule; `oz0 approval rules` shows them", cmdutil.Quote(rule))
}
