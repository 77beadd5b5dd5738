package tenanthooks

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-plugin/runner"
)

// procRunner is go-plugin's runner for a plugin process, ours so that the process gets its own
// process group (killed whole), no stdin, and an exit status to quote.
type procRunner struct {
	cmd    *exec.Cmd
	stdout io.ReadCloser
	stderr io.ReadCloser
	logw   *tailWriter
	pid    int
	exited chan struct{}

	mu      sync.Mutex
	process *os.Process
	state   *os.ProcessState
}

var _ runner.Runner = (*procRunner)(nil)

func newProcRunner(cmd *exec.Cmd, logw *tailWriter) (*procRunner, error) {
	cmd.Stdin = nil
	ownProcessGroup(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	return &procRunner{cmd: cmd, stdout: stdout, stderr: stderr, logw: logw, exited: make(chan struct{})}, nil
}

func (r *procRunner) Start(context.Context) error {
	if err := r.cmd.Start(); err != nil {
		return err
	}
	r.mu.Lock()
	r.process, r.pid = r.cmd.Process, r.cmd.Process.Pid
	r.mu.Unlock()
	return nil
}

// Wait is called once by go-plugin, after stdout and stderr are drained.
func (r *procRunner) Wait(context.Context) error {
	err := r.cmd.Wait()
	r.mu.Lock()
	r.state = r.cmd.ProcessState
	r.mu.Unlock()
	close(r.exited)
	return err
}

func (r *procRunner) Kill(context.Context) error {
	r.kill()
	return nil
}

// kill kills the plugin and, where there are process groups, its group (its children too).
func (r *procRunner) kill() {
	r.mu.Lock()
	p := r.process
	r.mu.Unlock()
	if p != nil {
		killTree(p, r.hasExited())
	}
}

func (r *procRunner) Stdout() io.ReadCloser { return r.stdout }
func (r *procRunner) Stderr() io.ReadCloser { return r.stderr }
func (r *procRunner) Name() string          { return r.cmd.Path }

func (r *procRunner) ID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strconv.Itoa(r.pid)
}

func (r *procRunner) Diagnose(context.Context) string {
	return "a plugin hook is a program that calls hook.Serve (github.com/orchestrator-zero/oz0/harnesskit/hook) or speaks go-plugin's gRPC protocol with the oz0 hook handshake; see docs/hooks.md"
}

func (r *procRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (r *procRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (r *procRunner) hasExited() bool {
	select {
	case <-r.exited:
		return true
	default:
		return false
	}
}

// waitExit waits up to d for the process to exit.
func (r *procRunner) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.exited:
		return true
	case <-t.C:
		return false
	}
}

// exitedByItself reports whether the process exited (within d) with an exit status, rather than
// being killed by a signal (ours, after a failed handshake, or another).
func (r *procRunner) exitedByItself(d time.Duration) bool {
	if !r.waitExit(d) {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state != nil && r.state.Exited()
}

// exitText says how the process ended, and its last words on stderr.
func (r *procRunner) exitText() string {
	r.mu.Lock()
	st := r.state
	r.mu.Unlock()
	text := "it exited"
	if st != nil {
		text = st.String() // exit status 2, signal: killed
	}
	if last := r.logw.last(); last != "" {
		text += "; its last words: " + clipText(last)
	}
	return text
}

// tailWriter takes a plugin's stderr (and the output go-plugin forwards), keeps its last lines
// and hands each line to the Set's log.
type tailWriter struct {
	hook string
	log  func(hook, line string)

	mu      sync.Mutex
	partial []byte
	lines   []string
}

const tailLines = 32

func newTailWriter(hook string, log func(hook, line string)) *tailWriter {
	return &tailWriter{hook: hook, log: log}
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	var done []string
	w.partial = append(w.partial, p...)
	for {
		i := strings.IndexByte(string(w.partial), '\n')
		if i < 0 {
			break
		}
		line := strings.TrimRight(string(w.partial[:i]), "\r")
		w.partial = w.partial[i+1:]
		if strings.TrimSpace(line) == "" {
			continue
		}
		w.lines = append(w.lines, line)
		if len(w.lines) > tailLines {
			w.lines = w.lines[len(w.lines)-tailLines:]
		}
		done = append(done, line)
	}
	if len(w.partial) > 64<<10 { // a line without end: keep its start
		w.partial = w.partial[:64<<10]
	}
	w.mu.Unlock()
	if w.log != nil {
		for _, line := range done {
			w.log(w.hook, line)
		}
	}
	return len(p), nil
}

// last is the line that best says why a plugin failed: a Go panic or fatal error, else the last
// line (the message of a go-plugin JSON log line).
func (w *tailWriter) last() string {
	w.mu.Lock()
	lines := append([]string(nil), w.lines...)
	if p := strings.TrimSpace(string(w.partial)); p != "" {
		lines = append(lines, p)
	}
	w.mu.Unlock()
	for _, l := range lines {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			return l
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if strings.HasPrefix(l, "{") {
			var entry struct {
				Level   string `json:"@level"`
				Message string `json:"@message"`
			}
			if json.Unmarshal([]byte(l), &entry) == nil && entry.Message != "" {
				// go-plugin's own chatter is not a reason.
				if entry.Level == "error" || entry.Level == "warn" {
					return entry.Message
				}
				continue
			}
		}
		return l
	}
	return ""
}
