package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The interpreter question's process dies with the process that asked: a node killed while a
// Python wrapper answers slowly leaves no process behind. The test runs itself as the asker, with
// a "python3" that writes its pid and hangs, and kills it while it waits for the answer.
func TestInterpreterQuestionDiesWithItsAsker(t *testing.T) {
	if program := os.Getenv("OZ0_TEST_ASK_PROGRAM"); program != "" {
		PythonInterpreter(program, nil, "/")
		return
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	program := filepath.Join(dir, "python3")
	script := fmt.Sprintf("#!/bin/sh\necho $$ > %s.tmp && mv %s.tmp %s\nexec %s 600\n", pidFile, pidFile, pidFile, sleep)
	if err := os.WriteFile(program, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	asker := exec.Command(os.Args[0], "-test.run=^TestInterpreterQuestionDiesWithItsAsker$")
	asker.Env = append(os.Environ(), "OZ0_TEST_ASK_PROGRAM="+program)
	if err := asker.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(30 * time.Second); pid == 0; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		} else if time.Now().After(deadline) {
			asker.Process.Kill()
			asker.Wait()
			t.Fatal("the question's process did not start")
		}
	}
	asker.Process.Kill()
	asker.Wait()
	for deadline := time.Now().Add(10 * time.Second); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the question's process %d outlived the process that asked by 10 s", pid)
		}
	}
}

// alive reports whether pid is a live process (a zombie is not: where nothing reaps orphans, a
// killed one stays a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
