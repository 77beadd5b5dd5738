package devserver

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/orchestrator-zero/oz0/devserver/node"
	"github.com/orchestrator-zero/oz0/devserver/tenanthooks"
	"github.com/orchestrator-zero/oz0/supervisor"
)

// liveHooks are the tenant's hooks as the hooks file is now: a good edit replaces them, and the
// set it replaces is closed once the calls it is evaluating are done.
type liveHooks struct {
	current atomic.Pointer[hookGen]
}

// hookGen is one loading of the hooks file. Evaluations hold mu for reading; retiring takes it
// for writing, so a set is closed only after its last evaluation.
type hookGen struct {
	set *tenanthooks.Set
	mu  sync.RWMutex
}

func newLiveHooks(set *tenanthooks.Set) *liveHooks {
	l := &liveHooks{}
	l.current.Store(&hookGen{set: set})
	return l
}

// Set is the hooks in force.
func (l *liveHooks) Set() *tenanthooks.Set { return l.current.Load().set }

// Replace puts set in force and closes the one it replaces once it is idle.
func (l *liveHooks) Replace(set *tenanthooks.Set) {
	old := l.current.Swap(&hookGen{set: set})
	go func() {
		old.mu.Lock()
		old.set.Close()
	}()
}

// Close closes the hooks in force.
func (l *liveHooks) Close() error {
	g := l.current.Load()
	g.mu.Lock()
	return g.set.Close()
}

// Evaluate puts the tenant's hooks behind the dev server's policy.
func (l *liveHooks) Evaluate(ctx context.Context, job *node.Job, ask *supervisor.Ask) HookVerdict {
	g := l.current.Load()
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.set.Len() == 0 {
		return HookVerdict{}
	}
	r := g.set.Evaluate(ctx, tenanthooks.Call{Job: job.ID, Agent: job.Agent.Name, Harness: job.Harness.Name, Tool: ask.Tool, Arguments: ask.Arguments})
	v := HookVerdict{Decision: string(r.Decision), Arguments: r.Arguments, Changed: r.Changed, Reason: r.Reason, By: r.By}
	if r.By == tenanthooks.ByDefault {
		v.Decision = "" // no hook decided: the policy goes on (requires_approval, then allow)
		if r.Changed {  // the trace names the hook that changed the call
			for _, st := range r.Trail {
				if st.Decision == tenanthooks.Change {
					v.By = "hook:" + st.Hook
				}
			}
		}
	}
	return v
}
