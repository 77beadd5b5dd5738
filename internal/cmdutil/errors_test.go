package cmdutil

import (
	"errors"
	"fmt"
	"testing"

	"github.com/orchestrator-zero/oz0/internal/client"
	"github.com/orchestrator-zero/oz0/internal/prompt"
)

func TestExitCode(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{&FindingsError{}, ExitFindings},
		{fmt.Errorf("wrapped: %w", &FindingsError{Msg: "job failed"}), ExitFindings},
		{Usagef("unknown flag"), ExitUsage},
		{fmt.Errorf("form: %w", prompt.ErrCancel), ExitUsage},
		{&client.APIError{Status: 404, Message: "unknown agent"}, ExitUsage},
		{&client.APIError{Status: 422, Message: "bad input"}, ExitUsage},
		{&client.APIError{Status: 409, Message: "ended"}, ExitUsage},
		{&client.APIError{Status: 401, Message: "refused the token"}, ExitEnvironment},
		{&client.APIError{Status: 503, Message: "shutting down"}, ExitEnvironment},
		{errors.New("no dev server at http://127.0.0.1:1"), ExitEnvironment},
	} {
		if got := ExitCode(c.err); got != c.want {
			t.Errorf("ExitCode(%#v) = %d, want %d", c.err, got, c.want)
		}
	}
}
