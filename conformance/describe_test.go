package conformance

import (
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/harnesskit"
)

// A harness that prints its error on stderr before it sends the error line: the line is said
// once, not again as the end of stderr; a stderr that says more is still shown.
func TestDescribeSaysTheErrorLineOnce(t *testing.T) {
	msg := "ModelError: the model API answered 400: no rule matches; the request differs:\n  system:\n    - a\n    + b"
	s := &session{end: harnesskit.End{Status: harnesskit.Failed, Message: msg, StderrTail: "Traceback (most recent call last):\n  ...\n" + msg + "\n"}}
	if got := s.describe(); strings.Contains(got, "stderr ends") || strings.Count(got, "the request differs") != 1 {
		t.Errorf("the error line twice: %s", got)
	}
	// The end shown (300 bytes) is within a long error line.
	long := msg + strings.Repeat(" and more", 50)
	s.end.Message, s.end.StderrTail = long, long[len(long)-310:]
	if got := s.describe(); strings.Contains(got, "stderr ends") {
		t.Errorf("the error line's end again: %s", got)
	}
	s.end.StderrTail = "warning: the cache is cold\n"
	if got := s.describe(); !strings.HasSuffix(got, "; stderr ends: warning: the cache is cold") {
		t.Errorf("stderr that says more: %s", got)
	}
}
