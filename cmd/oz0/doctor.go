package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/doctor"
	"github.com/orchestrator-zero/oz0/internal/cmdutil"
)

func newCmdDoctor(f *cmdutil.Factory) *cobra.Command {
	var dir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check this machine for the oz0 dev loop, and say how to mend each miss",
		Long: `Check python, the plugin (it lints), its .venv, uv, the dev server in OZ0_CONTEXT, a free
loopback port, and which sandbox tiers work here (and if one does not, why). Exit status 1 when
a check fails; warnings do not fail it.`,
		Example: "  oz0 doctor\n  oz0 doctor --plugin acme-triage --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			results := doctor.Run(context.Background(), doctor.Env{PluginDir: dir, Getenv: f.Getenv})
			out := f.IOStreams.Out
			failed := 0
			enc := json.NewEncoder(out)
			enc.SetEscapeHTML(false)
			for _, r := range results {
				if r.Level == doctor.Fail {
					failed++
				}
				if asJSON {
					if err := enc.Encode(r); err != nil {
						return err
					}
					continue
				}
				fmt.Fprintf(out, "%-4s  %-10s  %s\n", r.Level, r.Check, r.Detail)
				if r.Mend != "" {
					fmt.Fprintf(out, "      %-10s  mend: %s\n", "", r.Mend)
				}
			}
			if failed > 0 {
				return &cmdutil.FindingsError{Msg: fmt.Sprintf("%d check(s) failed; see the mend lines above", failed)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "plugin", ".", "the plugin's directory")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each check as a JSON line")
	return cmd
}
