package testbin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// smallDiskEnv marks the test process SmallDisk started in a namespace of its own.
const smallDiskEnv = "OZ0_TEST_SMALL_DISK"

// SmallDisk gives a test a real disk of sizeMiB MiB that fills up: it runs the test again in a
// user and mount namespace of its own (`unshare --user --map-root-user --mount`, no root needed)
// and reports its result, and there mounts a tmpfs on a temporary directory and returns it. The
// caller returns when ok is false: the test has run, in there. It skips the test, saying why,
// where such a namespace cannot be made.
func SmallDisk(t *testing.T, sizeMiB int) (dir string, ok bool) {
	t.Helper()
	if os.Getenv(smallDiskEnv) == "" {
		if out, err := exec.Command("unshare", "--user", "--map-root-user", "--mount", "true").CombinedOutput(); err != nil {
			t.Skipf("a small disk needs a user and mount namespace, which cannot be made here (unshare: %v %s)", err, out)
		}
		run := "^" + strings.ReplaceAll(t.Name(), "/", "$/^") + "$"
		cmd := exec.Command("unshare", "--user", "--map-root-user", "--mount", os.Args[0], "-test.run", run, "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), smallDiskEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
			t.Fatalf("in a namespace of its own, on a small disk: %v\n%s", err, out)
		}
		t.Logf("in a namespace of its own, on a small disk:\n%s", out)
		return "", false
	}
	dir = t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%dm,mode=755", sizeMiB)); err != nil {
		t.Fatalf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir, true
}

// Fill writes the file dir/name until the disk has no room left.
func Fill(t *testing.T, dir, name string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}
