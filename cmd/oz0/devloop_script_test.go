package main

import (
	"fmt"
	"os"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() { scriptCmds["filemode"] = cmdFileMode }

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
