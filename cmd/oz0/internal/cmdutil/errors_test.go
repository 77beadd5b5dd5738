package cmdutil

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/prompt"
)

func TestExitCode(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, ExitOK},
		{"findings", &FindingsError{}, ExitFindings},
		{"wrapped findings", fmt.Errorf("wrapped: %w", &FindingsError{Msg: "job failed"}), ExitFindings},
		{"usage", Usagef("unknown flag"), ExitUsage},
		{"prompt cancelled", fmt.Errorf("form: %w", prompt.ErrCancel), ExitUsage},
		{"API 404", &client.APIError{Status: 404, Message: "unknown agent"}, ExitUsage},
		{"API 422", &client.APIError{Status: 422, Message: "bad input"}, ExitUsage},
		{"API 409", &client.APIError{Status: 409, Message: "ended"}, ExitUsage},
		{"API 401", &client.APIError{Status: 401, Message: "refused the token"}, ExitEnvironment},
		{"API 503", &client.APIError{Status: 503, Message: "shutting down"}, ExitEnvironment},
		{"no dev server", errors.New("no dev server at http://127.0.0.1:1"), ExitEnvironment},
		{"interrupted", fmt.Errorf("eval: %w", &InterruptedError{Msg: "interrupted"}), ExitInterrupted},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ExitCode(c.err); got != c.want {
				t.Errorf("ExitCode(%#v) = %d, want %d", c.err, got, c.want)
			}
		})
	}
}

// Message says a failed file operation as what went wrong with which file, once, on one line.
func TestMessage(t *testing.T) {
	_, statErr := os.Stat("/nowhere/at/all")
	_, openErr := os.Open("/nowhere/at/all")
	linkErr := os.Rename("/nowhere/a", "/nowhere/b")
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"open error", fmt.Errorf("cannot read --input-file /nowhere/at/all: %w", openErr), "cannot read --input-file /nowhere/at/all: no such file or directory"},
		{"stat error", fmt.Errorf("--hooks: %w", statErr), "--hooks: /nowhere/at/all: no such file or directory"},
		{"link error", fmt.Errorf("cannot move it: %w; try again", linkErr), "cannot move it: /nowhere/b: no such file or directory; try again"},
		{"two lines and a control", errors.New("a reason\nof two lines\x1b[2J"), `a reason of two lines\x1b[2J`},
		{"usage", Usagef("plain"), "plain"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Message(c.err); got != c.want {
				t.Errorf("Message(%q) = %q, want %q", c.err, got, c.want)
			}
		})
	}
}
