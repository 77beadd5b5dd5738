// Package prompt asks a person for missing values with a huh form (charm.land/huh/v2). Commands take
// the Prompter interface so tests can answer without a terminal.
package prompt

import (
	"context"
	"errors"

	"charm.land/bubbles/v2/key"
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
	// Confirm asks a yes/no question; false when the person backs out.
	Confirm(title string) bool
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
	err := newForm(huh.NewGroup(fields...)).Run()
	if errors.Is(err, huh.ErrUserAborted) {
		return ErrCancel
	}
	return err
}

// Confirm asks a yes/no question.
func (Huh) Confirm(title string) bool {
	yes := false
	if err := newForm(huh.NewGroup(huh.NewConfirm().Title(title).Value(&yes))).WithShowHelp(false).Run(); err != nil {
		return false
	}
	return yes
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
	if err := form.RunWithContext(ctx); err != nil || choice == "later" {
		return "", "", false
	}
	return choice, reason, true
}

// newForm is a huh form that Esc backs out of as well as Ctrl-C (huh's default is Ctrl-C only).
func newForm(groups ...*huh.Group) *huh.Form {
	keys := huh.NewDefaultKeyMap()
	keys.Quit = key.NewBinding(key.WithKeys("ctrl+c", "esc"))
	return huh.NewForm(groups...).WithKeyMap(keys)
}
