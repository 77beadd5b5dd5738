package main

import (
	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/internal/cmdutil"
)

func newCmdCompletion(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print a shell completion script",
		Long:  "Print the completion script for a shell. Load it in the shell's start-up file.",
		Example: `  # bash, for this shell
  source <(oz0 completion bash)
  # zsh, for every new shell
  oz0 completion zsh > "${fpath[1]}/_oz0"
  # fish
  oz0 completion fish > ~/.config/fish/completions/oz0.fish`,
		ValidArgs: []string{"bash", "zsh", "fish"},
		Args:      argsBetween(1, 1, "one shell: bash, zsh or fish"),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := f.IOStreams.Out
			root := cmd.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, true)
			}
			return cmdutil.Usagef("unknown shell %q; choose bash, zsh or fish", args[0])
		},
	}
}
