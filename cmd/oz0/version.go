package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/internal/buildinfo"
)

// Set by the release build (.goreleaser.yaml) with -ldflags "-X main.version=0.3.0 ...": the
// version, the commit and its date, and the release's tag (empty for a snapshot). A build without
// them says what the Go toolchain stamped instead (internal/buildinfo).
var (
	version = ""
	commit  = ""
	date    = ""
	tag     = ""
)

func readBuildInfo() buildinfo.Info {
	return buildinfo.Read(buildinfo.Stamped{Version: version, Commit: commit, Date: date, Tag: tag})
}

// versionLine is what `oz0 version` and `oz0 --version` print.
func versionLine(b buildinfo.Info) string {
	return fmt.Sprintf("oz0 version %s %s/%s %s\n", b, b.OS, b.Arch, b.Go)
}

type versionOptions struct {
	IO    *iostreams.IOStreams
	Build buildinfo.Info
	cmdutil.JSONFlags
}

func newCmdVersion(f *cmdutil.Factory, runF func(*versionOptions) error) *cobra.Command {
	opts := &versionOptions{IO: f.IOStreams, Build: f.Build}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of oz0",
		Long: `Print oz0's version, the commit it was built from and that commit's date, and the platform.
A release says its version; a go install build its module version; a build from a checkout the
commit. --json prints them as an object (docs/cli.md).`,
		Example: "  oz0 version\n  oz0 version --json\n  oz0 version --jq .ref",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return versionRun(opts)
		},
	}
	cmdutil.AddJSONFlags(cmd, &opts.JSONFlags, "the version, commit, date, ref and platform")
	return cmd
}

func versionRun(opts *versionOptions) error {
	if opts.Enabled() {
		return opts.Write(opts.IO, opts.Build)
	}
	_, err := fmt.Fprint(opts.IO.Out, versionLine(opts.Build))
	return err
}
