package api

import (
	"encoding/json"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/devserver/store"
)

// The store's records become the API's wire types here, field by field, so that the store can
// change without a client noticing.

func wireJob(j store.Job) apiv1.Job {
	w := apiv1.Job{
		ID: j.ID, Agent: j.Agent, Plugin: j.Plugin, Input: j.Input, InputText: j.InputText,
		ModelRecord: j.ModelRecord, ModelName: j.ModelName, Status: j.Status, Reason: j.Reason,
		Output: j.Output, CreatedAt: j.CreatedAt, StartedAt: j.StartedAt, EndedAt: j.EndedAt,
		Limits: apiv1.Limits{MaxSteps: j.Limits.MaxSteps, TimeoutS: j.Limits.Timeout.Seconds()},
		Usage:  wireUsage(j.Usage),
	}
	if j.Origin != nil {
		w.From = &apiv1.JobOrigin{Job: j.Origin.Job, How: j.Origin.How}
	}
	if len(j.Traceback) > 0 {
		_ = json.Unmarshal(j.Traceback, &w.Traceback)
	}
	if len(j.Session) > 0 {
		var start apiv1.SessionStart
		if json.Unmarshal(j.Session, &start) == nil {
			w.Session = &start
		}
	}
	return w
}

func wireUsage(u store.Usage) apiv1.Usage {
	return apiv1.Usage{
		ModelCalls: u.ModelCalls, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadTokens, CacheCreationTokens: u.CacheCreationTokens, CostUSD: u.CostUSD,
	}
}

func wireJobs(js []store.Job) []apiv1.Job {
	out := make([]apiv1.Job, len(js))
	for i, j := range js {
		out[i] = wireJob(j)
	}
	return out
}

// wireEvent keeps the event's data as the store compacted it: no copy on the live stream's path.
func wireEvent(e store.Event) apiv1.Event {
	return apiv1.Event{Job: e.Job, Seq: e.Seq, Time: e.Time, Type: e.Type, Data: e.Data}
}

func wireApproval(a store.Approval) apiv1.Approval {
	return apiv1.Approval{
		ID: a.ID, Job: a.Job, Agent: a.Agent, Harness: a.Harness, Tool: a.Tool, Request: a.Request,
		Arguments: a.Arguments, ArgumentsBytes: a.ArgumentsBytes, ArgumentsClipped: a.ArgumentsClipped, Why: a.Why, Status: a.Status, Scope: a.Scope,
		Reason: a.Reason, CreatedAt: a.CreatedAt, DecidedAt: a.DecidedAt,
	}
}

func wireApprovals(as []store.Approval) []apiv1.Approval {
	out := make([]apiv1.Approval, len(as))
	for i, a := range as {
		out[i] = wireApproval(a)
	}
	return out
}

func wireRule(r store.ApprovalRule) apiv1.Rule {
	return apiv1.Rule{ID: r.ID, Target: r.Target, Approval: r.Approval, CreatedAt: r.CreatedAt}
}

func wireRules(rs []store.ApprovalRule) []apiv1.Rule {
	out := make([]apiv1.Rule, len(rs))
	for i, r := range rs {
		out[i] = wireRule(r)
	}
	return out
}
