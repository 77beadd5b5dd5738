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
	if err := CloseOnExecFrom(3); err != nil {
		t.Fatal(err)
	}
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

// markFrom, the way without close_range (older kernels, macOS), from each list of descriptors
// this system has.
func TestMarkFrom(t *testing.T) {
	for _, dir := range []string{"/proc/self/fd", "/dev/fd"} {
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		secret := openInheritable(t)
		inherits := func() bool { return exec.Command("/bin/sh", "-c", "exec 0<&"+strconv.Itoa(secret)).Run() == nil }
		if !inherits() {
			t.Fatalf("%s: the child did not get descriptor %d even before: the test proves nothing", dir, secret)
		}
		if err := markFrom(dir, 3); err != nil {
			t.Fatal(err)
		}
		if inherits() {
			t.Errorf("%s: the child still got descriptor %d", dir, secret)
		}
		syscall.Close(secret)
	}
	if err := markFrom(t.TempDir()+"/none", 3); err == nil {
		t.Error("no list of descriptors, and no error")
	}
}
