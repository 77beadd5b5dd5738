package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/lint"
)

// Dynamic completions: what the dev server (OZ0_CONTEXT's, else the plugin's) has (agents, jobs,
// approvals, rules, secrets) and what a plugin has (harnesses). A completion never fails out loud: with no dev
// server, or a plugin that does not load, it offers nothing, and never files.

// completionWait bounds a completion's call to the dev server: a shell waits for it.
const completionWait = 3 * time.Second

// fromServer completes the first argument with what list gets from the dev server.
func fromServer(f *cmdutil.Factory, list func(context.Context, *client.Client) ([]cobra.Completion, error)) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return serverCompletions(cmd, f, list)
	}
}

// serverCompletions asks the dev server for completions, within completionWait.
func serverCompletions(cmd *cobra.Command, f *cmdutil.Factory, list func(context.Context, *client.Client) ([]cobra.Completion, error)) ([]cobra.Completion, cobra.ShellCompDirective) {
	c, err := f.Client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), completionWait)
	defer cancel()
	out, err := list(ctx, c)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func listAgents(ctx context.Context, c *client.Client) ([]cobra.Completion, error) {
	info, err := c.Info(ctx)
	if err != nil {
		return nil, err
	}
	var out []cobra.Completion
	for _, a := range info.Agents {
		out = append(out, cobra.CompletionWithDesc(a.Name, fmt.Sprintf("%s input, plugin %s", a.Input, a.Plugin)))
	}
	return out, nil
}

// listJobs lists the newest jobs; live alone, the ones that have not ended (what can be
// cancelled).
func listJobs(live bool) func(context.Context, *client.Client) ([]cobra.Completion, error) {
	return func(ctx context.Context, c *client.Client) ([]cobra.Completion, error) {
		status := ""
		if live {
			var names []string
			for _, st := range apiv1.Statuses {
				if !st.Terminal() {
					names = append(names, string(st))
				}
			}
			status = strings.Join(names, ",")
		}
		jobs, err := c.Jobs(ctx, status, "", 50)
		if err != nil {
			return nil, err
		}
		var out []cobra.Completion
		for _, j := range jobs {
			out = append(out, cobra.CompletionWithDesc(j.ID, fmt.Sprintf("%s %s: %s", j.Agent, j.Status, clipLine(j.InputText, 40))))
		}
		return out, nil
	}
}

func listPendingApprovals(ctx context.Context, c *client.Client) ([]cobra.Completion, error) {
	list, err := c.Approvals(ctx, false)
	if err != nil {
		return nil, err
	}
	var out []cobra.Completion
	for _, a := range list {
		out = append(out, cobra.CompletionWithDesc(a.ID, fmt.Sprintf("%s of %s: %s", a.Target(), a.Job, a.Why)))
	}
	return out, nil
}

// listRules offers each rule by its id and by its <harness>.<tool>, as revoke takes either.
func listRules(ctx context.Context, c *client.Client) ([]cobra.Completion, error) {
	rules, err := c.Rules(ctx)
	if err != nil {
		return nil, err
	}
	var out []cobra.Completion
	for _, r := range rules {
		out = append(out, cobra.CompletionWithDesc(r.ID, r.Target), cobra.CompletionWithDesc(r.Target, r.ID))
	}
	return out, nil
}

func listSecrets(ctx context.Context, c *client.Client) ([]cobra.Completion, error) {
	list, err := c.Secrets(ctx)
	if err != nil {
		return nil, err
	}
	var out []cobra.Completion
	for _, s := range list {
		out = append(out, cobra.CompletionWithDesc(s.Name, "set "+s.SetAt.Local().Format(time.DateTime)))
	}
	return out, nil
}

// completeStatuses completes a comma-separated list of job statuses, one at a time.
func completeStatuses(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	done, _ := cutLast(toComplete, ",")
	given := strings.Split(strings.TrimSuffix(done, ","), ",")
	var out []cobra.Completion
	for _, st := range apiv1.Statuses {
		if !slices.Contains(given, string(st)) { // a status given already is not offered again
			out = append(out, done+string(st))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// cutLast splits s after the last sep: what comes before it (with sep) and after.
func cutLast(s, sep string) (string, string) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i+len(sep)], s[i+len(sep):]
	}
	return "", s
}

// completeDir completes a DIR argument (the first) with directories.
func completeDir(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveFilterDirs
}

// completeHarnesses completes --harness with the harnesses of the plugin in the command's DIR
// argument (default: the current directory).
func completeHarnesses(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	dir := "."
	if len(args) > 0 {
		dir = args[0]
	}
	p, _, _ := lint.Load(dir)
	if p == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, h := range p.Manifest.Harnesses {
		out = append(out, cobra.CompletionWithDesc(h.Name, strings.Join(h.Command, " ")))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
