package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/api/render"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/prompt"
	"github.com/orchestrator-zero/oz0/internal/termtext"
	"github.com/orchestrator-zero/oz0/telemetry"
)

func newCmdJob(f *cmdutil.Factory) *cobra.Command {
	return groupCmd("job <command>", "List, show, cancel, trace and replay the dev server's jobs", "",
		`  oz0 job list
  oz0 job show job_abc…
  oz0 job watch job_abc…
  oz0 job trace job_abc… > job.jsonl
  oz0 job replay job_abc…
  oz0 job script job_abc… -o recorded.yaml`,
		newCmdJobList(f, nil), newCmdJobShow(f, nil), newCmdJobWatch(f, nil), newCmdJobCancel(f, nil), newCmdJobTrace(f, nil),
		newCmdJobReplay(f, nil), newCmdJobScript(f, nil))
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
						return cmdutil.Usagef("unknown --status %s; the statuses are %s", cmdutil.Quote(st), statusNames())
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
		var filters []string
		if opts.Status != "" {
			filters = append(filters, "--status "+opts.Status)
		}
		if opts.Agent != "" {
			filters = append(filters, "--agent "+cmdutil.Quote(opts.Agent))
		}
		if len(filters) > 0 {
			fmt.Fprintf(opts.IO.ErrOut, "no jobs with %s; oz0 job list shows them all\n", strings.Join(filters, " "))
		} else {
			fmt.Fprintln(opts.IO.ErrOut, `no jobs yet; start one with: oz0 run AGENT "input"`)
		}
		return nil
	}
	t := newTable(opts.IO, "JOB", "AGENT", "STATUS", "CREATED", "TOOK", "INPUT").keepWhole("JOB", "STATUS", "CREATED", "TOOK")
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
	ID    string
	Calls bool
}

func newCmdJobShow(f *cmdutil.Factory, runF func(*jobShowOptions) error) *cobra.Command {
	opts := &jobShowOptions{clientOptions: newClientOptions(f)}
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a job's record, and with --calls what each model call sent and got",
		Long: `Show a job's record: its agent, status, input, output, model and usage.

With --calls, each model call too, as the dev UI shows it: the system prompt, each message by role,
tool calls (→) and their results (←), the tools offered, and the answer (a streamed one
assembled), with its status, tokens, cost and latency. oz0 dev keeps every call's request and
answer unless it runs with --no-record; --calls --json prints the kept exchanges (the request as
the harness sent it, the answer as it got it) with the conversation read from each.`,
		Example: "  oz0 job show job_abc…\n  oz0 job show job_abc… --calls\n  oz0 job show job_abc… --json\n  oz0 job show job_abc… --calls --jq '.calls[0].conversation.system'",
		Args:    oneID("job", apiv1.JobIDPrefix, "oz0 job list"),
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
	cmdutil.AddJSONFlags(cmd, &opts.JSONFlags, "the record (with --calls: the model calls)")
	cmd.Flags().BoolVar(&opts.Calls, "calls", false, "show each model call's messages and answer")
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
	var calls apiv1.Calls
	if opts.Calls {
		if calls, err = c.Calls(ctx, opts.ID); err != nil {
			return err
		}
	}
	if opts.Enabled() {
		if opts.Calls {
			return opts.Write(opts.IO, calls)
		}
		return opts.Write(opts.IO, j)
	}
	// The tenant's stops and quotas reached that hold the job's model record: why its calls are
	// refused, if they are. An older oz0 dev without the call shows none.
	tenant, _ := c.Tenant(ctx)
	if err := jobRecord(opts, j, tenantNotes(tenant, j.ModelRecord)); err != nil || !opts.Calls {
		return err
	}
	fmt.Fprintln(opts.IO.Out)
	if len(calls.Calls) == 0 {
		fmt.Fprintln(opts.IO.Out, "no model calls")
		return nil
	}
	return render.Calls(opts.IO.Out, calls.Calls)
}

// tenantNotes says the tenant's kill switches thrown and quotas reached that refuse the calls of
// record.
func tenantNotes(t apiv1.Tenant, record string) []string {
	var notes []string
	for _, k := range t.Kills {
		if k.Record == "" || k.Record == record {
			flag := ""
			if k.Record != "" {
				flag = " --record " + k.Record
			}
			notes = append(notes, fmt.Sprintf("%s: model calls stopped since %s (oz0 tenant kill%s); oz0 tenant resume%s lets them through",
				k.Label(), k.At.Local().Format(time.RFC3339), flag, flag))
		}
	}
	for _, q := range t.Quotas {
		if (q.Record == "" || q.Record == record) && q.Used+q.InFlight >= q.Limit {
			note := fmt.Sprintf("%s: %s of %s used", q.Label(), quotaAmount(q.Quota, q.Used), quotaLimit(q.Quota))
			if !q.Resets.IsZero() {
				note += "; resets at " + q.Resets.Local().Format(time.RFC3339)
			}
			notes = append(notes, note)
		}
	}
	return notes
}

// jobRecord prints a job's record, a field a line, and notes on the tenant's stops and quotas.
func jobRecord(opts *jobShowOptions, j apiv1.Job, tenant []string) error {
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			// A value of several lines (a reason with the end of a harness's stderr) goes on in
			// its column.
			v = strings.ReplaceAll(strings.TrimRight(termtext.Visible(v), "\n"), "\n", "\n\t")
			fmt.Fprintf(tw, "%s\t%s\n", k, v)
		}
	}
	row("job", j.ID)
	row("agent", j.Agent)
	row("status", string(j.Status))
	row("reason", j.Reason)
	if len(j.Traceback) > 0 {
		row("raised at", strings.Join(render.TracebackFrames(j.Traceback, tracebackFrames), "\n"))
		row("traceback", "oz0 job trace "+j.ID+" (its error event), or the job's page")
	}
	row("model", fmt.Sprintf("%s (record %s)", j.ModelName, j.ModelRecord))
	row("input", clipLine(j.InputText, 200))
	if j.From != nil {
		row("from", fmt.Sprintf("%s (%s)", j.From.Job, j.From.How))
	}
	if len(j.Output) > 0 {
		row("output", clipLine(render.Text(j.Output), 200))
	}
	row("created", j.CreatedAt.Local().Format(time.RFC3339))
	row("session", render.SessionStart(j.Session))
	row("took", took(j))
	row("model calls", fmt.Sprintf("%d (%d input, %d output tokens)", j.Usage.ModelCalls, j.Usage.InputTokens, j.Usage.OutputTokens))
	row("tenant", strings.Join(tenant, "\n"))
	return tw.Flush()
}

type jobWatchOptions struct {
	clientOptions
	Prompter prompt.Prompter
	ID       string
	JSON     bool
}

func newCmdJobWatch(f *cmdutil.Factory, runF func(*jobWatchOptions) error) *cobra.Command {
	opts := &jobWatchOptions{clientOptions: newClientOptions(f), Prompter: f.Prompter}
	cmd := &cobra.Command{
		Use:   "watch ID",
		Short: "Show a job's live stream from its start, and follow it until it ends",
		Long: `Show the job's stream as oz0 run shows it, from its first event, then follow it live until
the job ends: a job started with oz0 run --detach, from the UI or in another terminal, or one
that ended long ago. Exit status as oz0 run's: 0 when the job succeeded, 1 when it did not, with
the reason on stderr. Ctrl-C stops watching; the job goes on (oz0 job cancel ends it).`,
		Example: `  oz0 job watch job_abc…
  oz0 job watch $(oz0 run acme-triage "..." --detach)
  oz0 job watch job_abc… --json        # the events as JSON lines`,
		Args: oneID("job", apiv1.JobIDPrefix, "oz0 job list"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return jobWatchRun(cmd.Context(), opts)
		},
		ValidArgsFunction: fromServer(f, listJobs(false)),
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the events as JSON lines")
	return cmd
}

func jobWatchRun(ctx context.Context, opts *jobWatchOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	job, err := c.Job(ctx, opts.ID)
	if err != nil {
		return err
	}
	ro := &runOptions{IO: opts.IO, Client: opts.Client, Prompter: opts.Prompter, Agent: job.Agent, JSON: opts.JSON}
	if !opts.JSON {
		startedNote(opts.IO.ErrOut, c, job, "")
	}
	// Ctrl-C ends the watch, not the job: the stream's line is ended, then the job's going on
	// said, and oz0 exits as an interrupted command (130).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	watchCtx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	stopped := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			close(stopped)
			stopWatching()
		case <-watchCtx.Done():
		}
	}()
	err = follow(watchCtx, ro, c, job, nil)
	select {
	case <-stopped:
		return &cmdutil.InterruptedError{Msg: fmt.Sprintf("stopped watching; job %s goes on (oz0 job watch %s follows it again, oz0 job cancel %s ends it)", job.ID, job.ID, job.ID)}
	default:
		return err
	}
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
		Args:    oneID("job", apiv1.JobIDPrefix, "oz0 job list"),
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
	ID      string
	OTLP    bool
	Content bool
	Version string // oz0's, the trace's service.version
}

func newCmdJobTrace(f *cmdutil.Factory, runF func(*jobTraceOptions) error) *cobra.Command {
	opts := &jobTraceOptions{clientOptions: newClientOptions(f), Version: f.Version}
	cmd := &cobra.Command{
		Use:   "trace ID",
		Short: "Print a job's whole record as JSON lines",
		Long: `Print the job's record as JSON lines: first the job, then every event in order (says, tool
calls with their decisions and results, model calls with tokens and latency, logs). The output
loads again (it is the format of the store's trace).

With --otlp, print the job's trace as OTLP JSON instead (an ExportTraceServiceRequest, the
spans oz0 dev exports: docs/observability.md), for an OpenTelemetry backend later.`,
		Example: "  oz0 job trace job_abc… > job.jsonl\n  oz0 job trace job_abc… --otlp > job.otlp.json",
		Args:    oneID("job", apiv1.JobIDPrefix, "oz0 job list"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if opts.Content && !opts.OTLP {
				return cmdutil.Usagef("--otlp-content goes with --otlp")
			}
			if runF != nil {
				return runF(opts)
			}
			return jobTraceRun(cmd.Context(), opts)
		},
		ValidArgsFunction: fromServer(f, listJobs(false)),
	}
	cmd.Flags().BoolVar(&opts.OTLP, "otlp", false, "print the trace as OTLP JSON (an ExportTraceServiceRequest)")
	cmd.Flags().BoolVar(&opts.Content, "otlp-content", false, "with --otlp: prompt and completion contents too (not included by default)")
	return cmd
}

func jobTraceRun(ctx context.Context, opts *jobTraceOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	w := termtext.NewJSONWriter(opts.IO.Out) // the exact text; C1 and DEL escaped too
	if opts.OTLP {
		return jobTraceOTLP(ctx, c, opts, w)
	}
	if err := c.Trace(ctx, opts.ID, w); err != nil {
		return err
	}
	return w.Flush()
}

// jobTraceOTLP writes the job's trace as OTLP JSON: its record and its kept model calls (their
// response model and finish reason) made into the spans oz0 dev exports.
func jobTraceOTLP(ctx context.Context, c *client.Client, opts *jobTraceOptions, w *termtext.JSONWriter) error {
	var trace bytes.Buffer
	if err := c.Trace(ctx, opts.ID, &trace); err != nil {
		return err
	}
	calls, err := c.Calls(ctx, opts.ID)
	if err != nil {
		return err
	}
	rec, err := telemetry.ReadRecord(&trace, calls.Calls)
	if err != nil {
		return err
	}
	req, err := telemetry.Request(rec, telemetry.Options{Content: opts.Content}, opts.Version)
	if err != nil {
		return err
	}
	if err := telemetry.WriteJSON(w, req); err != nil {
		return err
	}
	return w.Flush()
}

type jobReplayOptions struct {
	clientOptions
	Prompter prompt.Prompter
	ID       string
	Upstream bool
	JSON     bool
}

func newCmdJobReplay(f *cmdutil.Factory, runF func(*jobReplayOptions) error) *cobra.Command {
	opts := &jobReplayOptions{clientOptions: newClientOptions(f), Prompter: f.Prompter}
	cmd := &cobra.Command{
		Use:   "replay ID",
		Short: "Run a recorded job again, its model calls answered from the recording",
		Long: `Start a new job of the recorded job's agent with the same input, on the same model, whose
model calls the gateway answers from the recording instead of upstream: offline, with no
provider key, deterministically. Its live stream is shown as oz0 run shows it.

Where the harness now sends a different model call than the recording has, the job fails with a
diff of what changed; with --upstream that call and the rest go to the model's upstream instead.
oz0 dev keeps every job's model calls unless it runs with --no-record (or the job with oz0 run
--no-record). Exit status as oz0 run's: 0 when the replayed job succeeds, 1 when it fails.`,
		Example: `  oz0 job replay job_abc…
  oz0 job replay job_abc… --upstream   # the calls from the first that changed go to the model`,
		Args: oneID("job", apiv1.JobIDPrefix, "oz0 job list"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return jobReplayRun(cmd.Context(), opts)
		},
		ValidArgsFunction: fromServer(f, listJobs(false)),
	}
	cmd.Flags().BoolVar(&opts.Upstream, "upstream", false, "send the model calls that differ from the recording, and the rest, to the model's upstream")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the events as JSON lines")
	return cmd
}

func jobReplayRun(ctx context.Context, opts *jobReplayOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	job, err := c.Replay(ctx, opts.ID, opts.Upstream)
	if err != nil {
		return err
	}
	if !opts.JSON {
		startedNote(opts.IO.ErrOut, c, job, "a replay of job "+opts.ID+": ")
	}
	ro := &runOptions{IO: opts.IO, Client: opts.Client, Prompter: opts.Prompter, Agent: job.Agent, JSON: opts.JSON}
	err = follow(ctx, ro, c, job, sigs)
	if opts.Upstream && !opts.JSON {
		// Where the session left the recording is in the trace; say it, as a failed replay does.
		if why := wentUpstream(ctx, c, job.ID); why != "" {
			first, rest, _ := strings.Cut(termtext.Visible(why), "\n")
			fmt.Fprintf(opts.IO.ErrOut, "oz0: job %s went upstream: %s\n", job.ID, first)
			if rest = strings.TrimRight(rest, "\n"); rest != "" {
				fmt.Fprintln(opts.IO.ErrOut, rest)
			}
		}
	}
	// A replay that departed from its recording fails with a diff of several lines: the reason's
	// first line, then the diff as it is.
	var findings *cmdutil.FindingsError
	if errors.As(err, &findings) {
		if end, jerr := c.Job(ctx, job.ID); jerr == nil && strings.Contains(end.Reason, "\n") {
			first, rest, _ := strings.Cut(termtext.Visible(end.Reason), "\n")
			fmt.Fprintf(opts.IO.ErrOut, "oz0: job %s %s: %s\n%s\n", job.ID, end.Status, first, strings.TrimRight(rest, "\n"))
			return &cmdutil.FindingsError{}
		}
	}
	return err
}

// wentUpstream is where a replay with upstream left its recording, from the job's trace; "" when
// it did not.
func wentUpstream(ctx context.Context, c *client.Client, job string) string {
	var why string
	c.Events(ctx, job, 0, func(ev apiv1.Event) error {
		var d struct{ Message string }
		if ev.Type == apiv1.EventLog && json.Unmarshal(ev.Data, &d) == nil && strings.HasPrefix(d.Message, apiv1.ReplayWentUpstream) {
			why = strings.TrimPrefix(d.Message, apiv1.ReplayWentUpstream)
		}
		return nil
	}, nil)
	return why
}

type jobScriptOptions struct {
	clientOptions
	ID     string
	Output string
}

func newCmdJobScript(f *cmdutil.Factory, runF func(*jobScriptOptions) error) *cobra.Command {
	opts := &jobScriptOptions{clientOptions: newClientOptions(f)}
	cmd := &cobra.Command{
		Use:   "script ID",
		Short: "Print a recorded job's model calls as a fake model script",
		Long: `Print the model calls of a recorded job as a fake model script (docs/fake-model.md): a rule a
call, answering what the model answered to the request the harness sent. With it a recorded run
becomes a regression test: oz0 plugin test --script FILE, oz0 dev --fake-script FILE, or
oz0 fake-model serve --script FILE in a plugin's own tests and CI.`,
		Example: `  oz0 job script job_abc… -o recorded.yaml
  oz0 plugin test --script recorded.yaml`,
		Args: oneID("job", apiv1.JobIDPrefix, "oz0 job list"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if err := checkOutputFile("--output", opts.Output); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return jobScriptRun(cmd.Context(), opts)
		},
		ValidArgsFunction: fromServer(f, listJobs(false)),
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "write the script to this file (default: stdout)")
	_ = cmd.MarkFlagFilename("output", "yaml", "yml")
	return cmd
}

func jobScriptRun(ctx context.Context, opts *jobScriptOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	data, err := c.Script(ctx, opts.ID)
	if err != nil {
		return err
	}
	if opts.Output == "" {
		_, err = opts.IO.Out.Write(data)
		return err
	}
	if err := writeFileAtomic(opts.Output, data); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "oz0: wrote %s\n", opts.Output)
	return nil
}

// checkOutputFile refuses a file to write that cannot be one, before anything is asked or
// done: a directory, or a path whose directory is missing or is a file.
func checkOutputFile(flag, name string) error {
	if name == "" {
		return nil
	}
	if st, err := os.Stat(name); err == nil && st.IsDir() {
		return cmdutil.Usagef("%s %s is a directory; give a file to write", flag, name)
	}
	dir := filepath.Dir(name)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return cmdutil.Usagef("%s %s: the directory %s does not exist; make it first (mkdir -p %s), or give another file", flag, name, dir, dir)
	case err != nil || !st.IsDir():
		return cmdutil.Usagef("%s %s: %s is not a directory; give a file in a directory", flag, name, dir)
	}
	return nil
}
