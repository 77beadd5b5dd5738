package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/orchestrator-zero/oz0/internal/lowprio"
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
// is one (a binary) or lies in pluginDir (as named, or with its links followed), else what it
// reports as sys.executable
// when run with env in dir. A program of the plugin's own (a script as .venv/bin/python) is
// never run outside the session's sandbox, where the plugin is shown and it runs as it is: the
// question runs outside any sandbox, as the user. The
// question is asked once per program in the process: callers that come while it is asked wait
// for its answer, and a failed answer is kept as well (AskPythonInterpreter asks again). A
// wrapper such as pyenv's shim needs its installation in the user's home, which a sandbox hides;
// the interpreter it picks needs only its own installation (InstallPaths). The error says what to
// do instead of the wrapper.
func PythonInterpreter(program string, env []string, dir, pluginDir string) (string, error) {
	if !asked(program, pluginDir) {
		return program, nil
	}
	a, ask := lookupInterpreter(program, false)
	if ask {
		a.answer(program, questionEnv(env, pluginDir), dir, (*exec.Cmd).Start)
	}
	<-a.done
	return a.exe, a.err
}

// AskPythonInterpreter asks the question of PythonInterpreter ahead, in the background, so that
// the sessions that need the answer find it: when a node starts and when its plugin reloads. A
// question answered already is not asked again, unless it failed (the wrapper may be mended by
// now). It returns at once.
func AskPythonInterpreter(program string, env []string, dir, pluginDir string) {
	if !asked(program, pluginDir) {
		return
	}
	if a, ask := lookupInterpreter(program, true); ask {
		// At a low priority: asked ahead, it must not slow what runs meanwhile (oz0 dev's first
		// answer), and a session that comes to wait for it leaves it the CPU.
		go a.answer(program, questionEnv(env, pluginDir), dir, lowprio.Start)
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

// answer asks program, started by start, for its sys.executable and keeps the answer.
func (a *interpreter) answer(program string, env []string, dir string, start func(*exec.Cmd) error) {
	defer close(a.done)
	ctx, cancel := context.WithTimeout(context.Background(), askTimeout)
	defer cancel()
	// Isolated (-I: no PYTHON* variables, no user site, not the working directory on sys.path)
	// and without site (-S: no .pth file, no sitecustomize): the question runs outside any
	// sandbox, so nothing of the plugin's (its src/ on PYTHONPATH) may run with it.
	cmd := exec.CommandContext(ctx, program, "-I", "-S", "-c", "import sys; print(sys.executable)")
	cmd.Env, cmd.Dir, cmd.SysProcAttr = env, dir, askAttr()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := start(cmd)
	if err == nil {
		err = cmd.Wait()
	}
	exe := strings.TrimSpace(stdout.String())
	why := ""
	switch {
	case ctx.Err() != nil:
		why = fmt.Sprintf("it did not answer within %s", askTimeout)
	case err != nil:
		why = "it failed: " + err.Error()
		if tail := textclip.LastLine(stderr.String(), 300); tail != "" {
			why += ": " + tail
		}
	case !filepath.IsAbs(exe) || !IsBinary(exe):
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
		"and asked which interpreter it runs (python -I -S -c 'import sys; print(sys.executable)') %s; "+
		"set the harness command to an interpreter's path, or create the plugin's .venv (uv sync)", e.Program, e.Why)
}

// asked reports whether program is asked which interpreter it runs: not an interpreter's binary,
// and not the plugin's own (which runs only in its sessions' sandbox, as it is).
func asked(program, pluginDir string) bool {
	return !IsBinary(program) && !inDir(program, pluginDir)
}

// inDir reports whether p lies in dir, as named or with links followed (either way, dir with its
// links followed or not): a plugin's .venv/bin/python is the plugin's even when it links to a
// script elsewhere (/usr/bin/zcat, which runs the gzip it finds first on PATH: the plugin's).
func inDir(p, dir string) bool {
	if dir == "" {
		return false
	}
	paths := []string{filepath.Clean(p)}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		paths = append(paths, real)
	}
	dirs := uniq(filepath.Clean(dir), realPath(dir))
	return slices.ContainsFunc(paths, func(q string) bool { return under(q, dirs) })
}

// questionEnv is env for the interpreter question, which runs outside any sandbox: without the
// plugin's directories on PATH (a wrapper runs what it finds there) and without the PYTHON*
// variables (its src/ on PYTHONPATH).
func questionEnv(env []string, pluginDir string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		switch {
		case strings.HasPrefix(kv, "PYTHON"):
			continue
		case strings.HasPrefix(kv, "PATH=") && pluginDir != "":
			var keep []string
			for _, d := range filepath.SplitList(strings.TrimPrefix(kv, "PATH=")) {
				if d != "" && !inDir(d, pluginDir) {
					keep = append(keep, d)
				}
			}
			kv = "PATH=" + strings.Join(keep, string(filepath.ListSeparator))
		}
		out = append(out, kv)
	}
	return out
}

// IsBinary reports whether the file at p (links followed) is an executable of the machine's
// format rather than a script.
func IsBinary(p string) bool {
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
