package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Made is a session's process made ahead of its job (a warm session): its directories, its
// sandbox and its harness process are the session's own, as a session started at its job has
// them, but its program is a loader that loads what the harness depends on and then waits to be
// bound to a job. Until Bind it has nothing of any job: no job, agent or key, no trace context,
// and not the plugin's own modules (PYTHONPATH is left out of its environment).
//
// The loader speaks two lines before the protocol's session: it writes one line on stdout when
// it is ready ({"type":"loaded", …}, whatever it says of what it loaded), and reads one line on
// stdin before the session request, {"type":"bind","env":{…},"dir":"…"}: the variables of the
// job's environment (rule 6) that its own lacks or has otherwise, which it sets before it runs
// the harness, and the session's working directory. From then on it is the harness's session, as Start would have run it.
type Made struct {
	s      *Session
	p      *pipes
	loaded chan struct{} // closed once the loader's line has been read (or could not be)
	mu     sync.Mutex
	line   []byte // the loader's line; nil when it ended without one
	taken  bool   // bound or discarded
}

// maxLoadedLine bounds the loader's line.
const maxLoadedLine = 64 << 10

// ErrGone is returned by Bind when the made process is no longer there to take its job (it
// exited, or its loader broke): the caller starts the job's session afresh.
var ErrGone = errors.New("the session made ahead is gone")

// Make starts a session's process ahead of its job: spec is the session as Start takes it, its
// Command the loader's (which runs the harness's once bound), without a Request, a key or a trace
// context (they come with Bind). An error means nothing was started.
func Make(spec Spec) (*Made, error) {
	return makeWith(spec, launchOpts{})
}

// MakeIn is Make with the process started in dir (the plugin's directory, say, for a loader that
// resolves the plugin's packages from where it runs) rather than in the session's working
// directory, which its bind line names: the loader goes there before the harness runs.
func MakeIn(spec Spec, dir string) (*Made, error) {
	return makeWith(spec, launchOpts{dir: dir})
}

// makeWith is Make with what only a fork server has.
func makeWith(spec Spec, opts launchOpts) (*Made, error) {
	if err := nothingOfAJob(spec); err != nil {
		return nil, err
	}
	s, p, err := launchSession(spec, func(_ *Session, env []string) []string { return withoutPluginPath(env) }, opts)
	if err != nil {
		return nil, err
	}
	m := &Made{s: s, p: p, loaded: make(chan struct{})}
	go m.readLoaded()
	return m, nil
}

// nothingOfAJob refuses the spec of a session made ahead that has something of a job: its job,
// keys and trace context come with Bind.
func nothingOfAJob(spec Spec) error {
	if spec.Request.Job != "" || spec.Env.AnthropicAPIKey != "" || spec.Env.OpenAIAPIKey != "" || spec.Env.Traceparent != "" {
		return errors.New("supervisor: a session made ahead has nothing of a job until Bind")
	}
	return nil
}

// withoutPluginPath is a session's environment as its process made ahead has it: the plugin's own
// modules are not importable before its job (PYTHONPATH comes with Bind), so that no
// sitecustomize and no module of the plugin's shadowing a dependency's runs ahead.
func withoutPluginPath(env []string) []string {
	return slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PYTHONPATH=") })
}

// readLoaded reads the loader's line from stdout, a byte at a time so that nothing of the
// session's protocol after it is taken from the pipe.
func (m *Made) readLoaded() {
	defer close(m.loaded)
	var line []byte
	b := make([]byte, 1)
	for len(line) < maxLoadedLine {
		n, err := m.p.outR.Read(b)
		if n == 1 {
			if b[0] == '\n' {
				m.mu.Lock()
				m.line = line
				m.mu.Unlock()
				return
			}
			line = append(line, b[0])
		}
		if err != nil {
			return
		}
	}
}

// Loaded is closed once the made process has said it is ready, or can no longer say it.
func (m *Made) Loaded() <-chan struct{} { return m.loaded }

// Exited is closed when the made process has exited.
func (m *Made) Exited() <-chan struct{} { return m.s.exited }

// Ready says whether the process has said it is ready and is still there.
func (m *Made) Ready() bool {
	select {
	case <-m.s.exited:
		return false
	case <-m.loaded:
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.line != nil
	default:
		return false
	}
}

// Report is the loader's line, once it has come; nil before.
func (m *Made) Report() json.RawMessage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return bytes.Clone(m.line)
}

// MadeAt is when the process was started.
func (m *Made) MadeAt() time.Time { return m.s.start }

// Program is the program the process runs, resolved.
func (m *Made) Program() string { return m.s.program }

// Bind makes the made process the session of spec's job: it waits for the loader to be ready
// (or ctx), sends it the job's environment and the session request, and supervises the session
// from then on, as Start does. spec must be the session the process was made for, with its job's
// request, key and trace context. ErrGone: the process cannot take the job (nothing was sent);
// start the job's session afresh.
func (m *Made) Bind(ctx context.Context, spec Spec) (*Session, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	m.mu.Lock()
	if m.taken {
		m.mu.Unlock()
		return nil, errors.New("supervisor: a session made ahead is bound once")
	}
	m.taken = true
	m.mu.Unlock()
	s := m.s
	select {
	case <-m.loaded:
	case <-s.exited:
	case <-ctx.Done():
		m.discard()
		return nil, fmt.Errorf("not starting the session: %w", ctx.Err())
	}
	if !m.Ready() {
		m.discard()
		return nil, ErrGone
	}
	// The job's own: its request, limits, decider and sink; the process, its directories and
	// sandbox stay what they were made with.
	spec.Command, spec.PluginDir, spec.TempDir, spec.Sandbox = s.spec.Command, s.spec.PluginDir, s.spec.TempDir, s.spec.Sandbox
	s.spec, s.req = spec, spec.Request
	s.grace = cmpOr(spec.Limits.Grace, DefaultGrace)
	_, env, err := resolveCommand(spec.Command, s.pluginDir, s.stateDir, spec.Env, &s.req)
	if err != nil {
		m.discard()
		return nil, err
	}
	bind, err := encodeLine(bindLine{Type: "bind", Env: envDelta(s.env, env), Dir: s.workdir})
	if err != nil {
		m.discard()
		return nil, err
	}
	first, err := s.request()
	if err != nil {
		m.discard()
		return nil, err
	}
	s.madeAt, s.start = s.start, time.Now()
	s.begin(ctx, m.p, bind, first)
	return s, nil
}

// Discard ends a made process that will take no job.
func (m *Made) Discard() {
	m.mu.Lock()
	if m.taken {
		m.mu.Unlock()
		return
	}
	m.taken = true
	m.mu.Unlock()
	m.discard()
}

func (m *Made) discard() {
	m.s.abandon(m.p)
	<-m.loaded // the pipe is closed: the reader has returned
}

// bindLine is the line a made process reads before its session request.
type bindLine struct {
	Type string            `json:"type"`
	Env  map[string]string `json:"env"`
	Dir  string            `json:"dir"` // the session's working directory
}

// MessageType makes bindLine a message encodeLine writes.
func (bindLine) MessageType() string { return "bind" }

// envDelta is what of the job's environment env the made process's own (made) lacks or has
// with another value.
func envDelta(made, env []string) map[string]string {
	have := make(map[string]string, len(made))
	for _, kv := range made {
		k, v, _ := strings.Cut(kv, "=")
		have[k] = v
	}
	delta := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if old, ok := have[k]; !ok || old != v {
			delta[k] = v
		}
	}
	return delta
}

// MadeAt is when the session's process was made ahead of its job; zero for a session started at
// its job.
func (s *Session) MadeAt() time.Time { return s.madeAt }
