//go:build linux

package supervisor

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// deadPID is the pid of a process that has exited.
func deadPID(t *testing.T) int {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// sleeper starts a process that sleeps, in dir, in a new process group or a new session.
func sleeper(t *testing.T, dir string, attr *syscall.SysProcAttr) *exec.Cmd {
	cmd := exec.Command("sleep", "1000")
	cmd.Dir, cmd.SysProcAttr = dir, attr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

func exited(cmd *exec.Cmd) bool {
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}

func TestReapStale(t *testing.T) {
	tmp := t.TempDir()
	// A session of a node that is gone: a process in its group, and one that left the group
	// but still works in the session's directory.
	dead := filepath.Join(tmp, fmt.Sprintf("%s%d-%d-1", sessionPrefix, deadPID(t), 12345))
	work := filepath.Join(dead, "work")
	os.MkdirAll(work, 0o700)
	member := sleeper(t, "/", &syscall.SysProcAttr{Setpgid: true})
	escaped := sleeper(t, work, &syscall.SysProcAttr{Setsid: true})
	start, _ := processStart(member.Process.Pid)
	rec, _ := json.Marshal(sessionRecord{PGID: member.Process.Pid, Start: start, Boot: bootID(), Tier: "none"})
	os.WriteFile(filepath.Join(dead, recordFile), rec, 0o600)

	// A dead node's session whose group id was reused since: its record's leader started later
	// than the group's process, which is not killed.
	reused := filepath.Join(tmp, fmt.Sprintf("%s%d-%d-2", sessionPrefix, deadPID(t), 12345))
	os.MkdirAll(reused, 0o700)
	other := sleeper(t, "/", &syscall.SysProcAttr{Setpgid: true})
	otherStart, _ := processStart(other.Process.Pid)
	rec, _ = json.Marshal(sessionRecord{PGID: other.Process.Pid, Start: otherStart + 1, Boot: bootID()})
	os.WriteFile(filepath.Join(reused, recordFile), rec, 0o600)

	// A session of this process, which runs.
	live, err := os.MkdirTemp(tmp, sessionDirPattern())
	if err != nil {
		t.Fatal(err)
	}

	left, err := ReapStale(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if left.Sessions != 2 || left.Killed != 2 {
		t.Errorf("reaped %+v, want 2 sessions and 2 processes", left)
	}
	for _, d := range []string{dead, reused} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s is still there", d)
		}
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the running node's session directory was removed: %v", err)
	}
	if !exited(member) || !exited(escaped) {
		t.Errorf("the dead session's processes are alive")
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("a process of a reused group id was killed: %v", err)
	}
}
