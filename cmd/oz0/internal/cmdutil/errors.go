// Package cmdutil holds what every command shares: the factory of dependencies, the typed
// errors, and the one place where errors become exit codes.
package cmdutil

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"strings"

	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/prompt"
	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/internal/termtext"
	"github.com/orchestrator-zero/oz0/internal/textclip"
)

// Exit codes, as the README states them.
const (
	ExitOK          = 0
	ExitFindings    = 1 // the command ran and found problems: lint errors, a failed check, a failed job
	ExitUsage       = 2 // how the command was called is wrong, or the dev server refused what it asked
	ExitEnvironment = 3 // internal or environment failure: a busy port, an unreadable file, no dev server
	// ExitInterrupted is the shell's code of a command that SIGINT (Ctrl-C) ended: 128 + 2.
	ExitInterrupted = 130
)

// InterruptedError says the command was interrupted (Ctrl-C) before it finished its work. Msg is
// the one line said on stderr: what was done, what was not.
type InterruptedError struct{ Msg string }

func (e *InterruptedError) Error() string { return e.Msg }

// UsageError is a mistake in how the command was called: a bad flag or argument, a bad
// combination, a form the person backed out of.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef builds a UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// FindingsError says the command ran and found problems. Msg is the one line said on stderr;
// empty when the command has already shown everything (lint's findings, a failed check). Detail
// are lines said after it, as they are (a failed job's last frames, and where its whole
// traceback is).
type FindingsError struct {
	Msg    string
	Detail []string
}

func (e *FindingsError) Error() string { return e.Msg }

// ExitCode maps an error to the process exit code; it is the only place that does. An error of
// no known kind is an environment failure: the command could not do its work.
func ExitCode(err error) int {
	var usage *UsageError
	var findings *FindingsError
	var report *diag.ReportError
	var apiErr *client.APIError
	var interrupted *InterruptedError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &interrupted):
		return ExitInterrupted
	case errors.As(err, &findings), errors.As(err, &report):
		return ExitFindings // a report: input the user gave has problems
	case errors.As(err, &usage), errors.Is(err, prompt.ErrCancel):
		return ExitUsage // as gh does for a cancelled prompt: the command was not carried out
	case errors.As(err, &apiErr) && refused(apiErr.Status):
		return ExitUsage
	default:
		return ExitEnvironment
	}
}

// refused reports whether the dev server answered that what the user asked cannot be done (an
// unknown agent, job or approval, input the agent does not take, a job that has ended), rather
// than that the caller may not ask (a wrong token: the environment) or that it failed.
func refused(status int) bool {
	switch status {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity, http.StatusRequestHeaderFieldsTooLarge:
		return true
	}
	return false
}

// Message is the one line oz0 says for err: its text on one line, control characters escaped (a
// reason can quote a harness's output), and the operating system's wording of a failed file
// operation cut to what went wrong: "cannot read --input-file: open t.txt: is a directory" says
// "cannot read --input-file: t.txt: is a directory", and the op is gone where the path is said
// already.
func Message(err error) string {
	msg := err.Error()
	for e := err; e != nil; e = errors.Unwrap(e) {
		var full, path, cause string
		switch pe := e.(type) {
		case *fs.PathError:
			full, path, cause = pe.Error(), pe.Path, pe.Err.Error()
		case *os.LinkError:
			full, path, cause = pe.Error(), pe.New, pe.Err.Error()
		default:
			continue
		}
		i := strings.Index(msg, full)
		if i < 0 {
			continue
		}
		plain := path + ": " + cause
		if strings.Contains(msg[:i]+msg[i+len(full):], path) {
			plain = cause
		}
		msg = msg[:i] + plain + msg[i+len(full):]
	}
	return termtext.OneLine(textclip.Squash(msg, 0))
}
