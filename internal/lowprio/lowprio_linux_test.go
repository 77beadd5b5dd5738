package lowprio

import (
	"bytes"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// niceOf runs `cat /proc/self/stat`, started by start, and returns its niceness as the kernel
// reports it (the 19th field).
func niceOf(t *testing.T, start func(*exec.Cmd) error) int {
	t.Helper()
	cmd := exec.Command("cat", "/proc/self/stat")
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := start(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	stat := out.String()
	fields := strings.Fields(stat[strings.LastIndexByte(stat, ')')+2:]) // after "pid (comm) "
	n, err := strconv.Atoi(fields[16])
	if err != nil {
		t.Fatalf("the niceness of %q: %v", stat, err)
	}
	return n
}

func TestStartAtLowPriority(t *testing.T) {
	before := niceOf(t, (*exec.Cmd).Start)
	if before >= Niceness {
		t.Skipf("the test runs at niceness %d already", before) // under nice 10 or more, nothing can show
	}
	for range 3 {
		if got := niceOf(t, Start); got != Niceness {
			t.Fatalf("a process started by Start has niceness %d; want %d", got, Niceness)
		}
	}
	// The spawner's thread is not handed to other goroutines: what they start is as before.
	for range 20 {
		if after := niceOf(t, (*exec.Cmd).Start); after != before {
			t.Fatalf("a process started as usual has niceness %d; want %d as before", after, before)
		}
	}
}

// A process that asks for a parent-death signal is sent it when the thread that started it ends
// (not the process): Start's thread never ends, so what it started lives on.
func TestStartedProcessOutlivesLaterStarts(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		<-exited
	}()
	for range 5 {
		niceOf(t, Start) // each a process started, and waited for, from the same thread
	}
	runtime.GC()
	select {
	case err := <-exited:
		t.Fatalf("the process started by Start ended (%v) while this test process lives", err)
	default:
	}
}
