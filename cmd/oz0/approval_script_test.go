package main

import (
	"context"
	"strconv"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/orchestrator-zero/oz0/api/client"
)

func init() { scriptCmds["waitapproval"] = cmdWaitApproval }

// cmdWaitApproval waits for a pending approval on the dev server in $OZ0_CONTEXT and puts its id
// in the variable NAME: waitapproval NAME [SECONDS].
func cmdWaitApproval(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waitapproval NAME [SECONDS]")
	}
	wait := 20 * time.Second
	if len(args) == 2 {
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		wait = time.Duration(n) * time.Second
	}
	c, err := client.FromEnv(ts.Getenv)
	ts.Check(err)
	deadline := time.Now().Add(wait)
	for {
		list, err := c.Approvals(context.Background(), false)
		ts.Check(err)
		if len(list) > 0 {
			ts.Setenv(args[0], list[0].ID)
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("no pending approval within %s", wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
