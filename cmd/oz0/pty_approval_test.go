//go:build linux || darwin

package main

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
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/internal/testbin"
)

// promptEnd is one way an approval prompt on a terminal can end without a person's answer.
type promptEnd struct {
	name   string
	signal syscall.Signal // sent to the command's process; 0: keys instead
	keys   string         // typed into the terminal
	hangup bool           // the terminal closes
}

var promptEnds = []promptEnd{
	{name: "SIGTERM", signal: syscall.SIGTERM},
	{name: "SIGINT", signal: syscall.SIGINT},
	{name: "SIGHUP", signal: syscall.SIGHUP},
	{name: "SIGQUIT", signal: syscall.SIGQUIT},
	{name: "ctrl-c", keys: "\x03"},
	{name: "esc", keys: "\x1b"},
	{name: "ctrl-d", keys: "\x04"},
	{name: "terminal-closed", hangup: true},
}

// TestPtyApprovalPromptEndsWithoutApproving opens the approval prompt of `oz0 run` and of
// `oz0 job watch` on a terminal, then ends it every way but an answer: a signal from another
// program, the keys that back out of a form, the terminal closing. Only a person's explicit
// answer approves: the call is never approved (the tool never runs, the inbox never records an
// approval), and the command does not stay behind.
func TestPtyApprovalPromptEndsWithoutApproving(t *testing.T) {
	bin, err := exec.LookPath("oz0")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	// The harness asks for notify_team, which needs a person's approval, and says what it was told.
	testbin.WriteFiles(t, filepath.Join(work, "plug"), map[string]string{
		"oz0-plugin.yaml": "apiVersion: oz0/v1\nname: asks\nversion: 0.1.0\nruntime: binary\nagents: [agents/]\n" +
			"harnesses:\n  - name: asks\n    command: [./asks.sh]\n    formats: [anthropic-messages]\n    permissions: true\n    tools: [notify_team]\n",
		"agents/asks.yaml": "name: asks\nruntime: harness:asks\ninstructions: prompts/p.md\nharness:\n  tools: [notify_team]\n  requires_approval: [notify_team]\n",
		"prompts/p.md":     "Ask.\n",
		"asks.sh": `#!/bin/sh
read -r request
printf '%s\n' '{"type":"permission_request","id":"p1","tool":"notify_team","arguments":{"team":"billing"}}'
read -r decision
case "$decision" in
*'"allow"'*) printf '%s\n' '{"type":"tool_result","id":"p1","tool":"notify_team","result":"TOLD"}' '{"type":"result","output":"allowed"}' ;;
*) printf '%s\n' '{"type":"result","output":"not allowed"}' ;;
esac
`,
	})
	if err := os.Chmod(filepath.Join(work, "plug", "asks.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	dev := startProcess(t, filepath.Join(work, "ctx"), filepath.Join(work, "dev.log"), bin,
		"dev", "--sandbox", "none", "--plugin", filepath.Join(work, "plug"), "--ephemeral", "--ready-file", filepath.Join(work, "ctx"))
	devCtx, err := apiv1.ParseContext(dev.ready)
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(devCtx)
	ctx := context.Background()

	for _, command := range []string{"run", "watch"} {
		for _, end := range promptEnds {
			t.Run(command+"/"+end.name, func(t *testing.T) {
				var args []string
				var job string
				if command == "run" {
					args = []string{"run", "asks", "go"}
				} else {
					j, err := c.CreateJob(ctx, apiv1.JobRequest{Agent: "asks", Input: "go"})
					if err != nil {
						t.Fatal(err)
					}
					job = j.ID
					args = []string{"job", "watch", job}
				}
				term := startOnPty(t, work, append(os.Environ(), apiv1.ContextEnv+"="+dev.ready), bin, args...)
				term.waitFor(t, "leave it in the inbox") // the prompt is open
				if job == "" {
					job = term.jobID(t)
				}
				switch {
				case end.signal != 0:
					_ = term.cmd.Process.Signal(end.signal)
				case end.hangup:
					term.hangup()
				default:
					term.type_(end.keys)
				}
				// A signal, or a key that backs out of the form, leaves the call in the inbox and
				// says so; the terminal closing ends the command. What still follows the job (a
				// key backed out, or oz0 run asking whether to cancel after SIGINT) is then
				// stopped as a program stops it, and must exit.
				if !end.hangup && end.signal != syscall.SIGHUP && end.signal != syscall.SIGQUIT {
					term.expect(t, "oz0: left apr_") // and whatever it did, see what became of the call
				}
				if end.signal != syscall.SIGTERM && !end.hangup {
					_ = term.cmd.Process.Signal(syscall.SIGTERM)
				}
				if !term.exitsWithin(securityLiveness) {
					t.Fatalf("oz0 %s did not exit after SIGTERM; the terminal shows:\n%q", strings.Join(args, " "), term.output())
				}
				out := term.output()
				assertNotApproved(t, c, job, out)
				_, _ = c.Cancel(ctx, job) // a job still waiting goes; one already ended says so
			})
		}
	}
}

// assertNotApproved checks that nothing approved job's call: no approval of the inbox was
// answered allow, and the tool never ran.
func assertNotApproved(t *testing.T, c *client.Client, job, terminal string) {
	t.Helper()
	ctx := context.Background()
	list, err := c.Approvals(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range list {
		if a.Job == job && a.Status == apiv1.ApprovalApproved {
			t.Errorf("the call of job %s was approved (%+v); the terminal shows:\n%q", job, a, terminal)
		}
	}
	var trace bytes.Buffer
	if err := c.Trace(ctx, job, &trace); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(trace.Bytes(), []byte("TOLD")) {
		t.Errorf("the tool of job %s ran; the terminal shows:\n%q", job, terminal)
	}
}

// ptyCommand is a command run with a pty as its terminal, which the test types into.
type ptyCommand struct {
	cmd    *exec.Cmd
	term   *os.File
	mu     sync.Mutex
	out    bytes.Buffer
	exited chan struct{}
	read   chan struct{} // closed once the terminal has given all the command wrote (or was closed)
}

func startOnPty(t *testing.T, dir string, env []string, name string, args ...string) *ptyCommand {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(env, "TERM=xterm-256color")
	term, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 160})
	if err != nil {
		t.Fatal(err)
	}
	term = pollable(t, term)
	p := &ptyCommand{cmd: cmd, term: term, exited: make(chan struct{}), read: make(chan struct{})}
	go func() {
		defer close(p.read)
		buf := make([]byte, 4096)
		for {
			n, err := term.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
		term.Close()
	})
	return p
}

// pollable is term as a file Go's poller reads: pty.StartWithSize took its descriptor (Fd), which
// leaves the file blocking, and Close then waits for the read in progress, which waits for the
// command's next output: the terminal never closed (hangup), and a command at a prompt never saw
// it go.
func pollable(t *testing.T, term *os.File) *os.File {
	t.Helper()
	fd, err := syscall.Dup(int(term.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	term.Close()
	syscall.CloseOnExec(fd)
	if err := syscall.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	return os.NewFile(uintptr(fd), "ptmx")
}

func (p *ptyCommand) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *ptyCommand) waitFor(t *testing.T, text string) {
	t.Helper()
	if !p.expect(t, text) {
		t.FailNow()
	}
}

// expect waits for the terminal to show text, and fails the test (going on) when it does not.
func (p *ptyCommand) expect(t *testing.T, text string) bool {
	t.Helper()
	deadline := time.Now().Add(securityLiveness)
	for !strings.Contains(p.output(), text) {
		select {
		case <-p.exited:
			// What it wrote last may not have been read yet: the reader ends once it has all.
			select {
			case <-p.read:
			case <-time.After(time.Until(deadline)):
			}
			if !strings.Contains(p.output(), text) {
				t.Errorf("the command exited before it showed %q; the terminal shows:\n%q", text, p.output())
				return false
			}
		default:
		}
		if time.Now().After(deadline) {
			t.Errorf("the terminal never showed %q; it shows:\n%q", text, p.output())
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// jobID is the job oz0 run named in its first line.
func (p *ptyCommand) jobID(t *testing.T) string {
	t.Helper()
	out := p.output()
	i := strings.Index(out, "oz0: job job_")
	if i < 0 {
		t.Fatalf("no job named on the terminal:\n%q", out)
	}
	id, _, _ := strings.Cut(out[i+len("oz0: job "):], ":")
	return id
}

func (p *ptyCommand) type_(keys string) {
	_, _ = io.WriteString(p.term, keys)
}

// hangup closes the terminal as a closed window does: the command gets SIGHUP and its terminal
// reads end.
func (p *ptyCommand) hangup() {
	p.term.Close()
}

func (p *ptyCommand) exitsWithin(d time.Duration) bool {
	select {
	case <-p.exited:
		return true
	case <-time.After(d):
		return false
	}
}

func (p *ptyCommand) String() string { return fmt.Sprintf("%v", p.cmd.Args) }
