package devserver

import (
	"context"
	"sync"
	"time"

	"github.com/orchestrator-zero/oz0/gateway"
)

// inflight counts each job's model calls between the gateway resolving their key and metering
// them, so that a job's end is recorded after its last model_call event: a harness can read its
// answer, finish and exit before the gateway's handler has metered the call.
type inflight struct {
	gateway.Resolver
	mu    sync.Mutex
	calls map[string]int
	idle  *sync.Cond
}

func newInflight(r gateway.Resolver) *inflight {
	f := &inflight{Resolver: r, calls: map[string]int{}}
	f.idle = sync.NewCond(&f.mu)
	return f
}

// Resolve counts a call of the key's job.
func (f *inflight) Resolve(ctx context.Context, key string) (*gateway.Grant, error) {
	g, err := f.Resolver.Resolve(ctx, key)
	if err == nil {
		f.mu.Lock()
		f.calls[g.Job]++
		f.mu.Unlock()
	}
	return g, err
}

// RevokeJob passes Gateway.Kill's revocation on.
func (f *inflight) RevokeJob(job string) int {
	if jr, ok := f.Resolver.(gateway.JobRevoker); ok {
		return jr.RevokeJob(job)
	}
	return 0
}

// done ends a call of job, once it is metered.
func (f *inflight) done(job string) {
	f.mu.Lock()
	if f.calls[job] > 0 {
		f.calls[job]--
		if f.calls[job] == 0 {
			delete(f.calls, job)
			f.idle.Broadcast()
		}
	}
	f.mu.Unlock()
}

// wait waits until job has no call in flight, at most timeout.
func (f *inflight) wait(job string, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, func() {
		f.mu.Lock()
		f.idle.Broadcast()
		f.mu.Unlock()
	})
	defer timer.Stop()
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.calls[job] > 0 && time.Now().Before(deadline) {
		f.idle.Wait()
	}
}
