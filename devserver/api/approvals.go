package api

import (
	"errors"
	"net/http"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/devserver/store"
)

func (b *Backend) listApprovals(w http.ResponseWriter, r *http.Request) {
	var statuses []store.ApprovalStatus
	if r.URL.Query().Get("all") == "" {
		statuses = []store.ApprovalStatus{store.ApprovalPending}
	}
	list, err := b.Store.ListApprovals(statuses...)
	if err != nil {
		b.storeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.ApprovalList{Approvals: wireApprovals(list)})
}

func (b *Backend) getApproval(w http.ResponseWriter, r *http.Request) {
	a, err := b.Store.GetApproval(r.PathValue("id"))
	if err != nil {
		b.approvalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wireApproval(a))
}

// readAnswer decodes an answer's body into v; an empty body is an answer with no fields.
func readAnswer(w http.ResponseWriter, r *http.Request, v any) bool {
	return decodeBody(w, r, maxSmallBody, v, "a JSON answer", true)
}

func (b *Backend) approve(w http.ResponseWriter, r *http.Request) {
	var body apiv1.ApproveRequest
	if !readAnswer(w, r, &body) {
		return
	}
	a, rule, err := b.Inbox.Approve(r.PathValue("id"), body.Scope)
	if err != nil {
		b.approvalError(w, err)
		return
	}
	out := apiv1.ApproveResponse{Approval: wireApproval(a)}
	if rule != nil {
		wr := wireRule(*rule)
		out.Rule = &wr
	}
	writeJSON(w, http.StatusOK, out)
}

func (b *Backend) deny(w http.ResponseWriter, r *http.Request) {
	var body apiv1.DenyRequest
	if !readAnswer(w, r, &body) {
		return
	}
	a, err := b.Inbox.Deny(r.PathValue("id"), body.Reason)
	if err != nil {
		b.approvalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.DenyResponse{Approval: wireApproval(a)})
}

func (b *Backend) listRules(w http.ResponseWriter, r *http.Request) {
	rules, err := b.Store.Rules()
	if err != nil {
		b.storeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.RuleList{Rules: wireRules(rules)})
}

func (b *Backend) revokeRule(w http.ResponseWriter, r *http.Request) {
	rule, err := b.Store.RevokeRule(r.PathValue("id"))
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, apiv1.CodeNotFound, err.Error()+"; `oz0 approval rules` shows the rules")
		return
	}
	if err != nil {
		b.storeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wireRule(rule))
}

// approvalError is storeError for a call about one approval: an unknown one says where they are.
func (b *Backend) approvalError(w http.ResponseWriter, err error) {
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, apiv1.CodeNotFound, err.Error()+"; `oz0 approval list --all` shows the approvals")
		return
	}
	b.storeError(w, err)
}

func (b *Backend) usage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.UsageFilter{Agent: q.Get("agent"), Job: q.Get("job")}
	switch q.Get("by") {
	case "", "agent":
	case "job":
		f.ByJob = true
	default:
		writeError(w, http.StatusBadRequest, apiv1.CodeBadRequest, "by must be agent or job")
		return
	}
	if f.Job != "" {
		if _, err := b.Store.GetJob(f.Job); err != nil {
			b.jobError(w, err)
			return
		}
	}
	rows, err := b.Store.UsageByRecord(f)
	if err != nil {
		b.storeError(w, err)
		return
	}
	out := apiv1.UsageReport{Usage: make([]apiv1.UsageRow, len(rows))}
	for i, row := range rows {
		out.Usage[i] = apiv1.UsageRow{Agent: row.Agent, Job: row.Job, Record: row.Record, Model: row.Model, Usage: wireUsage(row.Usage)}
	}
	writeJSON(w, http.StatusOK, out)
}
