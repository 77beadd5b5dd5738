package main

import (
	"bufio"
	"bytes"
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

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/api/render"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/prompt"
	"github.com/orchestrator-zero/oz0/internal/termtext"
)

type runOptions struct {
	IO       *iostreams.IOStreams
	Client   func() (*client.Client, error)
	Prompter prompt.Prompter

	Agent     string
	Input     string
	InputFile string
	JSON      bool
	Detach    bool
	Record    bool // keep the job's model calls even when oz0 dev runs with --no-record
	NoRecord  bool // keep none of them
}

func newCmdRun(f *cmdutil.Factory, runF func(*runOptions) error) *cobra.Command {
	opts := &runOptions{IO: f.IOStreams, Client: f.Client, Prompter: f.Prompter}
	cmd := &cobra.Command{
		Use:   "run AGENT [INPUT]",
		Short: "Start a job and show its live stream",
		Long: `Start a job of AGENT on the dev server (OZ0_CONTEXT's, else the plugin's oz0 dev found from
this folder) and render its live stream: what the agent says, each tool call (→) and its result
(←), then the answer. Exit status 0 when the job succeeds, 1 when it fails, with the reason on
stderr. Ctrl-C cancels the job (on a terminal, after asking).

INPUT is the job's input; - (or --input-file) reads it from stdin (or a file). Of stdin, one
line break at the end (\n or \r\n, as echo adds) is dropped: echo x | oz0 run AGENT - sends "x".`,
		Example: `  oz0 run acme-triage "I was charged twice for my order"
  echo '{"order": 42}' | oz0 run order-bot -
  oz0 run acme-triage --input-file ticket.txt --json
  oz0 run acme-triage "..." --detach   # print the job id and return`,
		Args: argsBetween(1, 2, "AGENT and an INPUT (or --input-file)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Agent = args[0]
			if opts.JSON && opts.Detach {
				return cmdutil.Usagef("--json and --detach do not go together")
			}
			if opts.Record && opts.NoRecord {
				return cmdutil.Usagef("--record and --no-record do not go together; choose one")
			}
			var from string // where the input came from, for messages
			switch {
			case len(args) == 2 && opts.InputFile != "":
				return cmdutil.Usagef("give the input as INPUT or --input-file, not both")
			case len(args) == 2 && args[1] == "-":
				b, err := io.ReadAll(io.LimitReader(opts.IO.In, apiv1.MaxInput+1))
				if err != nil {
					return fmt.Errorf("cannot read the input from stdin: %w", err)
				}
				if len(b) <= apiv1.MaxInput { // past it, the input was cut: refused below as it is
					// echo and a here-string end what they send with a line break that is not
					// the input's: drop one.
					if n := len(b); n > 0 && b[n-1] == '\n' {
						b = bytes.TrimSuffix(b[:n-1], []byte("\r"))
					}
				}
				opts.Input, from = string(b), "the input on stdin"
			case len(args) == 2:
				opts.Input, from = args[1], "INPUT"
			case opts.InputFile != "":
				b, err := readInputFile(opts.InputFile)
				if err != nil {
					return err
				}
				opts.Input, from = string(b), "--input-file "+opts.InputFile
			default:
				return cmdutil.Usagef("%s needs an INPUT: oz0 run %s \"...\" (or - for stdin, or --input-file)", cmd.CommandPath(), args[0])
			}
			if msg := apiv1.InputTooLarge(from, opts.Input); msg != "" {
				return cmdutil.Usagef("%s", msg)
			}
			if err := checkUTF8(from, opts.Input, "a job's input is text or JSON: convert it first, e.g. with iconv -t UTF-8"); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the events as JSON lines")
	cmd.Flags().BoolVar(&opts.Detach, "detach", false, "print the job id and return without following the job")
	cmd.Flags().StringVar(&opts.InputFile, "input-file", "", "read the input from this file")
	cmd.Flags().BoolVar(&opts.NoRecord, "no-record", false, "keep none of the job's model calls (oz0 dev keeps every call's request and answer by default)")
	cmd.Flags().BoolVar(&opts.Record, "record", false, "keep the job's model calls even when oz0 dev runs with --no-record")
	cmd.ValidArgsFunction = fromServer(f, listAgents)
	return cmd
}

// readInputFile reads --input-file, at most one byte over apiv1.MaxInput: a file that is too big
// (or endless, like /dev/zero) is refused without being read whole.
func readInputFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("cannot read --input-file %s: %w", name, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, cmdutil.Usagef("--input-file %s is a directory; give the file with the input", name)
	}
	b, err := io.ReadAll(io.LimitReader(f, apiv1.MaxInput+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read --input-file %s: %w", name, err)
	}
	return b, nil
}

func runRun(ctx context.Context, opts *runOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	req := apiv1.JobRequest{Agent: opts.Agent, Input: opts.Input}
	if opts.Record || opts.NoRecord {
		req.Record = &opts.Record
	}
	if opts.Detach {
		job, err := c.CreateJob(ctx, req)
		if err != nil {
			return err
		}
		fmt.Fprintln(opts.IO.Out, job.ID)
		startedNote(opts.IO.ErrOut, c, job, "")
		return nil
	}
	// Ctrl-C cancels the job from the moment it exists: one that comes while the dev server is
	// making it stays in sigs until follow cancels the job; a second one gives up waiting.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	job, err := createJob(ctx, c, req)
	if err != nil {
		return err
	}
	if !opts.JSON {
		startedNote(opts.IO.ErrOut, c, job, "")
	} else {
		warnings(opts.IO.ErrOut, job)
	}
	return follow(ctx, opts, c, job, sigs)
}

// startedNote is what goes on stderr before a job's stream (oz0 run, oz0 job watch, oz0 job
// replay): the job, so that its ID is at hand, and which model record answers it (what names the
// job beyond its agent: a replay's origin), then its page in the dev UI; and, when the job waits
// for a session, why, so that a run that waits is not silent.
func startedNote(w io.Writer, c *client.Client, job apiv1.Job, what string) {
	fmt.Fprintf(w, "oz0: job %s: %s%s on model record %s (%s)\n", job.ID, what, job.Agent, job.ModelRecord, job.ModelName)
	fmt.Fprintf(w, "oz0: its page: %s (oz0 ui logs a browser in)\n", c.JobPage(job.ID))
	warnings(w, job)
	if job.Status == apiv1.StatusQueued && job.Reason != "" {
		fmt.Fprintf(w, "oz0: queued: %s\n", termtext.OneLine(job.Reason))
	}
}

// warnings says what the dev server warned of as it made the job: its plugin's files that do not
// load, so that it runs an earlier version (said on oz0 dev's output alone, it ran quietly).
func warnings(w io.Writer, job apiv1.Job) {
	for _, warn := range job.Warnings {
		fmt.Fprintf(w, "oz0: warning: %s\n", termtext.OneLine(warn))
	}
}

// createJob makes a job; a second Ctrl-C while the dev server makes it gives up.
func createJob(ctx context.Context, c *client.Client, req apiv1.JobRequest) (apiv1.Job, error) {
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
func follow(ctx context.Context, opts *runOptions, c *client.Client, job apiv1.Job, sigs <-chan os.Signal) error {
	ios, asJSON := opts.IO, opts.JSON
	r := render.New(ios.Out, job.Agent)
	// The renderer is the stream's, and the cancel prompt's too: the prompt ends the line the
	// stream left open first (huh redraws the rows it takes, and would wipe that line).
	var rmu sync.Mutex
	closeLine := func() { rmu.Lock(); r.Close(); rmu.Unlock() }
	// An inline answer form (on a terminal) is closed when the stream ends, before oz0 exits, so
	// the terminal is left as it was, and before a signal is acted on.
	inline := &inlineAnswer{}
	followed := make(chan struct{})
	defer close(followed)
	go cancelOnSignal(ctx, opts, c, job.ID, sigs, followed, closeLine, inline)

	// JSON lines are the server's own encoding of each event, printed as they come: buffered, and
	// flushed whenever the stream has nothing more waiting.
	out := bufio.NewWriterSize(ios.Out, 64<<10)
	// The job's outcome is its terminal status event: the dev server may be gone by the time the
	// stream ends (it stops after its jobs have ended), so there is no asking it afterwards.
	var outcome apiv1.StatusData
	var tb []string // the traceback its harness failed with, of its error event
	broke := ""     // the last break said, so that a dead server is one line, not one per retry
	err := c.EventsRaw(ctx, job.ID, 0, func(raw client.RawEvent) error {
		broke = ""
		if asJSON {
			if raw.Terminal() {
				ev, _ := raw.Event()
				_ = json.Unmarshal(ev.Data, &outcome)
			}
			out.Write(termtext.EscapeJSON(raw.JSON)) // the exact text; C1 and DEL escaped too
			out.WriteByte('\n')
			if raw.More {
				return nil
			}
			return out.Flush()
		}
		ev, err := raw.Event()
		if err != nil {
			return fmt.Errorf("the dev server sent a bad event: %w", err)
		}
		if ev.Terminal() {
			_ = json.Unmarshal(ev.Data, &outcome)
		}
		if ev.Type == apiv1.EventError {
			var e struct {
				Traceback []string `json:"traceback"`
			}
			if json.Unmarshal(ev.Data, &e) == nil && len(e.Traceback) > 0 {
				tb = e.Traceback
			}
		}
		if ev.Type == apiv1.EventStatus {
			var st apiv1.StatusData
			// The job moved on (answered elsewhere, or ended): the inline form goes first.
			inline.close(errJobMovedOn)
			if json.Unmarshal(ev.Data, &st) == nil && st.Status == apiv1.StatusWaitingForApproval {
				closeLine()
				fmt.Fprintf(ios.ErrOut, "oz0: waiting for approval: %s (or deny it with --reason; oz0 approval list shows it)\n", termtext.OneLine(st.Reason))
				if ios.CanPrompt() {
					inline.open(ctx, func(waitCtx context.Context) { answerInline(waitCtx, ctx, opts, c, job.ID) })
				}
			}
		}
		rmu.Lock()
		defer rmu.Unlock()
		return r.Event(ev)
	}, func(err error) {
		if asJSON {
			out.Flush()
		}
		if !asJSON && err.Error() != broke {
			broke = err.Error()
			closeLine() // the note goes on a line of its own
			fmt.Fprintf(ios.ErrOut, "oz0: the live stream broke (%v); resuming\n", err)
		}
	})
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	closeLine()
	// The stream ended: the job's end, or this command stopped following it (oz0 job watch's
	// Ctrl-C), which leaves a waiting call in the inbox.
	if ctx.Err() != nil {
		inline.close(errStoppedFollowing)
	} else {
		inline.close(errJobMovedOn)
	}
	if err != nil {
		return err
	}
	if !outcome.Status.Terminal() {
		final, err := c.Job(ctx, job.ID)
		if err != nil {
			return err
		}
		outcome.Status, outcome.Reason, tb = final.Status, final.Reason, final.Traceback
	}
	if outcome.Status == apiv1.StatusSucceeded {
		return nil
	}
	reason := outcome.Reason
	if reason == "" {
		reason = string(outcome.Status)
	}
	return &cmdutil.FindingsError{Msg: fmt.Sprintf("job %s %s: %s", job.ID, strings.ReplaceAll(string(outcome.Status), "_", " "), reason),
		Detail: tracebackDetail(job.ID, tb)}
}

// tracebackFrames is how many of a failed job's last frames oz0 run and oz0 job show print.
const tracebackFrames = 3

// tracebackDetail is what oz0 run says under a failed job's reason: the last frames of the
// traceback its harness failed with (where it raised), and where the whole traceback is.
func tracebackDetail(job string, tb []string) []string {
	if len(tb) == 0 {
		return nil
	}
	var out []string
	for _, f := range render.TracebackFrames(tb, tracebackFrames) {
		out = append(out, "  "+f)
	}
	return append(out, "oz0: the whole traceback: oz0 job trace "+job+" (its error event), or the job's page")
}

// cancelOnSignal cancels the job on a signal from sigs, until sigs closes or the job has been
// followed to its end. An approval form open on the terminal is closed first, its call left in
// the inbox: a signal never answers for a person. Ctrl-C on a terminal asks first (closeLine ends
// the stream's open line before the question), and a further signal ends the question unanswered;
// SIGTERM comes from a program (timeout, a supervisor), which cannot answer, and cancels at once.
// Once the dev server has taken the cancel, further signals ask nothing more: the job's end is on
// its way (timeout signals the process and its group).
func cancelOnSignal(ctx context.Context, opts *runOptions, c *client.Client, job string, sigs <-chan os.Signal, followed <-chan struct{}, closeLine func(), inline *inlineAnswer) {
	cancelled := false
	var pending os.Signal // a signal that ended a question, acted on next
	for {
		sig := pending
		pending = nil
		if sig == nil {
			select {
			case s, ok := <-sigs:
				if !ok {
					return
				}
				sig = s
			case <-followed:
				return
			}
		}
		inline.close(errInterrupted)
		if cancelled {
			continue
		}
		if sig == os.Interrupt && opts.IO.CanPrompt() {
			closeLine()
			var yes bool
			yes, pending = confirmUnlessSignalled(ctx, opts, fmt.Sprintf("Cancel job %s?", job), sigs)
			if !yes && pending != syscall.SIGTERM {
				continue
			}
			pending = nil
		}
		fmt.Fprintf(opts.IO.ErrOut, "oz0: cancelling job %s\n", job)
		if _, err := c.Cancel(ctx, job); err != nil {
			fmt.Fprintf(opts.IO.ErrOut, "oz0: %s\n", cmdutil.Message(err))
			continue
		}
		cancelled = true
	}
}

// confirmUnlessSignalled asks title, and returns the answer; a signal from sigs while it asks
// ends the question unanswered (no) and is returned.
func confirmUnlessSignalled(ctx context.Context, opts *runOptions, title string, sigs <-chan os.Signal) (yes bool, signalled os.Signal) {
	askCtx, stop := context.WithCancel(ctx)
	defer stop()
	got := make(chan os.Signal, 1)
	go func() {
		select {
		case s, ok := <-sigs:
			if ok { // closed: no more signals, the question stays until answered
				got <- s
				stop()
			}
		case <-askCtx.Done():
		}
	}()
	yes = opts.Prompter.Confirm(askCtx, title)
	stop()
	select {
	case signalled = <-got:
		return false, signalled
	default:
		return yes, nil
	}
}

// Why an inline approval form was closed without an answer.
var (
	errJobMovedOn       = errors.New("the job moved on")
	errInterrupted      = errors.New("a signal")
	errStoppedFollowing = errors.New("stopped following the job")
)

// inlineAnswer is the approval form a followed job may have open on the terminal: at most one,
// closed (and waited for) before the next opens, before a signal is acted on, and when the
// stream ends.
type inlineAnswer struct {
	mu     sync.Mutex
	cancel context.CancelCauseFunc
	done   chan struct{}
}

func (a *inlineAnswer) open(ctx context.Context, answer func(context.Context)) {
	a.close(errJobMovedOn)
	a.mu.Lock()
	defer a.mu.Unlock()
	// The form ends by close alone, so that its cause is always said (a cancelled ctx has
	// its own).
	waitCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	done := make(chan struct{})
	a.cancel, a.done = cancel, done
	go func() { defer close(done); answer(waitCtx) }()
}

// close ends the open form, if any, for why, and waits until it has left the terminal.
func (a *inlineAnswer) close(why error) {
	a.mu.Lock()
	cancel, done := a.cancel, a.done
	a.cancel, a.done = nil, nil
	a.mu.Unlock()
	if cancel != nil {
		cancel(why)
		<-done
	}
}

// answerInline offers, on a terminal, to answer the job's waiting approvals here rather than from
// another terminal; backing out leaves them in the inbox. ctx closes the form (the job moved on);
// an answer given is sent with send, since the job moving on (because of that very answer) must
// not cut its call short.
func answerInline(ctx, send context.Context, opts *runOptions, c *client.Client, job string) {
	list, err := c.Approvals(ctx, false)
	if err != nil {
		return
	}
	for _, a := range list {
		if a.Job != job {
			continue
		}
		title := termtext.OneLine(fmt.Sprintf("%s %s — %s", a.Target(), approvalArguments(a), a.Why))
		choice, reason, ok := opts.Prompter.Approval(ctx, title)
		if ctx.Err() != nil {
			// Answered elsewhere, or the job ended: nothing to say. A signal, or the command
			// ceasing to follow the job, leaves the call waiting, and says so.
			if cause := context.Cause(ctx); errors.Is(cause, errInterrupted) || errors.Is(cause, errStoppedFollowing) {
				fmt.Fprintf(opts.IO.ErrOut, "oz0: left %s in the inbox\n", a.ID)
			}
			return
		}
		if !ok {
			fmt.Fprintf(opts.IO.ErrOut, "oz0: left %s in the inbox\n", a.ID)
			continue
		}
		if choice == "deny" {
			_, err = c.Deny(send, a.ID, reason)
		} else {
			_, _, err = c.Approve(send, a.ID, choice)
		}
		if err != nil {
			fmt.Fprintf(opts.IO.ErrOut, "oz0: %s\n", cmdutil.Message(err))
		}
	}
}
