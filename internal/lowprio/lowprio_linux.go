package lowprio

import (
	"os/exec"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// On Linux a niceness is a thread's, and a process is given the niceness of the thread that
// started it. The processes are started from one thread kept at Niceness for the life of the
// process: it is never given back to other goroutines (they would run at its priority), and
// never ended, since a thread's end sends every process it started its parent-death signal
// (the sandbox's inits and the harnesses of tier none ask for SIGKILL), even if the process that
// started them lives on.
type request struct {
	cmd  *exec.Cmd
	done chan error
}

var spawner = sync.OnceValue(func() chan request {
	requests := make(chan request)
	go func() {
		runtime.LockOSThread() // for good
		// Refused (a seccomp filter, say), the thread starts processes at the caller's niceness.
		_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), Niceness)
		for r := range requests {
			r.done <- r.cmd.Start()
		}
	}()
	return requests
})

func start(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	spawner() <- request{cmd, done}
	return <-done
}
