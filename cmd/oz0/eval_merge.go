package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/eval"
)

type evalMergeOptions struct {
	evalReportOptions
	Reports []string
}

func newCmdEvalMerge(f *cmdutil.Factory, runF func(*evalMergeOptions) error) *cobra.Command {
	opts := &evalMergeOptions{evalReportOptions: evalReportOptions{IO: f.IOStreams, Getenv: f.Getenv}}
	cmd := &cobra.Command{
		Use:   "merge REPORT...",
		Short: "Merge the reports of oz0 eval's shards into one",
		Long: `Merge the JSON reports of a run's shards (oz0 eval --shard i/n --json, or --report FILE),
each made on its own machine of a CI matrix, into the report the run would have made on one:
the table, --json, --junit, --format github (annotations and a job summary) and --baseline's
deltas, as oz0 eval writes them.

The reports must be of the same plugins and versions, made by one oz0, of the same cases and
number of shards, each shard once: a missing shard, or a case in two reports, is refused, naming
them.
docs/ci.md has a workflow that runs the shards as a matrix and merges them.

Exit status: 0 every case passed, 1 a case failed or was interrupted, 2 reports that cannot be
merged (which and why on one line), 3 a report that cannot be read.`,
		Example: `  oz0 eval merge shard-*.json
  oz0 eval merge reports/*.json --format github --junit eval-junit.xml
  oz0 eval merge reports/*.json --baseline main-eval.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmdutil.Usagef("oz0 eval merge needs REPORT...: the shards' reports (oz0 eval --shard i/n --json), e.g. oz0 eval merge shard-*.json")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Reports = args
			if err := opts.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return evalMergeRun(opts)
		},
	}
	addEvalReportFlags(cmd, &opts.evalReportOptions)
	cmd.ValidArgsFunction = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"json"}, cobra.ShellCompDirectiveFilterFileExt
	}
	return cmd
}

func evalMergeRun(opts *evalMergeOptions) error {
	baseline, err := opts.readBaseline()
	if err != nil {
		return err
	}
	var shards []eval.ShardReport
	for _, path := range opts.Reports {
		if st, err := os.Stat(path); err == nil && st.IsDir() {
			return cmdutil.Usagef("%s is a directory; give the shards' reports in it: %s", path, filepath.Join(path, "*.json"))
		}
		s, err := eval.ReadShard(path)
		var merr *eval.MergeError
		switch {
		case errors.As(err, &merr):
			return cmdutil.Usagef("%s", merr.Msg)
		case errors.Is(err, fs.ErrNotExist):
			return cmdutil.Usagef("%s does not exist; give the shards' reports (oz0 eval --shard i/n --json)", path)
		case err != nil:
			return fmt.Errorf("cannot read %s: %w", path, err)
		}
		shards = append(shards, s)
	}
	report, err := eval.Merge(shards)
	if err != nil {
		return cmdutil.Usagef("%s", err.Error())
	}
	if err := writeEvalReport(&opts.evalReportOptions, report, baseline); err != nil {
		return err
	}
	if n := report.Counts().Interrupted; n > 0 {
		// A shard that was interrupted did not run all its cases: the run is not whole.
		return &cmdutil.FindingsError{Msg: fmt.Sprintf("%d of %d cases were interrupted before they ended", n, len(report.Results))}
	}
	return nil
}
