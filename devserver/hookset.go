package devserver

import (
	"context"

	"github.com/orchestrator-zero/oz0/devserver/hooks"
	"github.com/orchestrator-zero/oz0/devserver/node"
	"github.com/orchestrator-zero/oz0/harnesskit"
)

// hookSet puts the tenant's hooks behind the dev server's policy.
type hookSet struct{ set *hooks.Set }

func (h hookSet) Evaluate(ctx context.Context, job *node.Job, ask *harnesskit.Ask) HookVerdict {
	r := h.set.Evaluate(ctx, hooks.Call{Job: job.ID, Agent: job.Agent.Name, Harness: job.Harness.Name, Tool: ask.Tool, Arguments: ask.Arguments})
	v := HookVerdict{Decision: string(r.Decision), Arguments: r.Arguments, Changed: r.Changed, Reason: r.Reason, By: r.By}
	if r.By == hooks.ByDefault {
		v.Decision = "" // no hook decided: the policy goes on (requires_approval, then allow)
		if r.Changed {  // the trace names the hook that changed the call
			for _, st := range r.Trail {
				if st.Decision == hooks.Change {
					v.By = "hook:" + st.Hook
				}
			}
		}
	}
	return v
}
