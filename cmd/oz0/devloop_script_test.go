package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/creack/pty"
	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	scriptCmds["filemode"] = cmdFileMode
	scriptCmds["onterminal"] = cmdOnTerminal
}

// cmdFileMode: filemode FILE prints FILE's permission bits in octal (0600), the same on every
// system (stat's flags are not).
func cmdFileMode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: filemode FILE")
	}
	st, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	fmt.Fprintf(ts.Stdout(), "%04o\n", st.Mode().Perm())
}

// cmdOnTerminal: onterminal COLUMNS PROG [ARGS...] runs PROG (found on the script's PATH) with a
// terminal COLUMNS wide as its standard streams, in the script's directory and environment, and
// puts what it wrote on stdout (line ends as \n). It fails when PROG fails.
func cmdOnTerminal(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: onterminal COLUMNS PROG [ARGS...]")
	}
	cols, err := strconv.Atoi(args[0])
	ts.Check(err)
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "OZ0_CONTEXT", "LANG"} {
		env = append(env, k+"="+ts.Getenv(k))
	}
	var prog string
	for _, dir := range strings.Split(ts.Getenv("PATH"), string(os.PathListSeparator)) {
		if p := dir + "/" + args[1]; dir != "" {
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				prog = p
				break
			}
		}
	}
	if prog == "" {
		ts.Fatalf("onterminal: %s is not on the script's PATH", args[1])
	}
	cmd := exec.Command(prog, args[2:]...)
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = append(env, "TERM=dumb")
	term, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(cols), Rows: 50})
	ts.Check(err)
	defer term.Close()
	var out bytes.Buffer
	read := make(chan struct{})
	go func() {
		_, _ = io.Copy(&out, term) // ends (EIO) once the program's side is closed
		close(read)
	}()
	err = cmd.Wait()
	select {
	case <-read:
	case <-time.After(10 * time.Second):
		ts.Fatalf("onterminal: the terminal stayed open after %s exited", args[1])
	}
	ts.Stdout().Write([]byte(strings.ReplaceAll(out.String(), "\r\n", "\n")))
	if err != nil {
		ts.Fatalf("onterminal: %s: %v", args[1], err)
	}
}
