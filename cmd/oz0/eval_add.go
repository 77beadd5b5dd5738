package main

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/eval"
	"github.com/orchestrator-zero/oz0/lint"
	"github.com/orchestrator-zero/oz0/lint/evalfile"
	"github.com/orchestrator-zero/oz0/schemas"
)

type evalAddOptions struct {
	IO     *iostreams.IOStreams
	Client func() (*client.Client, error)
	Ref    string
	Job    string
	File   string // --file: an eval file of the plugin's evals directory
	Name   string
	DryRun bool
	Dir    string // the plugin: the one the working directory is in (set by evalAddRun)
}

func newCmdEvalAdd(f *cmdutil.Factory, runF func(*evalAddOptions) error) *cobra.Command {
	opts := &evalAddOptions{IO: f.IOStreams, Client: f.Client, Ref: f.Build.Ref}
	cmd := &cobra.Command{
		Use:   "add JOB",
		Short: "Save a job of oz0 dev as an eval case",
		Long: `Save a job of the running oz0 dev as a case of the plugin's eval files: its input, the
assertions what it did proposes (the tools it called with their arguments, the calls refused, its
result, its status when it did not succeed), how a person answered its approvals, and its model
calls as the case's recording (evals/recordings/<file>/<case>.json), so that oz0 eval replays it
offline. The case goes at the end of --file's cases (an eval file of the plugin's evals
directory; made when it is not there), by default the first eval file of the job's agent, else
evals/AGENT.yaml. It prints the case's lines; --dry-run prints them and writes nothing.

The dev UI's "Save as eval case" on a job's page writes the same case, through the same code.

Exit status: 0 written, 2 a job that cannot be saved as asked (a name the file has, a job that
has not ended, model calls that were not kept), 3 no oz0 dev, or a file that cannot be written.`,
		Example: `  oz0 eval add job_01h…
  oz0 eval add job_01h… --file evals/refunds.yaml --name double-charge
  oz0 eval add job_01h… --dry-run`,
		Args:              oneID("job", apiv1.JobIDPrefix, "oz0 job list"),
		ValidArgsFunction: fromServer(f, listJobs(false)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Job = args[0]
			if opts.File != "" {
				if err := eval.CheckFileName(filepath.Base(opts.File)); err != nil {
					return cmdutil.Usagef("--file: %s", strings.TrimPrefix(err.Error(), eval.ErrBadCase.Error()+": "))
				}
			}
			if runF != nil {
				return runF(opts)
			}
			return evalAddRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.File, "file", "", "the eval file to add the case to, in the plugin's evals directory (made when it is not there)")
	cmd.Flags().StringVar(&opts.Name, "name", "", "the case's name (default: made from the input's first words)")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print the case, write nothing")
	_ = cmd.MarkFlagFilename("file", "yaml")
	return cmd
}

// pluginAbove is the plugin directory dir is in: dir, or the nearest above it with an
// oz0-plugin.yaml.
func pluginAbove(dir string) (string, error) {
	for d := dir; ; {
		if isPlugin(d) {
			return d, nil
		}
		abs, _ := filepath.Abs(d)
		if filepath.Dir(abs) == abs {
			return "", cmdutil.Usagef("the working directory is not in a plugin: no directory above it has an %s; run oz0 eval add in the plugin's folder", lint.ManifestFile)
		}
		d = relUp(d)
	}
}

// evalAddFile is the plugin the working directory is in, and --file's name in its evals
// directory ("" without --file).
func evalAddFile(file string) (dir, name string, err error) {
	if dir, err = pluginAbove("."); err != nil || file == "" {
		return dir, "", err
	}
	abs, _ := filepath.Abs(file)
	evals, _ := filepath.Abs(filepath.Join(dir, evalfile.Dir))
	if filepath.Dir(abs) != evals {
		return "", "", cmdutil.Usagef("--file %s is not in the plugin's %s directory (%s): a case is written to an eval file there", file, evalfile.Dir, evals)
	}
	return dir, filepath.Base(abs), nil
}

func evalAddRun(ctx context.Context, opts *evalAddOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	// The case is of this plugin's agent: a job of another plugin's would make a file that does
	// not lint.
	job, err := c.Job(ctx, opts.Job)
	if err != nil {
		return err
	}
	if opts.Dir, opts.File, err = evalAddFile(opts.File); err != nil {
		return err
	}
	pl, _, err := lint.Load(opts.Dir)
	if err != nil {
		return err // a *diag.ReportError: the plugin's findings, as oz0 eval reports them
	}
	if pl.Agent(job.Agent) == nil {
		return cmdutil.Usagef("job %s is agent %s's, and the plugin in %s has no such agent (its agents are %s): run oz0 eval add in that agent's plugin", job.ID, job.Agent, opts.Dir, strings.Join(pl.AgentNames(), ", "))
	}
	evalsDir := filepath.Join(opts.Dir, evalfile.Dir)
	p, err := eval.ProposeCase(ctx, c, opts.Job, evalsDir, eval.CaseRequest{File: opts.File, Name: opts.Name}, schemas.URLAt(opts.Ref, evalfile.SchemaName))
	if errors.Is(err, eval.ErrBadCase) {
		return cmdutil.Usagef("%s", strings.TrimPrefix(err.Error(), eval.ErrBadCase.Error()+": "))
	}
	if err != nil {
		return err
	}
	fmt.Fprint(opts.IO.Out, p.CaseYAML)
	for _, n := range p.Notes {
		fmt.Fprintf(opts.IO.ErrOut, "oz0: note: %s\n", n)
	}
	file := path.Join(evalfile.Dir, p.File)
	if opts.DryRun {
		fmt.Fprintf(opts.IO.ErrOut, "oz0: --dry-run: case %s not written to %s\n", p.Name, file)
		return nil
	}
	if err := eval.WriteCase(evalsDir, p); errors.Is(err, eval.ErrBadCase) {
		return cmdutil.Usagef("%s", strings.TrimPrefix(err.Error(), eval.ErrBadCase.Error()+": "))
	} else if err != nil {
		return err
	}
	made := "added to"
	if !p.Existing {
		made = "written to a new"
	}
	fmt.Fprintf(opts.IO.ErrOut, "oz0: case %s %s %s, its recording %s; oz0 eval %s runs it\n", p.Name, made, file, path.Join(evalfile.Dir, p.Recording), file)
	return nil
}
