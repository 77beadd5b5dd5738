package main

import (
	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
)

var completionShells = []string{"bash", "zsh", "fish", "powershell"}

func newCmdCompletion(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: `Print the completion script for a shell. Load it in the shell's start-up file.

Besides commands and flags, it completes what the dev server (OZ0_CONTEXT's, else the plugin's
oz0 dev found from this folder) has: agents (oz0 run), job IDs (oz0 job show, watch, cancel,
trace), waiting approvals (approve, deny), rules (revoke) and secret names (oz0 secret rm); and
the plugin's harnesses (oz0 plugin test --harness). Directory arguments complete directories.

The bash script needs the bash-completion package (version 2). If it is not installed:
  sudo apt-get install bash-completion    # Debian, Ubuntu
  brew install bash-completion@2          # macOS; then add the line brew prints to ~/.bash_profile`,
		Example: `  # bash, for this shell
  source <(oz0 completion bash)
  # zsh, for every new shell
  oz0 completion zsh > "${fpath[1]}/_oz0"
  # fish
  oz0 completion fish > ~/.config/fish/completions/oz0.fish
  # PowerShell, in $PROFILE
  oz0 completion powershell | Out-String | Invoke-Expression`,
		ValidArgs: completionShells,
		Args:      argsBetween(1, 1, "one shell: bash, zsh, fish or powershell"),
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
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(out)
			}
			return cmdutil.Usagef("unknown shell %s; choose bash, zsh, fish or powershell", cmdutil.Quote(args[0]))
		},
	}
}
