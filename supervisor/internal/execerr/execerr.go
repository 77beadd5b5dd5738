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
	"path/filepath"
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
	case errors.Is(err, syscall.EACCES):
		msg = denied(path)
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

// nobodyUID is the user a node run as root runs sandboxed sessions as.
const nobodyUID = 65534

func denied(path string) string { return Denied(path, os.Getuid(), os.Getgid()) }

// Denied says which part of path user uid (group gid, no other groups: a session's) may not
// pass: a directory it may not enter, or the file it may not run (or, a script, read). It reads
// the permission bits, so the node can say it from outside a sandbox, where owners are as the
// host has them.
func Denied(path string, uid, gid int) string {
	who, mend := "this user", "chmod +x"
	if uid == nobodyUID {
		// The usual cause: files made by root with a umask that keeps others out.
		who, mend = "nobody (the user sessions of an oz0 dev run as root run as)", "chmod a+rx"
	}
	var dirs []string
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if fi, err := os.Stat(dirs[i]); err == nil && !allowed(fi, uid, gid, permExec) {
			return fmt.Sprintf("%s cannot be run: %s may not enter the directory %s; %s it, or run oz0 dev as the user who owns it", path, who, dirs[i], mend)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Sprintf("%s: permission denied", path)
	}
	if !allowed(fi, uid, gid, permExec) {
		return fmt.Sprintf("%s is not executable by %s: %s %s", path, who, mend, path)
	}
	if _, ok := shebang(head(path)); ok && !allowed(fi, uid, gid, permRead) {
		return fmt.Sprintf("%s is a script %s may run but not read: %s %s", path, who, mend, path)
	}
	return fmt.Sprintf("%s: permission denied", path)
}

// The permission bits of one class of users.
const (
	permExec = 0o1
	permRead = 0o4
)

// allowed reports whether the mode bits of fi let uid (in group gid) do want: the owner's bits
// for the owner, the group's for the group, the others' for the rest; root passes every
// directory and runs a file any class may run.
func allowed(fi os.FileInfo, uid, gid int, want os.FileMode) bool {
	perm := fi.Mode().Perm()
	if uid == 0 {
		return want != permExec || fi.IsDir() || perm&0o111 != 0
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
		return true // no owner to go by: say nothing wrong
	case int(st.Uid) == uid:
		return (perm>>6)&want == want
	case int(st.Gid) == gid:
		return (perm>>3)&want == want
	}
	return perm&want == want
}
