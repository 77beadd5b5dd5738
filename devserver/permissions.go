package devserver

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/orchestrator-zero/oz0/devserver/approvals"
	"github.com/orchestrator-zero/oz0/devserver/node"
	"github.com/orchestrator-zero/oz0/supervisor"
)

// HookVerdict is what the tenant's hooks made of a call.
type HookVerdict struct {
	Decision  string          // "allow", "deny", "ask", or "" when no hook decided
	Arguments json.RawMessage // the arguments after the hooks that changed them
	Changed   bool
	Reason    string
	By        string // "hook:<name>"
}

// Hooks evaluates the tenant's hooks for a call of a listed tool.
type Hooks interface {
	Evaluate(ctx context.Context, job *node.Job, ask *supervisor.Ask) HookVerdict
}

// decider is the dev server's permission policy for the calls of listed tools (the node has
// already refused the others, default-deny): the tenant's hooks in order (allow, deny, change the
// arguments, or ask a person), then the agent's requires_approval, which always waits for a
// person unless a hook denied the call first.
type decider struct {
	hooks Hooks // nil: none
	inbox *approvals.Inbox
}

func (d *decider) Decide(ctx context.Context, job *node.Job, ask *supervisor.Ask) (supervisor.Decision, string) {
	args, changed := ask.Arguments, false
	by, why := "policy", ""
	if d.hooks != nil {
		v := d.hooks.Evaluate(ctx, job, ask)
		if v.Changed {
			args, changed = v.Arguments, true
		}
		switch v.Decision {
		case "deny":
			return supervisor.Deny(v.Reason), v.By
		case "ask":
			why = v.By + " asks"
			if v.Reason != "" {
				why += ": " + v.Reason
			}
		case "allow":
			by = v.By
		default:
			if changed {
				by = v.By
			}
		}
	}
	if why == "" && slices.Contains(job.Agent.Harness.RequiresApproval, ask.Tool) {
		why = "requires_approval lists " + ask.Tool
	}
	if why != "" {
		ans, err := d.inbox.Ask(ctx, approvals.Call{
			Job: job.ID, Agent: job.Agent.Name, Harness: job.Harness.Name, Tool: ask.Tool, Request: ask.ID,
			Arguments: args, Why: why, Hold: ask.Hold,
		})
		if err != nil {
			return supervisor.Deny("the approvals inbox failed: " + err.Error()), "node"
		}
		if !ans.Allow {
			return supervisor.Deny(ans.Reason), ans.By
		}
		by = ans.By
	}
	if changed {
		return supervisor.Allow(args), by
	}
	return supervisor.Allow(nil), by
}
