package ahead

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/orchestrator-zero/oz0/supervisor"
)

// A harness's fork server: one a harness, made ahead like a session, its dependencies loaded and
// its frameworks warmed up once; each job's session is a fork of it (supervisor.Zygote) sharing
// the loaded pages, so a burst of jobs costs neither an import each nor its memory each. The
// policy's number of sessions for each harness are forked ahead of their jobs and warmed up in
// their own processes (supervisor.Zygote.Make): a job binds one at once. A job that finds none
// ready (a burst took them) has its session forked at once. A harness whose loader leaves a
// thread running (which a fork would not copy) is not forked: its sessions are made ahead one at
// a time instead.

// server is a harness's fork server in the pool.
type server struct {
	z     *supervisor.Zygote
	stamp string          // the plugin's environment when it was made
	used  time.Time       // its last fork, or its making
	spec  supervisor.Spec // the harness's, as sessions made ahead are made

	mu      sync.Mutex
	ahead   []*supervisor.Made // sessions forked ahead of their jobs, oldest first
	forking int                // being forked ahead
	running int                // its sessions that have begun and not ended
	closed  bool
}

// startForked starts spec's session as a fork of its harness's server, made now if it has none
// (or a stale one): one forked ahead of its job when one is ready, else one forked now. ok is
// false when the harness's sessions cannot be forked: the caller makes them another way.
func (p *Pool) startForked(ctx context.Context, key string, spec supervisor.Spec) (*supervisor.Session, How, bool, error) {
	srv, why, err := p.server(key, spec)
	if err != nil {
		p.log.Warn("a fork server could not be made; sessions are made ahead one at a time", "harness", spec.Request.Harness, "err", err)
		p.noFork(key, envStamp(spec.PluginDir))
		return nil, How{}, false, nil
	}
	srv.begin()
	started := false
	defer func() {
		if !started {
			p.ended(key, srv)
		}
	}()
	if m := srv.takeAhead(); m != nil {
		s, err := m.Bind(ctx, spec)
		if err == nil {
			started = true
			p.follow(key, srv, s)
			return s, How{Start: StartForkedAhead, MadeAt: s.MadeAt(), BoundAt: time.Now(), Program: s.Program(), Loaded: m.Report()}, true, nil
		}
		if !errors.Is(err, supervisor.ErrGone) {
			return nil, How{}, true, err
		}
		// It exited before its job (its server is ending, say): fork one now.
	}
	ready := srv.z.Forks()
	s, err := srv.z.Fork(ctx, spec)
	switch {
	case errors.Is(err, supervisor.ErrGone):
		// Asked before it is dropped, which ends it: a server that is still there forks nothing.
		exited := isClosed(srv.z.Exited())
		p.dropServer(key, srv)
		if !exited {
			p.noFork(key, srv.stamp)
		}
		return nil, How{}, false, nil
	case err != nil:
		return nil, How{}, true, err
	}
	started = true
	p.follow(key, srv, s)
	how := How{Start: StartForked, MadeAt: srv.z.MadeAt(), BoundAt: time.Now(), Program: s.Program(), Loaded: srv.z.Report()}
	switch {
	case !ready:
		how.Why = why
		if how.Why == "" {
			how.Why = "its fork server was still loading when the job came"
		}
	default:
		how.Why = "no session forked ahead of it was ready (taken by other jobs, or still being forked)"
	}
	return s, how, true, nil
}

// begin counts a job's session among srv's running ones from the moment the job asks for it
// (waiting for the server to load, say), so that a burst is seen as it comes.
func (srv *server) begin() {
	srv.mu.Lock()
	srv.running++
	srv.mu.Unlock()
}

// ended takes a session out of srv's running ones; then srv forks ahead again what its jobs took.
func (p *Pool) ended(key string, srv *server) {
	srv.mu.Lock()
	srv.running--
	srv.mu.Unlock()
	p.forkAhead(key, srv)
}

// follow keeps s among srv's running sessions until it ends.
func (p *Pool) follow(key string, srv *server, s *supervisor.Session) {
	go func() {
		<-s.Done()
		p.ended(key, srv)
	}()
}

// forkAhead has srv fork sessions ahead of their jobs, in the background, until the policy's
// number for each harness wait (or are being forked). It is called as the server is made and as
// each of its sessions ends, not as one begins: a session forked ahead (its warm-ups, some 50 to
// 100 ms of a core) would take a core from the job that has begun. Not while more than one of its
// sessions runs: in a burst of jobs a session forked ahead costs more than the one forked at its
// job it spares; the burst's end forks them.
func (p *Pool) forkAhead(key string, srv *server) {
	if p.busy(srv) {
		return
	}
	p.mu.Lock()
	if p.servers[key] != srv || p.closed {
		p.mu.Unlock()
		return
	}
	want := p.policy.forkedAhead() - srv.count()
	if p.policy.Max > 0 {
		// The servers and everything made ahead are never more than the policy's Max.
		others := p.total + p.makingTotal() + len(p.servers)
		for _, other := range p.servers {
			others += other.count()
		}
		want = min(want, p.policy.Max-others)
	}
	srv.mu.Lock()
	if srv.closed || want <= 0 {
		srv.mu.Unlock()
		p.mu.Unlock()
		return
	}
	srv.forking += want
	srv.mu.Unlock()
	p.mu.Unlock()
	p.wg.Add(want)
	for range want {
		go func() {
			defer p.wg.Done()
			// A server still loading forks once it is ready: by then jobs may have come (the
			// cases of an eval): they go first, and these are forked when they end.
			select {
			case <-srv.z.Loaded():
			case <-srv.z.Exited():
			}
			var m *supervisor.Made
			err := supervisor.ErrGone
			if !p.busy(srv) {
				m, err = srv.z.Make(context.Background(), srv.spec)
			}
			srv.mu.Lock()
			srv.forking--
			if err != nil || srv.closed {
				srv.mu.Unlock()
				if err == nil {
					m.Discard()
				} else if !errors.Is(err, supervisor.ErrGone) {
					p.log.Warn("a session could not be forked ahead; jobs fork theirs", "harness", srv.spec.Request.Harness, "err", err)
				}
				return
			}
			srv.ahead = append(srv.ahead, m)
			srv.mu.Unlock()
			p.wg.Add(1)
			go func() {
				// One that exits before its job (a sandbox that could not be made) leaves the list.
				defer p.wg.Done()
				<-m.Exited()
				srv.mu.Lock()
				srv.ahead = slices.DeleteFunc(srv.ahead, func(x *supervisor.Made) bool { return x == m })
				srv.mu.Unlock()
				m.Discard()
			}()
		}()
	}
}

// busy says whether more than one of srv's sessions runs (or is asked for), or jobs wait for a
// session (Policy.Backlog): no session is forked ahead then.
func (p *Pool) busy(srv *server) bool {
	if p.policy.Backlog != nil && p.policy.Backlog() {
		return true
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.running > 1
}

// takeAhead takes the oldest session srv forked ahead that is ready for its job; nil when none is.
func (srv *server) takeAhead() *supervisor.Made {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for i, m := range srv.ahead {
		if m.Ready() {
			srv.ahead = slices.Delete(srv.ahead, i, i+1)
			return m
		}
	}
	return nil
}

// count is how many sessions srv has forked ahead or is forking.
func (srv *server) count() int {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return len(srv.ahead) + srv.forking
}

// waiting is how many sessions srv forked ahead wait for a job, and how many of them are ready.
func (srv *server) waiting() (n, ready int) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, m := range srv.ahead {
		if m.Ready() {
			ready++
		}
	}
	return len(srv.ahead), ready
}

// close ends the server and the sessions it forked ahead (they end with it).
func (srv *server) close() {
	srv.mu.Lock()
	srv.closed = true
	ahead := srv.ahead
	srv.ahead = nil
	srv.mu.Unlock()
	for _, m := range ahead {
		m.Discard()
	}
	srv.z.Close()
}

// server is the harness's fork server, made now when it has none or its plugin's environment
// changed since it was made; why says why a job waits for one being made.
func (p *Pool) server(key string, spec supervisor.Spec) (*server, string, error) {
	stamp := envStamp(spec.PluginDir)
	p.mu.Lock()
	srv := p.servers[key]
	why := ""
	if srv != nil && srv.stamp != stamp {
		delete(p.servers, key)
		go srv.close()
		srv, why = nil, "the plugin's environment changed since its fork server was made"
	}
	if srv != nil {
		srv.used = time.Now()
		p.mu.Unlock()
		return srv, "", nil
	}
	p.mu.Unlock()
	ahead := aheadSpec(spec)
	z, err := makeLoaderZygote(ahead)
	if err != nil {
		return nil, "", err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if other := p.servers[key]; other != nil || p.closed {
		go z.Close() // made twice at once: one is enough
		if p.closed {
			return nil, "", errors.New("the pool is closed")
		}
		return other, why, nil
	}
	srv = &server{z: z, stamp: stamp, used: time.Now(), spec: ahead}
	p.servers[key] = srv
	if why == "" {
		why = "no fork server was made for it yet"
	}
	p.wg.Add(1)
	go p.watchServer(key, srv)
	return srv, why, nil
}

// prepareServer makes the harness's fork server ahead, in the background.
func (p *Pool) prepareServer(key string, spec supervisor.Spec) {
	p.mu.Lock()
	have := p.servers[key] != nil || p.closed
	p.mu.Unlock()
	if have {
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		srv, _, err := p.server(key, spec)
		if err != nil {
			p.log.Warn("a fork server could not be made; sessions are made ahead one at a time", "harness", spec.Request.Harness, "err", err)
			p.noFork(key, envStamp(spec.PluginDir))
			p.Prepare(spec)
			return
		}
		p.forkAhead(key, srv)
	}()
}

// watchServer drops a server that exits, idles for the policy's Idle, or says once loaded that it
// forks nothing (a library left a thread running): then its harness's sessions are made ahead
// one at a time, until its plugin's environment changes.
func (p *Pool) watchServer(key string, srv *server) {
	defer p.wg.Done()
	tick := time.NewTicker(min(p.policy.Idle, time.Minute))
	defer tick.Stop()
	loaded := srv.z.Loaded()
	for {
		select {
		case <-loaded:
			loaded = nil
			if srv.z.Forks() || isClosed(srv.z.Exited()) {
				continue
			}
			p.log.Info("the harness's fork server forks nothing (its dependencies left a thread running, its libc has no _Fork, or its kernel refuses clone3); its sessions are made ahead one at a time", "harness", srv.spec.Request.Harness, "loaded", string(srv.z.Report()))
			p.noFork(key, srv.stamp)
			p.dropServer(key, srv)
			p.Prepare(srv.spec)
			return
		case <-srv.z.Exited():
			p.dropServer(key, srv)
			return
		case <-tick.C:
			p.mu.Lock()
			idle := time.Since(srv.used) > p.policy.Idle
			p.mu.Unlock()
			if idle {
				p.dropServer(key, srv)
				return
			}
		}
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (p *Pool) dropServer(key string, srv *server) {
	p.mu.Lock()
	if p.servers[key] == srv {
		delete(p.servers, key)
	}
	p.mu.Unlock()
	srv.close()
}

// noFork says the harness key's sessions are not forked while its plugin's environment is stamp.
func (p *Pool) noFork(key, stamp string) {
	p.mu.Lock()
	p.noForks[key] = stamp
	p.mu.Unlock()
}

func (p *Pool) forks(key string, spec supervisor.Spec) bool {
	if !p.policy.Forks(spec.Command) {
		return false // Node cannot fork: its sessions are made ahead one at a time
	}
	p.mu.Lock()
	stamp, no := p.noForks[key]
	p.mu.Unlock()
	return !no || stamp != envStamp(spec.PluginDir)
}

// makeLoaderZygote makes a fork server with the loader as its program.
func makeLoaderZygote(spec supervisor.Spec) (*supervisor.Zygote, error) {
	made, err := loaderSpec(spec, true)
	if err != nil {
		return nil, err
	}
	return supervisor.MakeZygote(made)
}
