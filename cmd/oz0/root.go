package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/internal/termtext"
	"github.com/orchestrator-zero/oz0/internal/textclip"
)

// newCmdRoot builds the whole command tree.
func newCmdRoot(f *cmdutil.Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "oz0 <command>",
		Short: "The Orchestrator Zero plugin toolchain and local dev CLI",
		Long: `oz0 scaffolds, lints, tests and runs Orchestrator Zero agent plugins.

Start with a plugin from a template, check it, and run its tests:`,
		Example: `  oz0 plugin new acme-triage --template byo-agent --description "Sorts support tickets"
  cd acme-triage
  oz0 plugin lint`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       f.Version,
		Args:          noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	// --version without cobra's -v: -v is --verbose wherever a command has it, as in uv.
	root.Flags().Bool("version", false, "print the version of oz0")
	root.SetVersionTemplate(versionLine(f.Build))
	root.SetHelpCommand(newCmdHelp())
	root.SetIn(f.IOStreams.In)
	root.SetOut(f.IOStreams.Out)
	root.SetErr(f.IOStreams.ErrOut)
	root.SetFlagErrorFunc(flagError)
	root.CompletionOptions.DisableDefaultCmd = true

	root.AddCommand(newCmdVersion(f, nil))
	root.AddCommand(newCmdCompletion(f))
	root.AddCommand(newCmdPlugin(f))
	root.AddCommand(newCmdDev(f, nil))
	root.AddCommand(newCmdRun(f, nil))
	root.AddCommand(newCmdSecret(f))
	root.AddCommand(newCmdTenant(f))
	root.AddCommand(newCmdJob(f))
	root.AddCommand(newCmdApproval(f))
	root.AddCommand(newCmdUI(f, nil))
	root.AddCommand(newCmdDoctor(f, nil))
	root.AddCommand(newCmdFakeModel(f))
	root.AddCommand(newCmdSchema(f, nil))
	root.AddCommand(newCmdEval(f, nil))
	root.AddCommand(newCmdEvalJudgeHarness())
	noFileArgs(root)
	return root
}

// noFileArgs makes every command whose arguments have no completion of their own complete none:
// cobra's default offers the current directory's files, which no such oz0 command takes (those
// that take a directory or a file complete it themselves).
func noFileArgs(cmd *cobra.Command) {
	if cmd.ValidArgsFunction == nil && len(cmd.ValidArgs) == 0 {
		cmd.ValidArgsFunction = cobra.NoFileCompletions
	}
	for _, c := range cmd.Commands() {
		noFileArgs(c)
	}
}

// execute runs the command tree and turns its error into an exit code and one line on stderr,
// after the findings the error carries, if any.
func execute(f *cmdutil.Factory, args []string) int {
	root := newCmdRoot(f)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	var findings *cmdutil.FindingsError
	if err != nil && !(errors.As(err, &findings) && findings.Msg == "") {
		line := cmdutil.Message(err)
		if summary, ok := reportFindings(f.IOStreams.ErrOut, err, f.Version); ok {
			line = summary
		}
		fmt.Fprintf(f.IOStreams.ErrOut, "oz0: %s\n", line)
		if findings != nil {
			for _, d := range findings.Detail {
				fmt.Fprintln(f.IOStreams.ErrOut, termtext.OneLine(d))
			}
		}
	}
	return cmdutil.ExitCode(err)
}

// oneLine keeps a table's cell to one line, its control characters escaped.
func oneLine(s string) string { return termtext.OneLine(textclip.Squash(s, 0)) }

// flagError makes cobra's flag errors usage errors that point at the help: an unknown flag with
// the flags it may have meant, a bad value with what the flag takes (not strconv's words).
func flagError(cmd *cobra.Command, err error) error {
	msg, see := err.Error(), "; see"
	var notExist *pflag.NotExistError
	var invalid *pflag.InvalidValueError
	var needs *pflag.ValueRequiredError
	switch {
	case errors.As(err, &notExist) && strings.HasPrefix(msg, "unknown flag: --"):
		var names []string
		cmd.Flags().VisitAll(func(fl *pflag.Flag) {
			if !fl.Hidden {
				names = append(names, fl.Name)
			}
		})
		if near := plausible(notExist.GetSpecifiedName(), names); len(near) > 0 {
			msg, see = msg+"; did you mean "+orList(near, "--")+"?", " See"
		}
	case errors.As(err, &notExist) && strings.HasPrefix(msg, "unknown shorthand flag: "):
		// A short form that this command does not have: the long flags it may have meant.
		letter := notExist.GetSpecifiedShortnames()
		var near []string
		cmd.Flags().VisitAll(func(fl *pflag.Flag) {
			if !fl.Hidden && letter != "" && strings.HasPrefix(fl.Name, letter) {
				near = append(near, fl.Name)
			}
		})
		if len(near) > 0 {
			msg, see = msg+"; did you mean "+orList(near, "--")+"?", " See"
		}
	case errors.As(err, &invalid):
		msg = badFlagValue(invalid.GetFlag(), invalid.GetValue())
	case errors.As(err, &needs):
		fl := needs.GetFlag()
		msg = fmt.Sprintf("--%s needs a value: %s", fl.Name, fl.Usage)
	}
	return cmdutil.Usagef("%s%s '%s --help'", msg, see, cmd.CommandPath())
}

// badFlagValue says what a flag takes, for a value it cannot parse.
func badFlagValue(fl *pflag.Flag, value string) string {
	switch fl.Value.Type() {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return fmt.Sprintf("--%s takes a whole number, not %s", fl.Name, cmdutil.Quote(value))
	case "duration":
		return fmt.Sprintf("--%s takes a duration such as 30s, 2m or 1m30s, not %s", fl.Name, cmdutil.Quote(value))
	case "bool":
		return fmt.Sprintf("--%s is a switch: give it alone, or as --%s=false, not with %s", fl.Name, fl.Name, cmdutil.Quote(value))
	}
	return fmt.Sprintf("--%s does not take %s", fl.Name, cmdutil.Quote(value))
}

// noArgs rejects arguments on commands that take none, naming an unknown subcommand as such,
// with the subcommands it may have meant.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if cmd.HasSubCommands() {
		return unknownCommand(cmd, args[0])
	}
	if err := cmdutil.JSONFieldsMistake(cmd, args, true); err != nil {
		return err
	}
	return cmdutil.Usagef("%s takes no arguments, got %s; see '%s --help'", cmd.CommandPath(), cmdutil.Quote(args[0]), cmd.CommandPath())
}

// unknownCommand is the error for a subcommand of cmd that does not exist.
func unknownCommand(cmd *cobra.Command, name string) error {
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default, which it sets only on its own path
	}
	if near := plausible(name, cmd.SuggestionsFor(name)); len(near) > 0 {
		return cmdutil.Usagef("unknown command %s for %q; did you mean %s? See '%s --help'", cmdutil.Quote(name), cmd.CommandPath(), orList(near, ""), cmd.CommandPath())
	}
	return cmdutil.Usagef("unknown command %s for %q; see '%s --help'", cmdutil.Quote(name), cmd.CommandPath(), cmd.CommandPath())
}

// plausible keeps the suggestions that look like name: within two edits and fewer than its
// length (two edits turn "x1" into "rm"), or starting with it.
func plausible(name string, suggestions []string) []string {
	var out []string
	for _, s := range suggestions {
		d := editDistance(strings.ToLower(name), strings.ToLower(s))
		if (d <= 2 && d < len([]rune(name))) || (name != "" && strings.HasPrefix(s, name)) {
			out = append(out, s)
		}
	}
	return out
}

// orList quotes names, each after prefix, and joins them with "or".
func orList(names []string, prefix string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(prefix + n)
	}
	if len(quoted) == 1 {
		return quoted[0]
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur := make([]int, len(rb)+1)
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(rb)]
}

// newCmdHelp is `oz0 help [command]`: the help of a command, and for one that does not exist a
// usage error with what it may have meant, rather than cobra's root help and exit 0.
func newCmdHelp() *cobra.Command {
	return &cobra.Command{
		Use:     "help [command]",
		Short:   "Help about any command",
		Example: `  oz0 help plugin lint`,
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			parent, _, err := cmd.Root().Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, sub := range parent.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			target := cmd.Root()
			for _, name := range args {
				next := findSub(target, name)
				if next == nil {
					return unknownCommand(target, name)
				}
				target = next
			}
			return target.Help()
		},
	}
}

// findSub is cmd's subcommand called name (or an alias of it), or nil.
func findSub(cmd *cobra.Command, name string) *cobra.Command {
	for _, sub := range cmd.Commands() {
		if sub.Name() == name || sub.HasAlias(name) {
			return sub
		}
	}
	return nil
}

// argsBetween accepts min..max positional arguments, describing them by names in the error.
func argsBetween(min, max int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < min {
			return cmdutil.Usagef("%s needs %s; see '%s --help'", cmd.CommandPath(), names, cmd.CommandPath())
		}
		if len(args) > max {
			return cmdutil.Usagef("%s takes %s, got %d arguments (quote a value with spaces); see '%s --help'", cmd.CommandPath(), names, len(args), cmd.CommandPath())
		}
		return nil
	}
}

// oneID accepts one argument with the shape of an ID with prefix (apiv1.ValidID), so that a typo,
// a path or an empty string is refused before the dev server is asked; kind names the thing and
// list is the command that shows them.
func oneID(kind, prefix, list string) cobra.PositionalArgs {
	count := argsBetween(1, 1, "one "+kind+" ID")
	return func(cmd *cobra.Command, args []string) error {
		if err := count(cmd, args); err != nil {
			return err
		}
		if !apiv1.ValidID(prefix, args[0]) {
			return cmdutil.Usagef("%s is not %s %s ID (they look like %s4k2vrsmq…); `%s` shows them", cmdutil.Quote(args[0]), article(kind), kind, prefix, list)
		}
		return nil
	}
}

// checkUTF8 refuses text that is not UTF-8: JSON would carry each bad byte as U+FFFD, so the dev
// server would get other text than was given. what names the text; mend says what to do.
func checkUTF8(what, s, mend string) error {
	if utf8.ValidString(s) {
		return nil
	}
	at := 0
	for at < len(s) {
		r, n := utf8.DecodeRuneInString(s[at:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		at += n
	}
	return cmdutil.Usagef("%s is not UTF-8 text (byte 0x%02x at offset %d); %s", what, s[at], at, mend)
}

func article(noun string) string {
	if strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an"
	}
	return "a"
}

// groupCmd is a command that only holds subcommands: alone, it shows its help.
func groupCmd(use, short, long, example string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long, Example: example,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(subs...)
	return cmd
}
