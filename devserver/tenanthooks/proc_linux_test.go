package tenanthooks

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// A hook plugin runs in a session of its own: no controlling terminal, so it cannot write on the
// terminal oz0 dev was started from nor push input into it (TIOCSTI).
func TestHookPluginHasASessionOfItsOwn(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	ownProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { killTree(cmd.Process, false); cmd.Wait() }()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	// pid (comm) state ppid pgrp session tty_nr
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	pid := strconv.Itoa(cmd.Process.Pid)
	if f[2] != pid || f[3] != pid || f[4] != "0" {
		t.Errorf("the hook plugin's process group %s, session %s, tty_nr %s; want %s, %s, 0", f[2], f[3], f[4], pid, pid)
	}
}
