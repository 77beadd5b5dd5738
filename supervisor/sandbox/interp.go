package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/orchestrator-zero/oz0/internal/textclip"
)

// An interpreter is the answer to "which interpreter does this Python program run", asked once
// per program for the whole process: every session of a node asks it as it starts, and a herd of
// sessions each starting a wrapper (pyenv's shim takes 150 ms of CPU) on a loaded machine missed
// any deadline and then ran the wrapper itself, which cannot work in a sandbox.
type interpreter struct {
	done chan struct{} // closed once exe or err is set
	exe  string
	err  error
}

var (
	interpMu     sync.Mutex
	interpreters = map[string]*interpreter{} // program path → its answer, or the question in flight
)

// askTimeout bounds the one question; it is asked once, so a loaded machine does not make it
// miss (200 questions at once did).
const askTimeout = 30 * time.Second

// PythonInterpreter returns the interpreter that the Python program runs: program itself when it
// is one (a binary), else what it reports as sys.executable when run with env in dir. The
// question is asked once per program in the process: callers that come while it is asked wait
// for its answer, and a failed answer is kept as well (AskPythonInterpreter asks again). A
// wrapper such as pyenv's shim needs its installation in the user's home, which a sandbox hides;
// the interpreter it picks needs only its own installation (InstallPaths). The error says what to
// do instead of the wrapper.
func PythonInterpreter(program string, env []string, dir string) (string, error) {
	if isBinary(program) {
		return program, nil
	}
	a, ask := lookupInterpreter(program, false)
	if ask {
		a.answer(program, env, dir)
	}
	<-a.done
	return a.exe, a.err
}

// AskPythonInterpreter asks the question of PythonInterpreter ahead, in the background, so that
// the sessions that need the answer find it: when a node starts and when its plugin reloads. A
// question answered already is not asked again, unless it failed (the wrapper may be mended by
// now). It returns at once.
func AskPythonInterpreter(program string, env []string, dir string) {
	if isBinary(program) {
		return
	}
	if a, ask := lookupInterpreter(program, true); ask {
		go a.answer(program, env, dir)
	}
}

// lookupInterpreter returns program's answer, or a new one to be asked (ask): the caller asks it.
// With retry, a failed answer is replaced.
func lookupInterpreter(program string, retry bool) (a *interpreter, ask bool) {
	interpMu.Lock()
	defer interpMu.Unlock()
	a = interpreters[program]
	if a != nil && retry {
		select {
		case <-a.done:
			if a.err != nil {
				a = nil
			}
		default:
		}
	}
	if a != nil {
		return a, false
	}
	a = &interpreter{done: make(chan struct{})}
	interpreters[program] = a
	return a, true
}

// answer asks program for its sys.executable and keeps the answer.
func (a *interpreter) answer(program string, env []string, dir string) {
	defer close(a.done)
	ctx, cancel := context.WithTimeout(context.Background(), askTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, program, "-c", "import sys; print(sys.executable)")
	cmd.Env, cmd.Dir, cmd.SysProcAttr = env, dir, askAttr()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	exe := strings.TrimSpace(string(out))
	why := ""
	switch {
	case ctx.Err() != nil:
		why = fmt.Sprintf("it did not answer within %s", askTimeout)
	case err != nil:
		why = "it failed: " + err.Error()
		if tail := lastLine(stderr.String()); tail != "" {
			why += ": " + tail
		}
	case !filepath.IsAbs(exe) || !isBinary(exe):
		why = fmt.Sprintf("it answered %q, not the path of an interpreter", textclip.ClipN(exe, 200))
	}
	if why != "" {
		a.err = &WrapperError{Program: program, Why: why}
		return
	}
	a.exe = exe
}

// WrapperError is a Python program that is a script (a wrapper such as pyenv's shim), which
// cannot run in a sandbox, and that did not say which interpreter it runs.
type WrapperError struct {
	Program string
	Why     string
}

func (e *WrapperError) Error() string {
	return fmt.Sprintf("%s is a script (a wrapper such as pyenv's shim) that cannot run in the sandbox, "+
		"and asked which interpreter it runs (python -c 'import sys; print(sys.executable)') %s; "+
		"set the harness command to an interpreter's path, or create the plugin's .venv (uv sync)", e.Program, e.Why)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return textclip.ClipN(strings.TrimSpace(lines[len(lines)-1]), 300)
}

// isBinary reports whether the file at p (links followed) is an executable of the machine's
// format rather than a script.
func isBinary(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 4)
	if _, err := io.ReadFull(f, head); err != nil {
		return false
	}
	return bytes.Equal(head, []byte("\x7fELF")) || bytes.Equal(head, []byte{0xcf, 0xfa, 0xed, 0xfe}) // ELF, Mach-O
}
