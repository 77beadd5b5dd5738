package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/devserver/api/apiv1"
	"github.com/orchestrator-zero/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/internal/render"
)

func newCmdJob(f *cmdutil.Factory) *cobra.Command {
	return groupCmd("job <command>", "List, show, cancel and trace the dev server's jobs", "",
		`  oz0 job list
  oz0 job show job_abc…
  oz0 job trace job_abc… > job.jsonl`,
		newCmdJobList(f, nil), newCmdJobShow(f, nil), newCmdJobCancel(f, nil), newCmdJobTrace(f, nil))
}

type jobListOptions struct {
	clientOptions
	cmdutil.JSONFlags
	Status string // comma-separated
	Agent  string
	Limit  int
}

func newCmdJobList(f *cmdutil.Factory, runF func(*jobListOptions) error) *cobra.Command {
	opts := &jobListOptions{clientOptions: newClientOptions(f)}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List jobs, newest first",
		Example: `  oz0 job list
  oz0 job list --status failed --json
  oz0 job list --agent acme-triage --jq '.[].id'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Check(); err != nil {
				return err
			}
			if opts.Status != "" {
				for _, st := range strings.Split(opts.Status, ",") {
					if !apiv1.Status(st).Valid() {
						return cmdutil.Usagef("unknown --status %q; the statuses are %s", st, statusNames())
					}
				}
			}
			if opts.Limit < 1 {
				return cmdutil.Usagef("--limit must be at least 1")
			}
			if runF != nil {
				return runF(opts)
			}
			return jobListRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddJSONFlags(cmd, &opts.JSONFlags, "the jobs")
	cmd.Flags().StringVar(&opts.Status, "status", "", "only jobs with this status (comma-separated)")
	cmd.Flags().StringVar(&opts.Agent, "agent", "", "only jobs of this agent")
	cmd.Flags().IntVarP(&opts.Limit, "limit", "L", 50, "at most this many jobs")
	_ = cmd.RegisterFlagCompletionFunc("status", completeStatuses)
	_ = cmd.RegisterFlagCompletionFunc("agent", func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return serverCompletions(cmd, f, listAgents)
	})
	return cmd
}

func statusNames() string {
	names := make([]string, len(apiv1.Statuses))
	for i, st := range apiv1.Statuses {
		names[i] = string(st)
	}
	return strings.Join(names, ", ")
}

func jobListRun(ctx context.Context, opts *jobListOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	jobs, err := c.Jobs(ctx, opts.Status, opts.Agent, opts.Limit)
	if err != nil {
		return err
	}
	if opts.Enabled() {
		return opts.Write(opts.IO, jobs)
	}
	if len(jobs) == 0 {
		fmt.Fprintln(opts.IO.ErrOut, `no jobs yet; start one with: oz0 run AGENT "input"`)
		return nil
	}
	t := newTable(opts.IO, "JOB", "AGENT", "STATUS", "CREATED", "TOOK", "INPUT")
	for _, j := range jobs {
		t.row(j.ID, j.Agent, string(j.Status), t.time(j.CreatedAt), took(j), j.InputText)
	}
	return t.Render()
}

// took is how long a job ran, once it has ended.
func took(j apiv1.Job) string {
	if j.EndedAt.IsZero() || j.StartedAt.IsZero() {
		return ""
	}
	return j.EndedAt.Sub(j.StartedAt).Round(time.Millisecond).String()
}

type jobShowOptions struct {
	clientOptions
	cmdutil.JSONFlags
	ID string
}

func newCmdJobShow(f *cmdutil.Factory, runF func(*jobShowOptions) error) *cobra.Command {
	opts := &jobShowOptions{clientOptions: newClientOptions(f)}
	cmd := &cobra.Command{
		Use:     "show ID",
		Short:   "Show a job's record",
		Example: "  oz0 job show job_abc…\n  oz0 job show job_abc… --json\n  oz0 job show job_abc… --jq .usage",
		Args:    argsBetween(1, 1, "one job ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if err := opts.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return jobShowRun(cmd.Context(), opts)
		},
		ValidArgsFunction: fromServer(f, listJobs(false)),
	}
	cmdutil.AddJSONFlags(cmd, &opts.JSONFlags, "the record")
	return cmd
}

func jobShowRun(ctx context.Context, opts *jobShowOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	j, err := c.Job(ctx, opts.ID)
	if err != nil {
		return err
	}
	if opts.Enabled() {
		return opts.Write(opts.IO, j)
	}
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			// A value of several lines (a reason with the end of a harness's stderr) goes on in
			// its column.
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
	row("took", took(j))
	row("model calls", fmt.Sprintf("%d (%d input, %d output tokens)", j.Usage.ModelCalls, j.Usage.InputTokens, j.Usage.OutputTokens))
	return tw.Flush()
}

type jobCancelOptions struct {
	clientOptions
	ID string
}

func newCmdJobCancel(f *cmdutil.Factory, runF func(*jobCancelOptions) error) *cobra.Command {
	opts := &jobCancelOptions{clientOptions: newClientOptions(f)}
	return &cobra.Command{
		Use:     "cancel ID",
		Short:   "Cancel a job: SIGTERM to its session's process group, then SIGKILL after a grace period",
		Example: "  oz0 job cancel job_abc…",
		Args:    argsBetween(1, 1, "one job ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return jobCancelRun(cmd.Context(), opts)
		},
		ValidArgsFunction: fromServer(f, listJobs(true)),
	}
}

func jobCancelRun(ctx context.Context, opts *jobCancelOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	j, err := c.Cancel(ctx, opts.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "%s %s\n", j.ID, j.Status)
	return nil
}

type jobTraceOptions struct {
	clientOptions
	ID string
}

func newCmdJobTrace(f *cmdutil.Factory, runF func(*jobTraceOptions) error) *cobra.Command {
	opts := &jobTraceOptions{clientOptions: newClientOptions(f)}
	return &cobra.Command{
		Use:   "trace ID",
		Short: "Print a job's whole record as JSON lines",
		Long: `Print the job's record as JSON lines: first the job, then every event in order (says, tool
calls with their decisions and results, model calls with tokens and latency, logs). The output
loads again (it is the format of the store's trace).`,
		Example: "  oz0 job trace job_abc… > job.jsonl",
		Args:    argsBetween(1, 1, "one job ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return jobTraceRun(cmd.Context(), opts)
		},
		ValidArgsFunction: fromServer(f, listJobs(false)),
	}
}

func jobTraceRun(ctx context.Context, opts *jobTraceOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	return c.Trace(ctx, opts.ID, opts.IO.Out)
}
