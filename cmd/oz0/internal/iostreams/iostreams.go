// Package iostreams carries the standard streams through the program so that no code deep down
// writes to os.Stdout, and tests can swap every stream for a buffer.
package iostreams

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/term"
)

// IOStreams is the process's standard streams plus what is known about them.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stdinTTY  bool
	stdoutTTY bool
	width     int // of a terminal on stdout; 0 when not known
}

// System returns the process's real streams.
func System() *IOStreams {
	return &IOStreams{
		In:        os.Stdin,
		Out:       os.Stdout,
		ErrOut:    os.Stderr,
		stdinTTY:  isTerminal(os.Stdin),
		stdoutTTY: isTerminal(os.Stdout),
		width:     terminalWidth(os.Stdout),
	}
}

// Test returns streams backed by buffers: stdin, stdout, stderr.
func Test() (*IOStreams, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	in, out, errOut := &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

// IsStdinTTY reports whether standard input is a terminal.
func (s *IOStreams) IsStdinTTY() bool { return s.stdinTTY }

// IsStdoutTTY reports whether standard output is a terminal.
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// CanPrompt reports whether a person can answer a form: both ends are terminals.
func (s *IOStreams) CanPrompt() bool { return s.stdinTTY && s.stdoutTTY }

// TerminalWidth is the width of the terminal on stdout, which tables are fitted to; 80 when it is
// not a terminal or does not say.
func (s *IOStreams) TerminalWidth() int {
	if s.width > 0 {
		return s.width
	}
	return 80
}

// SetTerminalWidth overrides the terminal's width, for tests.
func (s *IOStreams) SetTerminalWidth(n int) { s.width = n }

// SetTTY overrides the terminal detection, for tests.
func (s *IOStreams) SetTTY(stdin, stdout bool) { s.stdinTTY, s.stdoutTTY = stdin, stdout }

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

func terminalWidth(f *os.File) int {
	if w, _, err := term.GetSize(int(f.Fd())); err == nil {
		return w
	}
	return 0
}
