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
		PythonInterpreter(program, nil, "/", "")
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

// A Python program of the plugin's own (a script as .venv/bin/python, which a plugin may ship) is
// not asked which interpreter it runs: asking runs it outside any sandbox, as the user. It runs
// as it is, in the session's sandbox. A wrapper outside the plugin is asked, isolated: nothing
// on PYTHONPATH (the plugin's src/, where a sitecustomize.py would run) runs with the question.
func TestInterpreterQuestionRunsNothingOfThePlugin(t *testing.T) {
	python3, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal(err)
	}
	plugin := t.TempDir()
	ran := filepath.Join(t.TempDir(), "ran")
	venvBin := filepath.Join(plugin, ".venv", "bin")
	if err := os.MkdirAll(venvBin, 0o755); err != nil {
		t.Fatal(err)
	}
	shipped := filepath.Join(venvBin, "python")
	script := fmt.Sprintf("#!/bin/sh\necho shipped >> %s\nexec %s \"$@\"\n", ran, python3)
	if err := os.WriteFile(shipped, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := PythonInterpreter(shipped, nil, "/", plugin); err != nil || got != shipped {
		t.Errorf("the plugin's own script: %q, %v; want it as it is", got, err)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the plugin's own .venv/bin/python ran outside the sandbox")
	}

	// A wrapper of the user's (outside the plugin), with the plugin's src/ on PYTHONPATH.
	src := filepath.Join(plugin, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	custom := fmt.Sprintf("open(%q, 'a').write('sitecustomize\\n')\n", ran)
	if err := os.WriteFile(filepath.Join(src, "sitecustomize.py"), []byte(custom), 0o644); err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(t.TempDir(), "python3")
	if err := os.WriteFile(wrapper, []byte(fmt.Sprintf("#!/bin/sh\nexec %s \"$@\"\n", python3)), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := PythonInterpreter(wrapper, []string{"PYTHONPATH=" + src, "PATH=/usr/bin:/bin"}, "/", plugin)
	if err != nil || !filepath.IsAbs(got) || got == wrapper {
		t.Errorf("the user's wrapper: %q, %v; want the interpreter it runs", got, err)
	}
	if data, err := os.ReadFile(ran); err == nil {
		t.Fatalf("the plugin's code ran with the question: %s", data)
	}

	// The plugin's .venv/bin/python links to a script outside it (a system one, as zcat) that runs
	// a program it finds on PATH: the plugin's, first there. It is the plugin's program: not asked.
	// And a wrapper of the user's that runs what PATH has first is asked with the plugin's
	// directories off PATH.
	pathGzip := filepath.Join(venvBin, "gzip")
	if err := os.WriteFile(pathGzip, []byte(fmt.Sprintf("#!/bin/sh\necho gzip-from-path >> %s\necho %s\n", ran, python3)), 0o755); err != nil {
		t.Fatal(err)
	}
	runner := filepath.Join(t.TempDir(), "runs-gzip")
	if err := os.WriteFile(runner, []byte("#!/bin/sh\nexec gzip \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove(shipped)
	if err := os.Symlink(runner, shipped); err != nil {
		t.Fatal(err)
	}
	pathEnv := []string{"PATH=" + venvBin + ":/usr/bin:/bin"}
	if got, err := PythonInterpreter(shipped, pathEnv, "/", plugin); err != nil || got != shipped {
		t.Errorf("the plugin's link to a script elsewhere: %q, %v; want it as it is", got, err)
	}
	userWrapper := filepath.Join(t.TempDir(), "python3")
	if err := os.WriteFile(userWrapper, []byte(fmt.Sprintf("#!/bin/sh\ngzip -h >/dev/null 2>&1\nexec %s \"$@\"\n", python3)), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := PythonInterpreter(userWrapper, pathEnv, "/", plugin); err != nil {
		t.Errorf("the user's wrapper: %v", err)
	}
	if data, err := os.ReadFile(ran); err == nil {
		t.Fatalf("the plugin's program ran with the question: %s", data)
	}
}
