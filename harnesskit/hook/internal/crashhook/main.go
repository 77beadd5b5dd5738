// Command crashhook is a plugin hook (harnesskit/hook) with a bug: it dies in the middle of its
// first call, its last words on stderr. The fault matrix's tests name it in a hooks file.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/orchestrator-zero/oz0/harnesskit/hook"
)

type crashing struct{}

func (crashing) Decide(_ context.Context, req hook.Request) (hook.Decision, error) {
	fmt.Fprintf(os.Stderr, "crashhook: the policy tripped over %s\n", req.Name)
	os.Exit(3)
	return hook.Decision{}, nil
}

func main() { hook.Serve(crashing{}) }
