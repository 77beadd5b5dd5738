package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/devserver"
	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/eval"
	"github.com/orchestrator-zero/oz0/harnesskit/harness"
	"github.com/orchestrator-zero/oz0/internal/termtext"
	"github.com/orchestrator-zero/oz0/lint"
	"github.com/orchestrator-zero/oz0/lint/evalfile"
	"github.com/orchestrator-zero/oz0/plugin"
	"github.com/orchestrator-zero/oz0/supervisor/ahead"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

// The formats of oz0 eval's report.
const (
	evalFormatTable  = "table"
	evalFormatGitHub = "github"
)

// evalReportOptions are how oz0 eval and oz0 eval merge write their report.
type evalReportOptions struct {
	IO *iostreams.IOStreams
	cmdutil.JSONFlags
	Getenv   func(string) string
	JUnit    string
	Report   string // --report FILE: the --json report, also written to FILE
	Format   string
	Baseline string
}

type evalOptions struct {
	evalReportOptions
	Version string
	Client  func() (*client.Client, error) // the running oz0 dev, for --dev
	Paths   []string                       // each FILE or DIR as given
	Jobs    int                            // 0: the node's default
	Live    bool
	Record  bool
	Update  bool
	Dev     bool
	Sandbox sandbox.Tier
	Ahead   ahead.Policy // --warm N (the default), --cold: when its node makes sessions
	// Shard and Shards: --shard i/n, the part of the cases this run has; 0 and 0: all.
	Shard, Shards int
}

// addEvalReportFlags adds the flags of the report's formats and files.
func addEvalReportFlags(cmd *cobra.Command, opts *evalReportOptions) {
	cmdutil.AddJSONFlags(cmd, &opts.JSONFlags, "the cases' results")
	cmd.Flags().StringVar(&opts.JUnit, "junit", "", "also write a JUnit XML report to FILE")
	cmd.Flags().StringVar(&opts.Report, "report", "", "also write the JSON report (as --json prints it) to FILE: for oz0 eval merge and --baseline")
	cmd.Flags().StringVar(&opts.Format, "format", evalFormatTable, "report format: table, or github (annotations and a job summary)")
	cmd.Flags().StringVar(&opts.Baseline, "baseline", "", "compare with an earlier oz0 eval --json (FILE)")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{evalFormatTable, evalFormatGitHub}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.MarkFlagFilename("junit", "xml")
	_ = cmd.MarkFlagFilename("report", "json")
	_ = cmd.MarkFlagFilename("baseline", "json")
}

// check checks the report's flags before anything runs.
func (o *evalReportOptions) check() error {
	if err := o.Check(); err != nil {
		return err
	}
	if !slices.Contains([]string{evalFormatTable, evalFormatGitHub}, o.Format) {
		return cmdutil.Usagef("unknown --format %s; choose table or github", cmdutil.Quote(o.Format))
	}
	if err := checkOutputFile("--junit", o.JUnit); err != nil {
		return err
	}
	return checkOutputFile("--report", o.Report)
}

// readBaseline reads --baseline, nil without it.
func (o *evalReportOptions) readBaseline() (*eval.Report, error) {
	if o.Baseline == "" {
		return nil, nil
	}
	b, err := eval.ReadBaseline(o.Baseline)
	if err != nil {
		return nil, cmdutil.Usagef("--baseline: %s", cmdutil.Message(err))
	}
	return b, nil
}

func newCmdEval(f *cmdutil.Factory, runF func(*evalOptions) error) *cobra.Command {
	opts := &evalOptions{evalReportOptions: evalReportOptions{IO: f.IOStreams, Getenv: f.Getenv}, Version: f.Version, Client: f.Client}
	var sandboxFlag string
	var shardFlag string
	var warm int
	var cold bool
	cmd := &cobra.Command{
		Use:   "eval [FILE|DIR]...",
		Short: "Run a plugin's eval cases and check what its agents do",
		Long: `Run the cases of the plugin's eval files (evals/*.yaml; a FILE, or the evals of the plugin in
DIR) through a node of oz0's own, as oz0 plugin test does (no oz0 dev needed), and check what
each case asserts of its job: the output, the tools called and refused, model calls, tokens,
cost, duration, the status. docs/eval.md describes the file format. Several FILEs and DIRs (a
repository's plugins: oz0 plugin list) run on one node, in one report.

A case's model answers come from its recording (replayed as oz0 job replay replays one: a call
the recording does not have fails the case with the diff), a fake model script, or, with
--live, the live model records (ANTHROPIC_API_KEY or OPENAI_API_KEY). --record runs the cases
that have no recording yet on the live model and writes their recordings; --update records
every recorded case again, after an intended change. A judge assertion (a model's yes or no to a
rubric question about the output) runs with the live model only, as a job of its own.

--dev runs the cases on the running oz0 dev instead, so they show in its UI. --jobs N runs N
cases at once. --baseline FILE compares with an earlier --json: the cases that now fail, and
the token, cost and duration deltas. --junit FILE writes a JUnit report; --format github writes
annotations on the eval files' lines and a job summary ($GITHUB_STEP_SUMMARY).

--shard i/n runs the i-th of n parts of the cases, one machine of a CI matrix: the cases split
by ID, balanced by the durations their recordings keep, the same split on every machine. oz0
eval merge makes the parts' reports (--json, or --report FILE) one (docs/ci.md).

Exit status: 0 every case passed, 1 a case failed or the plugin has lint errors, 2 usage or a bad
eval file, 3 the environment (no key for --live, a recording that cannot be written), 130
interrupted (Ctrl-C).`,
		Example: `  oz0 eval
  oz0 eval evals/triage.yaml --json
  oz0 eval plugins/*                 # several plugins' cases, one report
  oz0 eval --shard 2/4 --report shard-2.json   # a CI matrix's second machine of four
  oz0 eval --record                  # record the new cases on the live model
  oz0 eval --format github --junit eval-junit.xml
  oz0 eval --baseline main-eval.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Paths = []string{"."}
			if len(args) > 0 {
				opts.Paths = args
			}
			if err := opts.check(); err != nil {
				return err
			}
			if shardFlag != "" {
				i, n, err := eval.ParseShard(shardFlag)
				if err != nil {
					return cmdutil.Usagef("--shard %s", err)
				}
				opts.Shard, opts.Shards = i, n
			}
			if cmd.Flags().Changed("jobs") && opts.Jobs < 1 {
				return cmdutil.Usagef("--jobs must be at least 1, not %d", opts.Jobs)
			}
			if opts.Dev && opts.Jobs > 0 {
				return cmdutil.Usagef("--jobs sets the session limit of oz0 eval's own node; with --dev, oz0 dev's --max-sessions is the limit")
			}
			n := 0
			for _, on := range []bool{opts.Live, opts.Record, opts.Update} {
				if on {
					n++
				}
			}
			if n > 1 {
				return cmdutil.Usagef("--live, --record and --update cannot be combined: --record and --update run live already")
			}
			tier, err := sandbox.ParseTier(sandboxFlag)
			if err != nil {
				return cmdutil.Usagef("--sandbox: %v", err)
			}
			if opts.Dev && tier != "" {
				return cmdutil.Usagef("--sandbox sets oz0 eval's own node; with --dev, oz0 dev's --sandbox is the tier")
			}
			opts.Sandbox = tier
			if opts.Ahead, err = aheadPolicy(cmd, warm, cold); err != nil {
				return err
			}
			if opts.Dev && (cmd.Flags().Changed("warm") || cold) {
				return cmdutil.Usagef("--warm and --cold set oz0 eval's own node; with --dev, oz0 dev's are the node's")
			}
			if runF != nil {
				return runF(opts)
			}
			return evalRun(cmd.Context(), opts)
		},
	}
	addEvalReportFlags(cmd, &opts.evalReportOptions)
	cmd.Flags().IntVar(&opts.Jobs, "jobs", 0, "run at most N cases at once (default: oz0 dev's session limit, 4 a core)")
	cmd.Flags().StringVar(&shardFlag, "shard", "", "run shard i of n (i/n): the cases split by ID, balanced by their recordings' durations (oz0 eval merge joins the reports)")
	cmd.Flags().BoolVar(&opts.Live, "live", false, "run every case on the live model records (needs a provider key)")
	cmd.Flags().BoolVar(&opts.Record, "record", false, "record the cases that have no recording on the live model, and write their recordings")
	cmd.Flags().BoolVar(&opts.Update, "update", false, "record every recorded case again on the live model, rewriting its recording")
	cmd.Flags().BoolVar(&opts.Dev, "dev", false, "run the cases on the running oz0 dev, so they show in its UI")
	cmd.Flags().StringVar(&sandboxFlag, "sandbox", "", "the sessions' sandbox: none, standard or strict (default: oz0 dev's, standard where this machine allows it)")
	addAheadFlags(cmd, &warm, &cold)
	_ = cmd.RegisterFlagCompletionFunc("sandbox", cobra.FixedCompletions(sandbox.TierNames(), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("shard", cobra.NoFileCompletions)
	cmd.ValidArgsFunction = completeDir
	cmd.AddCommand(newCmdEvalMerge(f, nil), newCmdEvalAdd(f, nil))
	return cmd
}

// evalTarget is what oz0 eval runs: the plugin's directory and the eval files.
type evalTarget struct {
	pluginDir string
	files     []string // as the user would name them: relative to the working directory
}

// findEvals resolves FILE or DIR: an eval file (its plugin is the directory above that has an
// oz0-plugin.yaml), a plugin's directory (its evals/*.yaml), or an evals directory.
func findEvals(p string) (*evalTarget, error) {
	st, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, cmdutil.Usagef("%s does not exist; give an eval file, or a plugin's directory", p)
		}
		return nil, err
	}
	t := &evalTarget{}
	dir := p
	if !st.IsDir() {
		t.files = []string{p}
		dir = filepath.Dir(p)
	} else if isPlugin(p) {
		t.pluginDir = p
		dir = filepath.Join(p, evalfile.Dir)
		st, err := os.Stat(dir)
		if err != nil || !st.IsDir() {
			return nil, cmdutil.Usagef("the plugin in %s has no %s directory; write cases in %s/*.yaml (docs/eval.md)", p, evalfile.Dir, evalfile.Dir)
		}
	}
	if t.files == nil {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if evalfile.IsFile(e) {
				t.files = append(t.files, filepath.Join(dir, e.Name()))
			}
		}
		if len(t.files) == 0 {
			return nil, cmdutil.Usagef("%s has no eval files (*.yaml); write cases there (docs/eval.md)", dir)
		}
	}
	if t.pluginDir == "" {
		for d := dir; ; {
			if isPlugin(d) {
				t.pluginDir = d
				break
			}
			abs, _ := filepath.Abs(d)
			up := filepath.Dir(abs)
			if up == abs {
				return nil, cmdutil.Usagef("%s is not in a plugin: no directory above it has an oz0-plugin.yaml", p)
			}
			d = relUp(d)
		}
	}
	return t, nil
}

func relUp(d string) string {
	if d == "." || d == "" {
		return ".."
	}
	return filepath.Join(d, "..")
}

func isPlugin(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, lint.ManifestFile))
	return err == nil && !st.IsDir()
}

// loadEvals reads and checks the eval files as oz0 eval names them (as given); their findings
// (with the agents the plugin lacks) are the report of a usage error.
func loadEvals(t *evalTarget, p *plugin.Plugin) ([]*eval.File, *diag.Report, error) {
	shown := make([]string, len(t.files))
	for i, name := range t.files {
		shown[i] = filepath.ToSlash(name)
	}
	return eval.Load(p, t.files, shown)
}

// findAllEvals resolves each FILE or DIR and reads its eval files: the plugins they are of (each
// once, in the order given, linted clean) and the files (each once). Eval files with problems are
// reported, and nothing runs.
func findAllEvals(opts *evalOptions) ([]*plugin.Plugin, []*eval.File, error) {
	var plugins []*plugin.Plugin
	var files []*eval.File
	byDir := map[string]*plugin.Plugin{}
	seen := map[string]bool{}
	rep := &diag.Report{}
	for _, path := range opts.Paths {
		t, err := findEvals(path)
		if err != nil {
			return nil, nil, err
		}
		p := byDir[absPath(t.pluginDir)]
		if p == nil {
			if p, _, err = lint.Load(t.pluginDir); err != nil {
				return nil, nil, err // a plugin with lint errors gives a *diag.ReportError
			}
			byDir[absPath(t.pluginDir)] = p
			plugins = append(plugins, p)
		}
		found, r, err := loadEvals(t, p)
		if err != nil {
			return nil, nil, err
		}
		rep.Add(r.Diagnostics...)
		for _, f := range found {
			if !seen[absPath(f.Path)] {
				seen[absPath(f.Path)] = true
				files = append(files, f)
			}
		}
	}
	if rep.HasErrors() {
		format := diag.FormatText
		w := opts.IO.ErrOut
		if opts.Format == evalFormatGitHub {
			format, w = diag.FormatGitHub, opts.IO.Out
		}
		if err := diag.Write(w, rep, format, diag.Tool{Version: opts.Version}); err != nil {
			return nil, nil, err
		}
		return nil, nil, cmdutil.Usagef("the eval files have %s; nothing was run", diag.Summary(rep))
	}
	return plugins, files, nil
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

func evalRun(ctx context.Context, opts *evalOptions) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	baseline, err := opts.readBaseline()
	if err != nil {
		return err
	}
	plugins, files, err := findAllEvals(opts)
	if err != nil {
		return err
	}
	// Who ran what, for oz0 eval merge; a shard runs its part of the cases.
	meta := func(r *eval.Report) {
		r.Plugins = []eval.PluginRef{}
		for _, p := range plugins {
			r.Plugins = append(r.Plugins, eval.PluginRef{Name: p.Manifest.Name, Version: p.Manifest.Version})
		}
		r.OZ0Version = opts.Version
	}
	var shard *eval.Shard
	if opts.Shards > 0 {
		files, shard = eval.Split(files, opts.Shard, opts.Shards)
		if len(files) == 0 {
			// More shards than cases: this one has none, and says so.
			r := &eval.Report{Shard: shard, Results: []eval.Result{}}
			meta(r)
			fmt.Fprintf(opts.IO.ErrOut, "oz0: shard %d/%d has none of the %d cases\n", opts.Shard, opts.Shards, len(shard.Cases))
			return writeEvalReport(&opts.evalReportOptions, r, baseline)
		}
	}
	mode := eval.Offline
	switch {
	case opts.Live:
		mode = eval.Live
	case opts.Record:
		mode = eval.Record
	case opts.Update:
		mode = eval.Update
	}
	judge := mode != eval.Offline && eval.HasJudge(files)
	if judge && opts.Dev {
		return cmdutil.Usagef("a judge assertion runs on oz0 eval's own node, which has the judge: drop --dev, or run without --live, --record and --update (judges are then skipped)")
	}
	var dirs []string
	for _, p := range plugins {
		dirs = append(dirs, p.Dir)
	}
	srv, closeSrv, err := evalServer(opts, dirs, mode, judge)
	if err != nil {
		return err
	}
	defer closeSrv()
	// On oz0 dev a person may answer a case's approvals in its inbox; oz0 eval's own node has
	// nobody to ask.
	note := func(msg string) { fmt.Fprintf(opts.IO.ErrOut, "oz0: %s\n", termtext.OneLine(msg)) }
	report, err := eval.Run(ctx, srv, files, eval.Options{Mode: mode, Inbox: opts.Dev, Note: note})
	if report != nil {
		meta(report)
		report.Shard = shard
	}
	var interrupted *eval.InterruptedError
	if errors.As(err, &interrupted) {
		// What ran is reported (the table, --json, --junit), the cases stopped one line each.
		if werr := writeEvalReport(&opts.evalReportOptions, report, baseline); werr != nil && !isFindings(werr) {
			return werr
		}
		return &cmdutil.InterruptedError{Msg: interrupted.Error()}
	}
	if err != nil {
		return err
	}
	return writeEvalReport(&opts.evalReportOptions, report, baseline)
}

func isFindings(err error) bool {
	var f *cmdutil.FindingsError
	return errors.As(err, &f)
}

// evalServer is the dev server the cases run on: the running oz0 dev (--dev), or one of oz0
// eval's own, in memory, that serves the plugins alone with the provider keys of the environment.
func evalServer(opts *evalOptions, pluginDirs []string, mode eval.Mode, judge bool) (*client.Client, func(), error) {
	if opts.Dev {
		c, err := opts.Client()
		return c, func() {}, err
	}
	var keys []string
	if mode != eval.Offline {
		for _, k := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"} {
			if opts.Getenv(k) != "" {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			return nil, nil, errors.New("the live model needs a provider key: set ANTHROPIC_API_KEY or OPENAI_API_KEY (OZ0_ANTHROPIC_BASE_URL, OZ0_OPENAI_BASE_URL for another upstream)")
		}
	}
	dirs := slices.Clone(pluginDirs)
	cleanup := func() {}
	if judge {
		// The judge is a plugin of its own beside the plugin under test: oz0 itself, its harness.
		exe, err := os.Executable()
		if err != nil {
			return nil, nil, err
		}
		tmp, err := os.MkdirTemp("", "oz0-eval-judge-")
		if err != nil {
			return nil, nil, err
		}
		cleanup = func() { os.RemoveAll(tmp) }
		// Sessions of a node run as root run as nobody, who must reach the judge's program.
		if err := os.Chmod(tmp, 0o755); err != nil {
			cleanup()
			return nil, nil, err
		}
		if err := eval.JudgePlugin(tmp, exe); err != nil {
			cleanup()
			return nil, nil, err
		}
		dirs = append(dirs, tmp)
	}
	srv, err := devserver.Start(devserver.Config{
		PluginDirs: dirs, Ephemeral: true, Version: opts.Version, Poll: -1,
		Out: io.Discard, Log: io.Discard, Getenv: opts.Getenv, Sandbox: opts.Sandbox,
		MaxSessions: opts.Jobs, Ahead: opts.Ahead,
	})
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	c := client.New(srv.Context())
	for _, k := range keys {
		if _, err := c.SetSecret(context.Background(), k, opts.Getenv(k), ""); err != nil {
			srv.Close()
			cleanup()
			return nil, nil, err
		}
	}
	return c, func() { srv.Close(); cleanup() }, nil
}

func writeEvalReport(opts *evalReportOptions, report *eval.Report, baseline *eval.Report) error {
	var cmp *eval.Comparison
	if baseline != nil {
		cmp = eval.Compare(baseline, report)
	}
	if opts.JUnit != "" {
		if err := eval.WriteJUnitFile(opts.JUnit, report); err != nil {
			return err
		}
	}
	if opts.Report != "" {
		if err := eval.WriteJSONFile(opts.Report, eval.JSONReport{Report: report, Baseline: cmp}); err != nil {
			return err
		}
	}
	switch {
	case opts.Enabled():
		out := eval.JSONReport{Report: report, Baseline: cmp}
		if err := opts.Write(opts.IO, out); err != nil {
			return err
		}
	case opts.Format == evalFormatGitHub:
		if err := eval.WriteGitHub(opts.IO.Out, report, cmp); err != nil {
			return err
		}
		if path := opts.Getenv("GITHUB_STEP_SUMMARY"); path != "" {
			if err := eval.AppendSummary(path, report, cmp); err != nil {
				return err
			}
		}
	default:
		if err := eval.WriteTable(opts.IO.Out, report); err != nil {
			return err
		}
		if cmp != nil {
			if err := eval.WriteComparison(opts.IO.Out, cmp); err != nil {
				return err
			}
		}
	}
	if failed := report.Counts().Failed; failed > 0 {
		return &cmdutil.FindingsError{Msg: fmt.Sprintf("%d of %d cases failed", failed, len(report.Results))}
	}
	return nil
}

// newCmdEvalJudgeHarness is the harness of oz0 eval's judge (eval.JudgePlugin): hidden, run by
// the node as a session's program, never by a person.
func newCmdEvalJudgeHarness() *cobra.Command {
	return &cobra.Command{
		Use:    eval.JudgeCommand,
		Short:  "The harness of oz0 eval's judge",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			harness.Main(eval.JudgeHarness)
			return nil
		},
	}
}
