// Package prompt asks a person for missing values with a huh form (charm.land/huh/v2). Commands take
// the Prompter interface so tests can answer without a terminal.
package prompt

import (
	"context"
	"errors"
	"os"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/huh/v2"
)

// ErrCancel is returned when a person backs out of a form; nothing was done.
var ErrCancel = errors.New("cancelled; nothing was written")

// Option is one choice of a select.
type Option struct {
	Value       string
	Description string
}

// Question is one field of a form. With Options it is a select, otherwise a text input.
type Question struct {
	Title    string
	Help     string
	Options  []Option
	Validate func(string) error
	Value    *string
}

// Prompter asks a person. Commands take it so tests can answer without a terminal.
type Prompter interface {
	// Ask asks all questions in one form. It returns ErrCancel when the person backs out
	// (Ctrl-C, Esc).
	Ask(questions []Question) error
	// Confirm asks a yes/no question; false when the person backs out, and when ctx ends first.
	Confirm(ctx context.Context, title string) bool
	// Approval asks a person to answer a tool call waiting for approval: "once", "job", "always"
	// or "deny" (with a reason). ok is false when they back out or choose to leave it for later,
	// and when ctx ends first.
	Approval(ctx context.Context, title string) (choice, reason string, ok bool)
}

// Huh is the terminal Prompter.
type Huh struct{}

// Ask shows one form with a field per question.
func (Huh) Ask(questions []Question) error {
	fields := make([]huh.Field, 0, len(questions))
	for _, q := range questions {
		if len(q.Options) > 0 {
			opts := make([]huh.Option[string], len(q.Options))
			for i, o := range q.Options {
				opts[i] = huh.NewOption(o.Value+" — "+o.Description, o.Value)
			}
			fields = append(fields, huh.NewSelect[string]().Title(q.Title).Description(q.Help).Options(opts...).Value(q.Value))
			continue
		}
		in := huh.NewInput().Title(q.Title).Description(q.Help).Value(q.Value)
		if q.Validate != nil {
			in = in.Validate(q.Validate)
		}
		fields = append(fields, in)
	}
	form := newForm(huh.NewGroup(fields...))
	err := form.Run()
	if errors.Is(err, huh.ErrUserAborted) || (err == nil && form.State != huh.StateCompleted) {
		return ErrCancel
	}
	return err
}

// Confirm asks a yes/no question.
func (Huh) Confirm(ctx context.Context, title string) bool {
	yes := false
	form := newForm(huh.NewGroup(huh.NewConfirm().Title(title).Value(&yes))).WithShowHelp(false)
	return form.RunWithContext(ctx) == nil && form.State == huh.StateCompleted && yes
}

// Approval asks which answer to give a waiting tool call.
func (Huh) Approval(ctx context.Context, title string) (choice, reason string, ok bool) {
	choice = "once"
	form := newForm(
		huh.NewGroup(huh.NewSelect[string]().Title("Approve "+title+"?").Options(
			huh.NewOption("approve this call", "once"),
			huh.NewOption("approve it for the rest of this job", "job"),
			huh.NewOption("approve it always (a rule, until revoked)", "always"),
			huh.NewOption("deny it", "deny"),
			huh.NewOption("leave it in the inbox", "later"),
		).Value(&choice)),
		huh.NewGroup(huh.NewInput().Title("Why? (the model reads it)").Value(&reason).Validate(func(s string) error {
			if s == "" {
				return errors.New("a denial needs a reason")
			}
			return nil
		})).WithHideFunc(func() bool { return choice != "deny" }),
	)
	// Only a form the person submitted answers: one that ended any other way (a signal, the
	// terminal gone, ctx) approves nothing, whatever its select showed.
	if err := form.RunWithContext(ctx); err != nil || form.State != huh.StateCompleted || choice == "later" {
		return "", "", false
	}
	return choice, reason, true
}

// newForm is a huh form that Esc and Ctrl-D back out of as well as Ctrl-C (huh's default is
// Ctrl-C only). It leaves signals to the command: bubbletea's own handler turned SIGTERM into a
// quit that huh took as the form's end with its values as they stood (an approval's first option
// approved), and it blocked on sending a signal to a program that had already stopped, so a form
// closed by its context never returned.
func newForm(groups ...*huh.Group) *huh.Form {
	keys := huh.NewDefaultKeyMap()
	keys.Quit = key.NewBinding(key.WithKeys("ctrl+c", "esc", "ctrl+d"))
	return huh.NewForm(groups...).WithKeyMap(keys).WithProgramOptions(tea.WithOutput(os.Stderr), tea.WithoutSignalHandler()) // huh's default output, kept
}
