//go:build unix

// Package fds keeps a harness from inheriting descriptors it was not given. Go opens its own
// descriptors close-on-exec, but not those its process inherited from whatever started it (a
// shell's, a terminal multiplexer's, a CI runner's): a child started with os/exec gets those
// too, whatever its Stdin, Stdout, Stderr and ExtraFiles say. A descriptor on the node's secrets
// file or on a directory outside the sandbox would hand a harness what its tier hides.
//
// It imports only the standard library's basic packages: the sandbox's init uses it.
package fds

import (
	"os"
	"strconv"
	"syscall"
)

// markFrom marks every descriptor from first up that dir (the process's descriptors, as the
// system lists them) names close-on-exec.
func markFrom(dir string, first int) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd >= first {
			syscall.CloseOnExec(fd)
		}
	}
	return nil
}
