package sandbox

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

var interpreters sync.Map // program path → its interpreter

// PythonInterpreter returns the interpreter that the Python program runs: program itself when it
// is one (a binary), else what it reports as sys.executable when run with env in dir, asked once
// per process. A wrapper such as pyenv's shim needs its installation in the user's home, which
// a sandbox hides; the interpreter it picks needs only its own installation (InstallPaths).
func PythonInterpreter(program string, env []string, dir string) string {
	if isBinary(program) {
		return program
	}
	if v, ok := interpreters.Load(program); ok {
		return v.(string)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, program, "-c", "import sys; print(sys.executable)")
	cmd.Env, cmd.Dir = env, dir
	out, err := cmd.Output()
	exe := strings.TrimSpace(string(out))
	if err != nil || !filepath.IsAbs(exe) || !isBinary(exe) {
		return program // it runs as it is; the sandbox says what it misses
	}
	interpreters.Store(program, exe)
	return exe
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
