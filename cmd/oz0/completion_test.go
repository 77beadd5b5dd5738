package main

import (
	"bytes"
	"strings"
	"testing"
)

// The bash script needs the bash-completion package: cobra's own help says so, and so must ours,
// with how to install it.
func TestCompletionHelpSaysBashNeedsBashCompletion(t *testing.T) {
	f, _ := newTestFactory(t, false, nil)
	if code := execute(f, []string{"completion", "--help"}); code != 0 {
		t.Fatalf("exit %d: %s", code, f.IOStreams.ErrOut)
	}
	help := f.IOStreams.Out.(*bytes.Buffer).String()
	for _, want := range []string{"needs the bash-completion package", "apt-get install bash-completion", "brew install bash-completion@2"} {
		if !strings.Contains(help, want) {
			t.Errorf("oz0 completion --help does not say %q:\n%s", want, help)
		}
	}
}
