package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/prompt"
	"github.com/orchestrator-zero/oz0/scaffold"
)

type pluginNewOptions struct {
	IO       *iostreams.IOStreams
	Prompter prompt.Prompter
	Getwd    func() (string, error)
	Ref      string // this build's ref, which the plugin's schema lines and CI workflow point at
	// LookPath finds the tool the next steps need (uv): without it, they say what does instead.
	LookPath func(string) (string, error)

	Name        string
	Template    string
	Description string
	Dir         string
}

func newCmdPluginNew(f *cmdutil.Factory, runF func(*pluginNewOptions) error) *cobra.Command {
	opts := &pluginNewOptions{IO: f.IOStreams, Prompter: f.Prompter, Getwd: f.Getwd, LookPath: exec.LookPath, Ref: f.Build.Ref}
	cmd := &cobra.Command{
		Use:   "new NAME --template T --description D",
		Short: "Scaffold a new plugin from a template",
		Long: `Write a new plugin into NAME/ from a template embedded in oz0: NAME/ in the current directory, or
D/NAME/ with --dir D.

NAME is lowercase letters, digits and hyphens, starting with a letter, at most 63 characters.
The target must not exist or be empty. On a terminal, whatever is missing is asked for.`,
		Example: `  oz0 plugin new acme-triage --template byo-agent --description "Sorts support tickets"
  oz0 plugin new acme-triage --template byo-agent --description "Sorts support tickets" --dir ~/src   # writes ~/src/acme-triage/
  oz0 plugin new            # on a terminal: asks for the name, template and description`,
		Args: argsBetween(0, 1, "at most one NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Name = args[0]
				if opts.Name == "" {
					return cmdutil.Usagef("%s", scaffold.ValidateName(""))
				}
			}
			// An explicit empty value is a bad value, not a missing one: say what is wrong with it.
			if cmd.Flags().Changed("description") && opts.Description == "" {
				return cmdutil.Usagef("%s", scaffold.ValidateDescription(""))
			}
			if cmd.Flags().Changed("template") && opts.Template == "" {
				return cmdutil.Usagef("--template is empty; choose one of: %s", strings.Join(scaffold.TemplateNames(), ", "))
			}
			// Everything given is checked before anything is asked.
			if err := checkGiven(opts); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return pluginNewRun(opts)
		},
	}
	// No -t: elsewhere -t is --template's Go template (as in gh), a different thing.
	cmd.Flags().StringVar(&opts.Template, "template", "", "the template: "+strings.Join(scaffold.TemplateNames(), ", "))
	cmd.Flags().StringVarP(&opts.Description, "description", "d", "", "one line saying what the agent does")
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "the directory the plugin's directory NAME/ is made in: --dir D writes D/NAME/ (default: the current directory)")
	_ = cmd.RegisterFlagCompletionFunc("template", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		var out []string
		for _, t := range scaffold.Templates() {
			out = append(out, t.Name+"\t"+t.Description)
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
	_ = cmd.MarkFlagDirname("dir")
	cmd.ValidArgsFunction = cobra.NoFileCompletions
	return cmd
}

func pluginNewRun(opts *pluginNewOptions) error {
	parent := opts.Dir
	if parent == "" {
		wd, err := opts.Getwd()
		if err != nil {
			return fmt.Errorf("cannot find the current directory: %w", err)
		}
		parent = wd
	}
	if opts.Dir != "" {
		// A --dir that is missing is made; one that cannot be is refused before anything is asked.
		if st, err := os.Stat(opts.Dir); err == nil && !st.IsDir() {
			return cmdutil.Usagef("--dir %s is a file; give the directory to make the plugin in", opts.Dir)
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cannot use --dir %s: %w", opts.Dir, err)
		}
	}
	// A target in the way is refused before anything is asked.
	if opts.Name != "" {
		if err := scaffold.CheckTarget(filepath.Join(parent, opts.Name)); err != nil {
			return cmdutil.Usagef("%s", err)
		}
	}
	if err := askMissing(opts, parent); err != nil {
		return err
	}

	files, err := scaffold.Create(scaffold.Options{Name: opts.Name, Template: opts.Template, Description: opts.Description, Parent: parent, Ref: opts.Ref})
	if err != nil {
		return err
	}
	shown := opts.Name
	if opts.Dir != "" {
		shown = filepath.Join(opts.Dir, opts.Name)
	}
	out := opts.IO.Out
	fmt.Fprintf(out, "Created %s/ from the %s template (%d files).\n\n", shown, opts.Template, len(files))
	fmt.Fprintf(out, "Next steps:\n  cd %s\n", shellQuote(shown))
	t, _ := scaffold.LookupTemplate(opts.Template)
	for _, step := range t.NextSteps {
		fmt.Fprintf(out, "  %s\n", step)
	}
	if t.WithoutTool != "" {
		if _, err := opts.LookPath(t.NeedsTool); err != nil {
			fmt.Fprintf(out, "\n%s is not installed (not on PATH); the tests also run without it:\n  %s\n", t.NeedsTool, t.WithoutTool)
		}
	}
	return nil
}

// checkGiven checks the name, template and description that were given.
func checkGiven(opts *pluginNewOptions) error {
	if opts.Name != "" {
		if err := scaffold.ValidateName(opts.Name); err != nil {
			return cmdutil.Usagef("%s", err)
		}
	}
	if opts.Template != "" {
		if _, err := scaffold.LookupTemplate(opts.Template); err != nil {
			return cmdutil.Usagef("%s", err)
		}
	}
	if opts.Description != "" {
		if err := scaffold.ValidateDescription(opts.Description); err != nil {
			return cmdutil.Usagef("%s", err)
		}
	}
	return nil
}

// askMissing fills in the missing values with one form, or says which flags are missing when
// there is no terminal to ask on.
func askMissing(opts *pluginNewOptions, parent string) error {
	var missing []string
	if opts.Name == "" {
		missing = append(missing, "NAME")
	}
	if opts.Template == "" {
		missing = append(missing, "--template")
	}
	if opts.Description == "" {
		missing = append(missing, "--description")
	}
	if len(missing) == 0 {
		return nil
	}
	if !opts.IO.CanPrompt() {
		return cmdutil.Usagef("missing %s (not a terminal, so nothing can be asked); run: oz0 plugin new NAME --template %s --description \"...\"",
			strings.Join(missing, ", "), scaffold.TemplateNames()[0])
	}
	var qs []prompt.Question
	if opts.Name == "" {
		qs = append(qs, prompt.Question{
			Title: "Plugin name", Help: "lowercase letters, digits and hyphens, e.g. acme-triage",
			Value: &opts.Name,
			Validate: func(s string) error {
				if err := scaffold.ValidateName(s); err != nil {
					return err
				}
				return scaffold.CheckTarget(filepath.Join(parent, s))
			},
		})
	}
	if opts.Template == "" {
		var choices []prompt.Option
		for _, t := range scaffold.Templates() {
			choices = append(choices, prompt.Option{Value: t.Name, Description: t.Description})
		}
		qs = append(qs, prompt.Question{Title: "Template", Options: choices, Value: &opts.Template})
	}
	if opts.Description == "" {
		qs = append(qs, prompt.Question{
			Title: "Description", Help: "one line saying what the agent does",
			Value: &opts.Description, Validate: scaffold.ValidateDescription,
		})
	}
	if err := opts.Prompter.Ask(qs); err != nil {
		return err
	}
	// The form validates as the person types, but a Prompter is an interface: check again.
	if err := (scaffold.Options{Name: opts.Name, Template: opts.Template, Description: opts.Description}).Validate(); err != nil {
		return cmdutil.Usagef("%s", err)
	}
	return nil
}

// shellQuote quotes a path for the next-steps line when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '~' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
