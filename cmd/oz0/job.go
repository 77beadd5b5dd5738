package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/devserver/client"
	"github.com/orchestrator-zero/oz0/devserver/render"
	"github.com/orchestrator-zero/oz0/internal/cmdutil"
)

func newCmdJob(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "job <command>",
		Short: "List, show, cancel and trace the dev server's jobs",
		Example: `  oz0 job list
  oz0 job show job_abc…
  oz0 job trace job_abc… > job.jsonl`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	ctx := context.Background()
	out := f.IOStreams.Out

	var listJSON bool
	var status, agent string
	var limit int
	list := &cobra.Command{
		Use:     "list",
		Short:   "List jobs, newest first",
		Example: "  oz0 job list\n  oz0 job list --status failed --json",
		Args:    noArgs,
		RunE: withClient(f, func(c *client.Client, _ []string) error {
			jobs, err := c.Jobs(ctx, status, agent, limit)
			if err != nil {
				return err
			}
			if listJSON {
				return writeJSONLines(out, jobs)
			}
			if len(jobs) == 0 {
				fmt.Fprintln(f.IOStreams.ErrOut, `no jobs yet; start one with: oz0 run AGENT "input"`)
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "JOB\tAGENT\tSTATUS\tCREATED\tTOOK\tINPUT")
			for _, j := range jobs {
				took := ""
				if !j.EndedAt.IsZero() && !j.StartedAt.IsZero() {
					took = j.EndedAt.Sub(j.StartedAt).Round(time.Millisecond).String()
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, j.Agent, j.Status, j.CreatedAt.Local().Format(time.DateTime), took, clipLine(j.InputText, 40))
			}
			return tw.Flush()
		}),
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print JSON lines")
	list.Flags().StringVar(&status, "status", "", "only jobs with this status (comma-separated)")
	list.Flags().StringVar(&agent, "agent", "", "only jobs of this agent")
	list.Flags().IntVar(&limit, "limit", 50, "at most this many jobs")

	var showJSON bool
	show := &cobra.Command{
		Use:     "show ID",
		Short:   "Show a job's record",
		Example: "  oz0 job show job_abc…\n  oz0 job show job_abc… --json",
		Args:    argsBetween(1, 1, "one job ID"),
		RunE: withClient(f, func(c *client.Client, args []string) error {
			j, err := c.Job(ctx, args[0])
			if err != nil {
				return err
			}
			if showJSON {
				enc := json.NewEncoder(out)
				enc.SetEscapeHTML(false)
				enc.SetIndent("", "  ")
				return enc.Encode(j)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			row := func(k, v string) {
				if v != "" {
					// A value of several lines (a reason with the end of a harness's stderr)
					// goes on in its column.
					v = strings.ReplaceAll(strings.TrimRight(v, "\n"), "\n", "\n\t")
					fmt.Fprintf(tw, "%s\t%s\n", k, v)
				}
			}
			row("job", j.ID)
			row("agent", j.Agent)
			row("status", string(j.Status))
			row("reason", j.Reason)
			row("model", fmt.Sprintf("%s (record %s)", j.ModelName, j.ModelRecord))
			row("input", clipLine(j.InputText, 200))
			if len(j.Output) > 0 {
				row("output", clipLine(render.Text(j.Output), 200))
			}
			row("created", j.CreatedAt.Local().Format(time.RFC3339))
			if !j.EndedAt.IsZero() && !j.StartedAt.IsZero() {
				row("took", j.EndedAt.Sub(j.StartedAt).Round(time.Millisecond).String())
			}
			row("model calls", fmt.Sprintf("%d (%d input, %d output tokens)", j.Usage.ModelCalls, j.Usage.InputTokens, j.Usage.OutputTokens))
			return tw.Flush()
		}),
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print the record as JSON")

	cancel := &cobra.Command{
		Use:     "cancel ID",
		Short:   "Cancel a job: SIGTERM to its session's process group, then SIGKILL after a grace period",
		Example: "  oz0 job cancel job_abc…",
		Args:    argsBetween(1, 1, "one job ID"),
		RunE: withClient(f, func(c *client.Client, args []string) error {
			j, err := c.Cancel(ctx, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "%s %s\n", j.ID, j.Status)
			return nil
		}),
	}
	trace := &cobra.Command{
		Use:   "trace ID",
		Short: "Print a job's whole record as JSON lines",
		Long: `Print the job's record as JSON lines: first the job, then every event in order (says, tool
calls with their decisions and results, model calls with tokens and latency, logs). The output
loads again (it is the format of the store's trace).`,
		Example: "  oz0 job trace job_abc… > job.jsonl",
		Args:    argsBetween(1, 1, "one job ID"),
		RunE: withClient(f, func(c *client.Client, args []string) error {
			return c.Trace(ctx, args[0], out)
		}),
	}
	cmd.AddCommand(list, show, cancel, trace)
	return cmd
}

func clipLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
