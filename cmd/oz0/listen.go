package main

import (
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/internal/atomicfile"
)

// loopbackAddr checks an --addr flag of a command that listens (oz0 dev, oz0 fake-model serve):
// HOST:PORT on the loopback interface, for what listens answers anyone who can reach it. An
// empty host is 127.0.0.1; port 0 picks a free port.
func loopbackAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", cmdutil.Usagef("--addr %s is not HOST:PORT; use e.g. --addr 127.0.0.1:7311, or port 0 for a free one", cmdutil.Quote(addr))
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return "", cmdutil.Usagef("--addr %s has a bad port; use e.g. --addr 127.0.0.1:7311, or port 0 for a free one", cmdutil.Quote(addr))
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if !apiv1.IsLoopbackHost(host) {
		return "", cmdutil.Usagef("--addr %s is not a loopback address: oz0 listens only on 127.0.0.1, ::1 or localhost, e.g. --addr 127.0.0.1:7311", cmdutil.Quote(addr))
	}
	return net.JoinHostPort(host, port), nil
}

// readyFile is a --ready-file: a script waits for it to appear, then reads what to connect to.
type readyFile string

// clear removes a ready file an earlier run left, so that it is not taken for this run's.
func (r readyFile) clear() error {
	if r == "" {
		return nil
	}
	if err := os.Remove(string(r)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cannot remove the old --ready-file: %w", err)
	}
	return nil
}

// write puts line in the file at once (a reader never sees a partial file), mode 0600: it holds
// the token.
func (r readyFile) write(line string) error {
	if r == "" {
		return nil
	}
	if err := atomicfile.WriteFile(string(r), []byte(line+"\n"), 0o600); err != nil {
		return fmt.Errorf("cannot write --ready-file: %w", err)
	}
	return nil
}

// remove removes the file when the server stops: what it said is no longer true.
func (r readyFile) remove() {
	if r != "" {
		os.Remove(string(r))
	}
}
