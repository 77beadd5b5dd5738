package ahead

import (
	"context"
	"errors"
	"time"

	"github.com/orchestrator-zero/oz0/supervisor"
)

// A harness's fork server: one a harness, made ahead like a session, its dependencies loaded and
// its frameworks warmed up once; each job's session is a fork of it (supervisor.Zygote), made at
// the job in milliseconds and sharing the loaded pages, so a burst of jobs costs neither an
// import each nor its memory each. A harness whose loader leaves a thread running (which a fork
// would not copy) is not forked: its sessions are made ahead one at a time instead.

// server is a harness's fork server in the pool.
type server struct {
	z     *supervisor.Zygote
	stamp string          // the plugin's environment when it was made
	used  time.Time       // its last fork, or its making
	spec  supervisor.Spec // the harness's, as sessions made ahead are made
}

// startForked starts spec's session as a fork of its harness's server, made now if it has none
// (or a stale one). ok is false when the harness's sessions cannot be forked: the caller makes
// them another way.
func (p *Pool) startForked(ctx context.Context, key string, spec supervisor.Spec) (*supervisor.Session, How, bool, error) {
	srv, why, err := p.server(key, spec)
	if err != nil {
		p.log.Warn("a fork server could not be made; sessions are made ahead one at a time", "harness", spec.Request.Harness, "err", err)
		p.noFork(key, envStamp(spec.PluginDir))
		return nil, How{}, false, nil
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
	how := How{Start: StartForked, MadeAt: srv.z.MadeAt(), BoundAt: time.Now(), Program: s.Program(), Loaded: srv.z.Report()}
	if !ready {
		how.Why = why
		if how.Why == "" {
			how.Why = "its fork server was still loading when the job came"
		}
	}
	return s, how, true, nil
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
		go srv.z.Close()
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
		if _, _, err := p.server(key, spec); err != nil {
			p.log.Warn("a fork server could not be made; sessions are made ahead one at a time", "harness", spec.Request.Harness, "err", err)
			p.noFork(key, envStamp(spec.PluginDir))
			p.Prepare(spec)
		}
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
			p.log.Info("the harness's fork server forks nothing (its dependencies left a thread running, or its libc has no _Fork); its sessions are made ahead one at a time", "harness", srv.spec.Request.Harness, "loaded", string(srv.z.Report()))
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
	srv.z.Close()
}

// noFork says the harness key's sessions are not forked while its plugin's environment is stamp.
func (p *Pool) noFork(key, stamp string) {
	p.mu.Lock()
	p.noForks[key] = stamp
	p.mu.Unlock()
}

func (p *Pool) forks(key string, spec supervisor.Spec) bool {
	if !supervisor.IsPython(spec.Command[0]) || !p.policy.forks() {
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
