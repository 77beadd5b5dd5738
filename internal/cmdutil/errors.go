// Package cmdutil holds what every command shares: the factory of dependencies, the typed
// errors, and the one place where errors become exit codes.
package cmdutil

import (
	"errors"
	"fmt"

	"github.com/orchestrator-zero/oz0/internal/prompt"
	"github.com/orchestrator-zero/oz0/lint/diag"
)

// Exit codes, as DESIGN.md fixes them.
const (
	ExitOK       = 0
	ExitFindings = 1 // the command ran and found problems: lint findings, a failed job
	ExitUsage    = 2
	ExitInternal = 3 // internal or environment failure
)

// UsageError is a mistake in how the command was called.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef builds a UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// FindingsError says the command ran and found problems it has already reported; main prints
// nothing more unless Msg is set.
type FindingsError struct{ Msg string }

func (e *FindingsError) Error() string { return e.Msg }

// SilentError ends the command with a code after it has printed everything itself.
type SilentError struct{ Code int }

func (e *SilentError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// ExitCode maps an error to the process exit code; it is the only place that does.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var usage *UsageError
	var findings *FindingsError
	var silent *SilentError
	var report *diag.ReportError
	switch {
	case errors.As(err, &silent):
		return silent.Code
	case errors.As(err, &usage):
		return ExitUsage
	case errors.As(err, &findings), errors.As(err, &report):
		return ExitFindings
	case errors.Is(err, prompt.ErrCancel):
		return ExitUsage // as gh does: the command was not carried out
	default:
		return ExitInternal
	}
}
