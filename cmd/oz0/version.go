package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/internal/cmdutil"
)

// version is set by the release build with -ldflags "-X main.version=v1.2.3".
var version = ""

// buildVersion says which build this is: the release version, else the module version or the
// commit it was built from.
func buildVersion() string {
	v := version
	info, ok := debug.ReadBuildInfo()
	if v == "" && ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	if v == "" {
		v = "dev"
	}
	if ok {
		var rev, dirty string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "-dirty"
				}
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			v += " (" + rev + dirty + ")"
		}
	}
	return v
}

func newCmdVersion(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version of oz0",
		Example: "  oz0 version",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintf(f.IOStreams.Out, "oz0 version %s %s/%s %s\n", f.Version, runtime.GOOS, runtime.GOARCH, runtime.Version())
			return err
		},
	}
}
