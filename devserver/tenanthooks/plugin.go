package tenanthooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/orchestrator-zero/oz0/harnesskit/hook"
	"github.com/orchestrator-zero/oz0/internal/textclip"
)

// pluginHook runs one plugin hook's process: started on the first call the hook sees, reused by
// later calls (concurrently), replaced when it dies or stops answering, killed on Close.
type pluginHook struct {
	name    string
	path    string
	args    []string
	env     []string // NAME=value, from hooks.yaml
	config  json.RawMessage
	timeout time.Duration
	set     *Set

	// launch starts an instance (fills in hook, and client, proc or stop); tests replace it to
	// run a plugin in-process.
	launch func(ph *pluginHook, in *instance) error

	mu     sync.Mutex
	cur    *instance              // the instance new calls go to; nil: start one
	all    map[*instance]struct{} // every instance not yet stopped
	closed bool
	stops  sync.WaitGroup // instances being stopped
}

// instance is one run of a plugin.
type instance struct {
	ready chan struct{} // closed when the start is over
	err   error         // the start failed (set before ready is closed)
	hook  hook.Hook     // the plugin's client, when started

	client *plugin.Client // nil for an in-process instance
	proc   *procRunner    // the process, when there is one
	stop   func()         // ends an in-process instance

	procMu   sync.Mutex
	starting *procRunner // the process, as soon as it exists (to kill a start in progress)

	// under pluginHook.mu:
	inflight int
	retired  bool // takes no new calls; stopped when inflight reaches 0
	stopped  bool
}

func (in *instance) started() bool {
	select {
	case <-in.ready:
		return true
	default:
		return false
	}
}

// dead reports whether a started instance can take no more calls.
func (in *instance) dead() bool {
	if !in.started() {
		return false
	}
	if in.err != nil {
		return true
	}
	if in.proc != nil && in.proc.hasExited() {
		return true
	}
	return in.client != nil && in.client.Exited()
}

// acquire returns a started instance with a call counted on it, starting one if need be.
func (ph *pluginHook) acquire(ctx context.Context) (*instance, error) {
	ph.mu.Lock()
	if ph.closed {
		ph.mu.Unlock()
		return nil, errClosed
	}
	in := ph.cur
	if in != nil && in.dead() {
		ph.retireLocked(in)
		in = nil
	}
	if in == nil {
		in = &instance{ready: make(chan struct{})}
		ph.cur = in
		if ph.all == nil {
			ph.all = map[*instance]struct{}{}
		}
		ph.all[in] = struct{}{}
		go ph.start(in)
	}
	in.inflight++
	ph.mu.Unlock()
	select {
	case <-in.ready:
	case <-ctx.Done():
		ph.release(in, false)
		return nil, fmt.Errorf("the call was abandoned while the plugin was starting (%w)", context.Cause(ctx))
	}
	if in.err != nil {
		ph.release(in, true)
		return nil, in.err
	}
	return in, nil
}

func (ph *pluginHook) start(in *instance) {
	launch := ph.launch
	if launch == nil {
		launch = startProcess
	}
	if err := launch(ph, in); err != nil {
		in.hook, in.client, in.proc, in.stop = nil, nil, nil, nil
		in.err = err
	}
	close(in.ready)
}

// release ends a call on in; retire takes it out of service (it is stopped once idle).
func (ph *pluginHook) release(in *instance, retire bool) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	in.inflight--
	if retire {
		ph.retireLocked(in)
	}
	ph.stopIfIdleLocked(in)
}

func (ph *pluginHook) retireLocked(in *instance) {
	in.retired = true
	if ph.cur == in {
		ph.cur = nil
	}
	ph.stopIfIdleLocked(in)
}

func (ph *pluginHook) stopIfIdleLocked(in *instance) {
	if !in.retired || in.inflight > 0 || in.stopped || !in.started() {
		return
	}
	in.stopped = true
	delete(ph.all, in)
	ph.stops.Add(1)
	go func() {
		defer ph.stops.Done()
		in.shutdown()
	}()
}

func (ph *pluginHook) isClosed() bool {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	return ph.closed
}

// close stops every instance (calls on them fail) and waits until they have exited.
func (ph *pluginHook) close() {
	ph.mu.Lock()
	ph.closed = true
	ph.cur = nil
	all := make([]*instance, 0, len(ph.all))
	for in := range ph.all {
		all = append(all, in)
		in.retired, in.stopped = true, true
	}
	ph.all = nil
	ph.mu.Unlock()
	var wg sync.WaitGroup
	for _, in := range all {
		wg.Go(func() {
			if !in.started() {
				in.killStarting() // a start in progress ends at once
			}
			<-in.ready
			in.shutdown()
		})
	}
	wg.Wait()
	ph.stops.Wait()
}

func (in *instance) setStarting(p *procRunner) {
	in.procMu.Lock()
	in.starting = p
	in.procMu.Unlock()
}

func (in *instance) killStarting() {
	in.procMu.Lock()
	p := in.starting
	in.procMu.Unlock()
	if p != nil {
		p.kill()
	}
}

// shutdown stops a started instance: go-plugin's graceful stop, SIGKILL to its process group
// after stopGrace, and waits for the process to exit.
func (in *instance) shutdown() {
	if in.stop != nil {
		in.stop()
	}
	if in.client == nil {
		if in.proc != nil {
			in.proc.kill()
		}
		return
	}
	done := make(chan struct{})
	go func() {
		in.client.Kill()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(stopGrace):
		in.proc.kill()
		<-done
	}
	if in.proc != nil {
		in.proc.kill() // anything left in its process group
	}
}

// decide asks the plugin about a call and returns its step, and the new arguments of a change.
func (ph *pluginHook) decide(ctx context.Context, c Call, name string, args map[string]any, raw json.RawMessage) (Step, map[string]any) {
	t0 := time.Now()
	step := Step{Hook: ph.name, Plugin: true}
	fail := func(msg string) (Step, map[string]any) {
		step.Decision, step.Error, step.Elapsed = Deny, msg, time.Since(t0)
		return step, nil
	}
	in, err := ph.acquire(ctx)
	if err != nil {
		return fail(err.Error())
	}
	req := hook.Request{Hook: ph.name, Job: c.Job, Agent: c.Agent, Harness: c.Harness, Tool: c.Tool,
		Name: name, Arguments: raw, Config: ph.config}
	own := time.Now().Add(ph.timeout)
	cctx, cancel := context.WithDeadlineCause(ctx, own, errTimeout)
	d, err := in.hook.Decide(cctx, req)
	cancel()
	if err != nil {
		callerFirst := false
		if dl, ok := ctx.Deadline(); ok && dl.Before(own) {
			callerFirst = true
		}
		msg, retire := ph.explain(cctx, ctx, callerFirst, in, err)
		ph.release(in, retire)
		return fail(msg)
	}
	ph.release(in, false)
	step = fromHook(ph.name, d)
	step.Elapsed = time.Since(t0)
	if d.Verdict != hook.VerdictChange {
		return step, nil
	}
	v, err := decodeJSON(d.Arguments)
	obj, ok := v.(map[string]any)
	if err != nil || !ok {
		return fail("the plugin answered garbage: the changed arguments are not a JSON object")
	}
	step.Arguments = mustMarshal(obj)
	return step, obj
}

var errTimeout = errors.New("hook timeout")

func orDeadline(err error) error {
	if err == nil {
		return context.DeadlineExceeded
	}
	return err
}

// timedOut reports whether a call failed for its timeout: the timer fired, or the plugin's side
// (whose deadline came over the wire, a little earlier) gave up first.
func timedOut(cctx context.Context, err error) bool {
	if errors.Is(context.Cause(cctx), errTimeout) || status.Code(err) == codes.DeadlineExceeded {
		return true
	}
	dl, ok := cctx.Deadline()
	return ok && time.Until(dl) < 20*time.Millisecond
}

// explain words a failed call for the trail and the reason, and says whether the instance must be
// retired (it died, or stopped answering).
func (ph *pluginHook) explain(cctx, ctx context.Context, callerFirst bool, in *instance, err error) (msg string, retire bool) {
	var garbage *hook.GarbageError
	if ph.isClosed() {
		return "the hooks were closed during the call (reloaded or shut down)", true
	}
	switch {
	case errors.As(err, &garbage):
		return fmt.Sprintf("the plugin answered garbage (%s): %s", garbage.Err, clipText(garbage.Answer)), false
	case ctx.Err() == nil && !callerFirst && timedOut(cctx, err):
		return fmt.Sprintf("the plugin did not answer within %s (timeout); it is restarted on the next call", ph.timeout), true
	case ctx.Err() != nil || (callerFirst && timedOut(cctx, err)):
		return fmt.Sprintf("the call was abandoned while the plugin was deciding (%v)", orDeadline(context.Cause(ctx))), false
	}
	st, _ := status.FromError(err)
	switch st.Code() {
	case codes.Unavailable, codes.Canceled, codes.Internal, codes.Unimplemented, codes.ResourceExhausted:
		if st.Code() == codes.Internal && strings.HasPrefix(st.Message(), "panic: ") {
			return "the plugin panicked: " + clipText(st.Message()), false
		}
		if st.Code() == codes.Unimplemented {
			return "the plugin does not serve " + hook.ServiceName + ": " + clipText(st.Message()), false
		}
		// A broken connection is most likely a process that died: wait a moment for its exit
		// status. A status the plugin sent comes from a live process.
		wait := exitWait
		if st.Code() != codes.Unavailable && st.Code() != codes.Canceled {
			wait = 0
		}
		if in.proc != nil && (in.proc.hasExited() || in.proc.waitExit(wait)) {
			return "the plugin exited during the call (" + in.proc.exitText() + "); it is restarted on the next call", true
		}
		if st.Code() == codes.Internal || st.Code() == codes.ResourceExhausted {
			return "the plugin failed: " + clipText(st.Message()), false
		}
		return "the plugin's connection broke during the call: " + clipText(st.Message()) + "; it is restarted on the next call", true
	}
	return "the plugin failed: " + clipText(st.Message()), false
}

func clipText(s string) string { return textclip.Squash(s, 300) }

// baseEnv is the environment every plugin gets: no more of the dev server's (no secrets).
var baseEnv = []string{"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ"}

// startProcess starts the plugin's executable and completes go-plugin's handshake.
func startProcess(ph *pluginHook, in *instance) error {
	env := make([]string, 0, len(baseEnv)+len(ph.env)+8)
	for _, k := range baseEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	env = append(env, "OZ0_HOOK="+ph.name)
	env = append(env, ph.env...)
	logw := newTailWriter(ph.name, ph.set.opts.log)
	var proc *procRunner
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  hook.Handshake,
		Plugins:          plugin.PluginSet{hook.PluginName: &hook.Plugin{}},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		// go-plugin hands over a spec with its handshake environment (the magic cookie, the
		// protocol versions, the socket directory); the process is ours.
		RunnerFunc: func(_ hclog.Logger, spec *exec.Cmd, _ string) (runner.Runner, error) {
			cmd := exec.Command(ph.path, ph.args...)
			cmd.Dir = ph.set.dir
			cmd.Env = append(env, spec.Env...)
			p, err := newProcRunner(cmd, logw)
			if err == nil {
				proc = p
				in.setStarting(p)
			}
			return p, err
		},
		SkipHostEnv:  true,
		StartTimeout: ph.set.opts.startTimeout,
		Stderr:       logw,
		SyncStdout:   logw,
		SyncStderr:   logw,
		Logger:       hclog.NewNullLogger(),
		GRPCDialOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(hook.MaxMessageBytes), grpc.MaxCallSendMsgSize(hook.MaxMessageBytes))},
	})
	fail := func(what string, err error) error {
		var msg string
		if proc != nil && proc.exitedByItself(exitWait) {
			msg = "the plugin exited before its handshake (" + proc.exitText() + ")"
		} else {
			msg = what + ": " + clipText(firstLine(err.Error()))
			if strings.Contains(err.Error(), "Unrecognized remote plugin message") {
				msg += " (a plugin hook calls hook.Serve from github.com/orchestrator-zero/oz0/harnesskit/hook, or speaks go-plugin's gRPC protocol with the oz0 hook handshake; see docs/hooks.md)"
			}
			if last := logw.last(); last != "" {
				msg += "; its last words: " + clipText(last)
			}
		}
		if proc != nil {
			proc.kill()
		}
		client.Kill()
		return errors.New(msg)
	}
	cp, err := client.Client()
	if err != nil {
		return fail("the plugin did not start", err)
	}
	raw, err := cp.Dispense(hook.PluginName)
	if err != nil {
		return fail("the plugin does not serve a hook", err)
	}
	h, ok := raw.(hook.Hook)
	if !ok {
		return fail("the plugin does not serve a hook", fmt.Errorf("got %T", raw))
	}
	in.hook, in.client, in.proc = h, client, proc
	return nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
