package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/devserver/tenanthooks"
	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/fakemodel"
	"github.com/orchestrator-zero/oz0/lint"
)

type pluginLintOptions struct {
	IO          *iostreams.IOStreams
	Tool        diag.Tool // oz0's version and ref, for SARIF
	Dirs        []string  // the plugins' directories: one report of them all
	Format      string
	Base        string // what sarif and github paths are relative to; "" is the git repository's root
	FakeScripts []string
	HooksFiles  []string
}

func newCmdPluginLint(f *cmdutil.Factory, runF func(*pluginLintOptions) error) *cobra.Command {
	opts := &pluginLintOptions{IO: f.IOStreams, Tool: diag.Tool{Version: f.Build.Version, Ref: f.Build.Ref}}
	cmd := &cobra.Command{
		Use:   "lint [DIR...]",
		Short: "Check a plugin against the schemas and the cross-file rules",
		Long: `Validate oz0-plugin.yaml, agents/*.yaml and skills/*/SKILL.md against the JSON Schemas,
then the rules that span files. Rules are listed in docs/lint-rules.md.

Several DIRs (a repository's plugins: oz0 plugin list) are linted at once, in one report, each
finding's path under its plugin's DIR.

--fake-script and --hooks check a fake model script and a hooks file as well, in the same report
and format, so that every YAML file oz0 reads can be checked in CI.

--format sarif (code scanning) and --format github (annotations) give paths relative to the root
of the git repository the plugin is in, as GitHub reads them, wherever oz0 runs; --base DIR
makes them relative to DIR instead. Their rules link to docs/lint-rules.md at this release's tag.

Exit status: 0 clean (warnings allowed), 1 errors found, 2 usage, 3 cannot read.`,
		Example: `  oz0 plugin lint
  oz0 plugin lint acme-triage --format json
  oz0 plugin lint plugins/*          # several plugins, one report
  oz0 plugin lint --format sarif > oz0.sarif
  oz0 plugin lint --format github   # annotations in a GitHub Actions log
  oz0 plugin lint --fake-script tests/replies.yaml --hooks ../ops/hooks.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dirs = []string{"."}
			if len(args) > 0 {
				opts.Dirs = args
			}
			if !slices.Contains(diag.Formats, opts.Format) {
				return cmdutil.Usagef("unknown --format %s; choose one of %s", cmdutil.Quote(opts.Format), strings.Join(diag.Formats, ", "))
			}
			if runF != nil {
				return runF(opts)
			}
			return pluginLintRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", diag.FormatText, "output format: "+strings.Join(diag.Formats, ", "))
	cmd.Flags().StringArrayVar(&opts.FakeScripts, "fake-script", nil, "also check this fake model script (repeatable)")
	cmd.Flags().StringArrayVar(&opts.HooksFiles, "hooks", nil, "also check this hooks file (repeatable)")
	cmd.Flags().StringVar(&opts.Base, "base", "", "for sarif and github: make paths relative to this directory (default: the git repository's root)")
	_ = cmd.MarkFlagDirname("base")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(diag.Formats, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.MarkFlagFilename("fake-script", "yaml", "yml")
	_ = cmd.MarkFlagFilename("hooks", "yaml", "yml")
	cmd.ValidArgsFunction = completeDir
	return cmd
}

func pluginLintRun(opts *pluginLintOptions) error {
	reports, err := lint.RunMany(opts.Dirs, 0)
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()[0] // the first directory that cannot be read: one line
	}
	if err != nil {
		return err
	}
	rep := reports[0]
	if len(reports) > 1 || len(opts.FakeScripts)+len(opts.HooksFiles) > 0 {
		// One report: each plugin's files shown as they are from here, like the other files.
		rep = &diag.Report{}
		for _, r := range reports {
			for _, d := range r.Diagnostics {
				d.File = r.Path(d)
				rep.Diagnostics = append(rep.Diagnostics, d)
			}
		}
		for _, name := range opts.FakeScripts {
			if err := addFileReport(rep, name, func() error { _, err := fakemodel.LoadScript(name); return err }); err != nil {
				return err
			}
		}
		for _, name := range opts.HooksFiles {
			if err := addFileReport(rep, name, func() error {
				set, err := tenanthooks.Load(name)
				if err == nil {
					set.Close()
				}
				return err
			}); err != nil {
				return err
			}
		}
	}
	if opts.Format == diag.FormatSARIF || opts.Format == diag.FormatGitHub {
		if err := rebase(rep, opts.Dirs[0], opts.Base); err != nil {
			return err
		}
	}
	if err := diag.Write(opts.IO.Out, rep, opts.Format, opts.Tool); err != nil {
		return err
	}
	if rep.HasErrors() {
		return &cmdutil.FindingsError{}
	}
	return nil
}

// rebase makes the report's paths relative to base, or, when base is "", to the root of the git
// repository dir is in; with neither, they stay as given. A path outside base stays absolute.
func rebase(rep *diag.Report, dir, base string) error {
	if base == "" {
		base = gitRoot(dir)
		if base == "" {
			return nil
		}
	} else if st, err := os.Stat(base); err != nil || !st.IsDir() {
		return cmdutil.Usagef("--base %s is not a directory; give the directory paths are relative to (the repository's root)", base)
	}
	root, err := realPath(base)
	if err != nil {
		return err
	}
	for i, d := range rep.Diagnostics {
		p, err := realPath(filepath.FromSlash(rep.Path(d)))
		if err != nil {
			return err
		}
		if rel, err := filepath.Rel(root, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			p = rel
		}
		rep.Diagnostics[i].File = filepath.ToSlash(p)
	}
	rep.Dir = ""
	return nil
}

// gitRoot is the root of the git work tree dir is in, or "" (not in one, or no git).
func gitRoot(dir string) string {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// realPath is p made absolute with its symbolic links resolved (git reports the root so), as far
// as p exists: a finding can be about a file that does not.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			return filepath.Join(r, rest), nil
		}
		parent := filepath.Dir(abs)
		if parent == abs {
			return filepath.Join(abs, rest), nil
		}
		rest = filepath.Join(filepath.Base(abs), rest)
		abs = parent
	}
}

// addFileReport loads the file name with load and adds its problems to rep; a file that cannot be
// read at all is an error of its own.
func addFileReport(rep *diag.Report, name string, load func() error) error {
	if _, err := os.Stat(name); err != nil {
		return fmt.Errorf("cannot read %s: %w", name, errors.Unwrap(err))
	}
	err := load()
	var re *diag.ReportError
	if errors.As(err, &re) {
		rep.Add(re.Report.Diagnostics...)
		return nil
	}
	return err
}
