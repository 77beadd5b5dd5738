package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/devserver/client"
	"github.com/orchestrator-zero/oz0/devserver/render"
	"github.com/orchestrator-zero/oz0/devserver/store"
	"github.com/orchestrator-zero/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/internal/prompt"
)

type runOptions struct {
	IO        *iostreams.IOStreams
	Getenv    func(string) string
	Agent     string
	Input     string
	InputFile string
	JSON      bool
	Detach    bool
}

func newCmdRun(f *cmdutil.Factory, runF func(*runOptions) error) *cobra.Command {
	opts := &runOptions{IO: f.IOStreams, Getenv: f.Getenv}
	cmd := &cobra.Command{
		Use:   "run AGENT [INPUT]",
		Short: "Start a job and show its live stream",
		Long: `Start a job of AGENT on the dev server in OZ0_CONTEXT and render its live stream: what the
agent says, each tool call (→) and its result (←), then the answer. Exit status 0 when the job
succeeds, 1 when it fails, with the reason on stderr. Ctrl-C cancels the job (on a terminal,
after asking).

INPUT is the job's input; - (or --input-file) reads it from stdin (or a file).`,
		Example: `  oz0 run acme-triage "I was charged twice for my order"
  echo '{"order": 42}' | oz0 run order-bot -
  oz0 run acme-triage --input-file ticket.txt --json
  oz0 run acme-triage "..." --detach   # print the job id and return`,
		Args: argsBetween(1, 2, "AGENT and an INPUT (or --input-file)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Agent = args[0]
			switch {
			case len(args) == 2 && opts.InputFile != "":
				return cmdutil.Usagef("give the input as INPUT or --input-file, not both")
			case len(args) == 2 && args[1] == "-":
				b, err := io.ReadAll(io.LimitReader(opts.IO.In, store.MaxData+1))
				if err != nil {
					return err
				}
				opts.Input = string(b)
			case len(args) == 2:
				opts.Input = args[1]
			case opts.InputFile != "":
				b, err := os.ReadFile(opts.InputFile)
				if err != nil {
					return cmdutil.Usagef("cannot read --input-file: %v", err)
				}
				opts.Input = string(b)
			default:
				return cmdutil.Usagef("%s needs an INPUT: oz0 run %s \"...\" (or - for stdin, or --input-file)", cmd.CommandPath(), args[0])
			}
			if len(opts.Input) > store.MaxData {
				return cmdutil.Usagef("the input is over %d MiB", store.MaxData>>20)
			}
			if opts.JSON && opts.Detach {
				return cmdutil.Usagef("--json and --detach do not go together")
			}
			if runF != nil {
				return runF(opts)
			}
			return runRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the events as JSON lines")
	cmd.Flags().BoolVar(&opts.Detach, "detach", false, "print the job id and return without following the job")
	cmd.Flags().StringVar(&opts.InputFile, "input-file", "", "read the input from this file")
	return cmd
}

func runRun(opts *runOptions) error {
	c, err := client.FromEnv(opts.Getenv)
	if err != nil {
		return cmdutil.Usagef("%s", err)
	}
	ctx := context.Background()
	req := client.JobRequest{Agent: opts.Agent, Input: opts.Input}
	if opts.Detach {
		job, err := c.CreateJob(ctx, req)
		if err != nil {
			return apiUsageError(err)
		}
		fmt.Fprintln(opts.IO.Out, job.ID)
		return nil
	}
	// Ctrl-C cancels the job from the moment it exists: one that comes while the dev server is
	// making it stays in sigs until follow cancels the job; a second one gives up waiting.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	job, err := createJob(ctx, c, req)
	if err != nil {
		return apiUsageError(err)
	}
	if !opts.JSON {
		fmt.Fprintf(opts.IO.ErrOut, "oz0: job %s: %s on model record %s (%s)\n", job.ID, job.Agent, job.ModelRecord, job.ModelName)
	}
	return follow(ctx, opts.IO, c, job, opts.JSON, sigs)
}

// createJob makes a job; a second Ctrl-C while the dev server makes it gives up.
func createJob(ctx context.Context, c *client.Client, req client.JobRequest) (store.Job, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watch := make(chan os.Signal, 2)
	signal.Notify(watch, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(watch)
	made := make(chan struct{})
	defer close(made)
	go func() {
		for n := 1; ; n++ {
			select {
			case <-watch:
				if n == 2 {
					cancel()
					return
				}
			case <-made:
				return
			}
		}
	}()
	job, err := c.CreateJob(ctx, req)
	if err != nil && ctx.Err() != nil {
		return job, fmt.Errorf("interrupted while the dev server at %s made the job; oz0 job list shows whether it did", c.URL())
	}
	return job, err
}

// follow renders a job's stream to its end, cancelling it on a signal from sigs (Ctrl-C), and
// returns its outcome.
func follow(ctx context.Context, ios *iostreams.IOStreams, c *client.Client, job store.Job, asJSON bool, sigs <-chan os.Signal) error {
	go func() {
		for range sigs {
			if ios.CanPrompt() && !prompt.Confirm(fmt.Sprintf("Cancel job %s?", job.ID)) {
				continue
			}
			fmt.Fprintf(ios.ErrOut, "oz0: cancelling job %s\n", job.ID)
			if _, err := c.Cancel(context.Background(), job.ID); err != nil {
				fmt.Fprintf(ios.ErrOut, "oz0: %v\n", err)
			}
		}
	}()

	r := render.New(ios.Out, job.Agent)
	var line []byte
	// The job's outcome is its terminal status event: the dev server may be gone by the time the
	// stream ends (it stops after its jobs have ended), so there is no asking it afterwards.
	var outcome struct {
		Status store.Status
		Reason string
	}
	broke := "" // the last break said, so that a dead server is one line, not one per retry
	// An inline answer form (on a terminal) is closed when the stream ends, before oz0 exits, so
	// the terminal is left as it was.
	var inline sync.WaitGroup
	closeInline := func() {}
	err := c.Events(ctx, job.ID, 0, func(ev store.Event) error {
		broke = ""
		if ev.Terminal() {
			_ = json.Unmarshal(ev.Data, &outcome)
		}
		if asJSON {
			line = append(ev.AppendJSON(line[:0]), '\n')
			_, err := ios.Out.Write(line)
			return err
		}
		if ev.Type == store.EventStatus {
			var st struct {
				Status store.Status
				Reason string
			}
			// The job moved on (answered elsewhere, or ended): the inline form goes first.
			closeInline()
			inline.Wait()
			if json.Unmarshal(ev.Data, &st) == nil && st.Status == store.StatusWaitingForApproval {
				r.Close()
				fmt.Fprintf(ios.ErrOut, "oz0: waiting for approval: %s (or deny it with --reason; oz0 approval list shows it)\n", st.Reason)
				if ios.CanPrompt() {
					var waitCtx context.Context
					waitCtx, closeInline = context.WithCancel(ctx)
					inline.Add(1)
					go func() { defer inline.Done(); answerInline(waitCtx, ios, c, job.ID) }()
				}
			}
		}
		return r.Event(render.Event{Type: ev.Type, Data: ev.Data})
	}, func(err error) {
		if !asJSON && err.Error() != broke {
			broke = err.Error()
			r.Close() // the note goes on a line of its own
			fmt.Fprintf(ios.ErrOut, "oz0: the live stream broke (%v); resuming\n", err)
		}
	})
	r.Close()
	closeInline()
	inline.Wait()
	if err != nil {
		return apiUsageError(err)
	}
	if !outcome.Status.Terminal() {
		final, err := c.Job(ctx, job.ID)
		if err != nil {
			return err
		}
		outcome.Status, outcome.Reason = final.Status, final.Reason
	}
	if outcome.Status == store.StatusSucceeded {
		return nil
	}
	reason := outcome.Reason
	if reason == "" {
		reason = string(outcome.Status)
	}
	return &cmdutil.FindingsError{Msg: fmt.Sprintf("job %s %s: %s", job.ID, strings.ReplaceAll(string(outcome.Status), "_", " "), reason)}
}

// apiUsageError maps the API's refusals of what the user asked (an unknown agent, bad input, no
// dev server) to usage errors, exit 2.
func apiUsageError(err error) error {
	var apiErr *client.APIError
	if errors.As(err, &apiErr) && apiErr.Status >= 400 && apiErr.Status < 500 {
		if apiErr.Status == 404 || apiErr.Status == 422 || apiErr.Status == 400 || apiErr.Status == 401 || apiErr.Status == 409 {
			return &cmdutil.UsageError{Msg: apiErr.Message}
		}
	}
	return err
}

// answerInline offers, on a terminal, to answer the job's waiting approvals here rather than from
// another terminal; backing out leaves them in the inbox.
func answerInline(ctx context.Context, ios *iostreams.IOStreams, c *client.Client, job string) {
	list, err := c.Approvals(ctx, false)
	if err != nil {
		return
	}
	for _, a := range list {
		if a.Job != job {
			continue
		}
		title := fmt.Sprintf("%s %s — %s", a.Target(), render.CompactJSON(a.Arguments), a.Why)
		choice, reason, ok := prompt.Approval(ctx, title)
		if ctx.Err() != nil {
			return // answered elsewhere, or the job ended: nothing to say
		}
		if !ok {
			fmt.Fprintf(ios.ErrOut, "oz0: left %s in the inbox\n", a.ID)
			continue
		}
		if choice == "deny" {
			_, err = c.Deny(ctx, a.ID, reason)
		} else {
			_, _, err = c.Approve(ctx, a.ID, choice)
		}
		if err != nil {
			fmt.Fprintf(ios.ErrOut, "oz0: %v\n", err)
		}
	}
}
