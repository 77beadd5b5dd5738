package api

import (
	"encoding/json"
	"io"
	"net/http"

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
	if list == nil {
		list = []store.Approval{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": list})
}

func (b *Backend) getApproval(w http.ResponseWriter, r *http.Request) {
	a, err := b.Store.GetApproval(r.PathValue("id"))
	if err != nil {
		b.storeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

type answerBody struct {
	Scope  string `json:"scope"`
	Reason string `json:"reason"`
}

func readAnswer(w http.ResponseWriter, r *http.Request) (answerBody, bool) {
	var body answerBody
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil && err != io.EOF {
		writeError(w, http.StatusBadRequest, "bad_request", "the request is not a JSON answer: "+err.Error())
		return body, false
	}
	return body, true
}

func (b *Backend) approve(w http.ResponseWriter, r *http.Request) {
	body, ok := readAnswer(w, r)
	if !ok {
		return
	}
	a, rule, err := b.Inbox.Approve(r.PathValue("id"), body.Scope)
	if err != nil {
		b.storeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"approval": a, "rule": rule})
}

func (b *Backend) deny(w http.ResponseWriter, r *http.Request) {
	body, ok := readAnswer(w, r)
	if !ok {
		return
	}
	a, err := b.Inbox.Deny(r.PathValue("id"), body.Reason)
	if err != nil {
		b.storeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"approval": a})
}

func (b *Backend) listRules(w http.ResponseWriter, r *http.Request) {
	rules, err := b.Store.Rules()
	if err != nil {
		b.storeError(w, err)
		return
	}
	if rules == nil {
		rules = []store.ApprovalRule{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"rules": rules})
}

func (b *Backend) revokeRule(w http.ResponseWriter, r *http.Request) {
	rule, err := b.Store.RevokeRule(r.PathValue("id"))
	if err != nil {
		b.storeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rule)
}
