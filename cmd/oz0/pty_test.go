//go:build linux || darwin

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// The queries a terminal library writes to learn the background colour (OSC 11) and to find the
// end of the reply (a cursor position report). bubbletea v1 wrote both from its package init(), in
// every command, and then waited up to 5 s for a terminal that never answers (a CI runner's pty,
// a pre-commit hook, a coding agent's shell).
var terminalQueries = []string{"\x1b]11;?", "\x1b[6n"}

// TestPtyNoTerminalQueries runs commands that take no input on a terminal that never answers and
// checks that they write neither query and exit.
//
// The query check is the assertion that matters: a program that never asks never waits for an
// answer. The exit deadline only catches some other wait on the terminal. It is 4 s, generous for
// a loaded 2-core CI (the commands take milliseconds) yet shorter than the 5 s a stalled program
// waits, so it cannot pass by the stall ending; a timing of how fast the command is is not asserted.
func TestPtyNoTerminalQueries(t *testing.T) {
	// The test binary stands in for oz0 (testscript.Main in TestMain put it on PATH as oz0).
	oz0, err := exec.LookPath("oz0")
	if err != nil {
		t.Fatalf("oz0 is not on PATH: %v", err)
	}
	dir := t.TempDir()
	scaffold := exec.Command(oz0, "plugin", "new", "acme-triage", "--template", "byo-agent", "--description", "Sorts support tickets")
	scaffold.Dir = dir
	if out, err := scaffold.CombinedOutput(); err != nil {
		t.Fatalf("oz0 plugin new: %v\n%s", err, out)
	}

	for _, c := range []struct {
		args []string
		want string // what the command prints: it ran to the end
	}{
		{[]string{"version"}, "oz0 version "},
		{[]string{"plugin", "lint"}, "no problems"},
		// A table fitted to the terminal (go-gh's tableprinter) and JSON indented for it.
		{[]string{"plugin", "templates"}, "TEMPLATE"},
		{[]string{"version", "--json"}, `"version": `},
	} {
		command := "oz0 " + strings.Join(c.args, " ")
		t.Run(strings.Join(c.args, "_"), func(t *testing.T) {
			out, err := runOnSilentPty(t, filepath.Join(dir, "acme-triage"), oz0, c.args...)
			for _, q := range terminalQueries {
				if strings.Contains(out, q) {
					t.Errorf("%s wrote the terminal query %q:\n%q", command, q, out)
				}
			}
			if err != nil {
				t.Errorf("%s: %v; it wrote:\n%q", command, err, out)
			} else if !strings.Contains(out, c.want) {
				t.Errorf("%s did not print %q; it wrote:\n%q", command, c.want, out)
			}
		})
	}
}

// runOnSilentPty runs a program with a pty as its controlling terminal and standard streams, never
// writes to it, and returns everything the program wrote and how it ended (killed if it had not
// exited by the deadline).
func runOnSilentPty(t *testing.T, dir, name string, args ...string) (string, error) {
	t.Helper()
	const deadline = 4 * time.Second
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	// A terminal of the kind a person has: libraries skip their queries on TERM=dumb or none,
	// and some on NO_COLOR.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TERM=") && !strings.HasPrefix(kv, "NO_COLOR=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "TERM=xterm-256color")
	term, err := pty.Start(cmd)
	if err != nil {
		t.Fatalf("starting %s on a pty: %v", name, err)
	}
	defer term.Close()

	// Reading ends with an error (EIO on Linux) once the program's side of the pty is closed.
	var out bytes.Buffer
	read := make(chan struct{})
	go func() {
		_, _ = io.Copy(&out, term)
		close(read)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	select {
	case err = <-exited:
	case <-time.After(deadline):
		_ = cmd.Process.Kill()
		<-exited
		err = fmt.Errorf("had not exited after %s, as if waiting for the terminal to answer; killed", deadline)
	}
	select {
	case <-read:
	case <-time.After(deadline):
		t.Fatalf("the pty of %s %s stayed open after it exited", name, strings.Join(args, " "))
	}
	return out.String(), err
}
