// Package execerr says why a harness's program could not be executed, in words its author can
// act on. The kernel's "no such file or directory" for a file that is there means that what runs
// it is missing: the interpreter its #! line names (often with a Windows line end stuck to it),
// or the loader of a program built for another system; its "exec format error" means a script
// without a #! line (a shell runs those as sh scripts, the kernel does not) or a program for
// another machine.
package execerr

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// Error is an exec that failed, with the explanation as its text.
type Error struct {
	Msg string
	Err error // the exec's error
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// Explain turns the error of executing path into one that says what is wrong with path; where
// says where the harness runs: "on this machine", "in the sandbox".
func Explain(path, where string, err error) error {
	errno := err
	var pe *fs.PathError
	if errors.As(err, &pe) {
		errno = pe.Err // "fork/exec PATH: …" says nothing a harness's author needs
	}
	msg := fmt.Sprintf("%s: %v", path, errno)
	switch {
	case errors.Is(err, syscall.ENOENT):
		if _, serr := os.Stat(path); serr == nil {
			msg = missingRunner(path, where)
		}
	case errors.Is(err, syscall.ENOEXEC):
		msg = notRunnable(path)
	}
	return &Error{Msg: msg, Err: err}
}

// head is the start of the file at path (nil when it cannot be read).
func head(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, 256)
	n, _ := io.ReadFull(f, b)
	return b[:n]
}

// shebang is the rest of the file's #! line, and whether it has one.
func shebang(b []byte) (string, bool) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	rest, ok := bytes.CutPrefix(line, []byte("#!"))
	return string(rest), ok
}

// missingRunner explains an ENOENT for a file that exists.
func missingRunner(path, where string) string {
	b := head(path)
	if rest, ok := shebang(b); ok {
		fields := strings.Fields(rest)
		switch {
		case len(fields) == 0:
			return fmt.Sprintf("%s has a #! line that names no interpreter", path)
		case strings.HasSuffix(rest, "\r"):
			return fmt.Sprintf("%s has Windows line ends: its #! line names the interpreter %q, with the carriage return; save it with Unix line ends", path, strings.Trim(rest, " \t"))
		}
		return fmt.Sprintf("%s names the interpreter %s on its #! line, which is not %s; install it, or correct the #! line", path, fields[0], where)
	}
	if bytes.HasPrefix(b, []byte("\x7fELF")) {
		return fmt.Sprintf("%s is a program whose loader is not %s: it was built for another system (or dynamically linked against a library that is missing)", path, where)
	}
	return fmt.Sprintf("%s cannot be run %s: the system reports no such file, though the file is there", path, where)
}

// notRunnable explains an ENOEXEC.
func notRunnable(path string) string {
	b := head(path)
	if rest, ok := shebang(b); ok && len(strings.Fields(rest)) == 0 {
		return fmt.Sprintf("%s has a #! line that names no interpreter", path)
	}
	if bytes.HasPrefix(b, []byte("\x7fELF")) || bytes.HasPrefix(b, []byte("#!")) {
		return fmt.Sprintf("%s is not a program this machine can run (exec format error): built for another processor or system?", path)
	}
	return fmt.Sprintf("%s has no #! line naming its interpreter: start it with one, such as #!/bin/sh", path)
}
