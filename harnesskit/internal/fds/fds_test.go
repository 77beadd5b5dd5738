//go:build unix

package fds

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
)

// A descriptor opened without close-on-exec, as one inherited from a shell is, reaches a child
// until CloseOnExecFrom has marked it.
func TestCloseOnExecFrom(t *testing.T) {
	secret := openInheritable(t)
	defer syscall.Close(secret)
	inherits := func() bool {
		// The shell redirects from the descriptor: it fails where the child did not get it.
		return exec.Command("/bin/sh", "-c", "exec 0<&"+strconv.Itoa(secret)).Run() == nil
	}
	if !inherits() {
		t.Fatalf("the child did not get descriptor %d even before: the test proves nothing", secret)
	}
	CloseOnExecFrom(3)
	if inherits() {
		t.Errorf("the child still got descriptor %d", secret)
	}
}

// openInheritable opens a file without O_CLOEXEC, as a descriptor a shell hands on is.
func openInheritable(t *testing.T) int {
	t.Helper()
	fd, err := syscall.Open(os.Args[0], syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

func TestMarkFrom(t *testing.T) {
	secret := openInheritable(t)
	defer syscall.Close(secret)
	dir := "/dev/fd"
	if _, err := os.Stat("/proc/self/fd"); err == nil {
		dir = "/proc/self/fd"
	}
	markFrom(dir, 3)
	if exec.Command("/bin/sh", "-c", "exec 0<&"+strconv.Itoa(secret)).Run() == nil {
		t.Errorf("the child still got descriptor %d", secret)
	}
}
