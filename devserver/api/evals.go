package api

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/devserver/store"
)

// evalCase proposes a job as an eval case of its plugin, and writes it when asked.
func (b *Backend) evalCase(w http.ResponseWriter, r *http.Request) {
	if b.Evals == nil {
		writeError(w, http.StatusNotImplemented, apiv1.CodeInternal, "this server has no eval files")
		return
	}
	var req apiv1.EvalCaseRequest
	if !decodeBody(w, r, maxSmallBody, &req, "a JSON eval case request", true) {
		return
	}
	c, err := b.Evals.Case(r.Context(), r.PathValue("id"), req)
	if b.evalError(w, err) {
		return
	}
	status := http.StatusOK
	if c.Written {
		status = http.StatusCreated
	}
	writeJSON(w, status, c)
}

func (b *Backend) evalFiles(w http.ResponseWriter, r *http.Request) {
	if b.Evals == nil {
		writeError(w, http.StatusNotImplemented, apiv1.CodeInternal, "this server has no eval files")
		return
	}
	fs, err := b.Evals.Files()
	if b.evalError(w, err) {
		return
	}
	writeJSON(w, http.StatusOK, fs)
}

// evalError answers the errors of the eval calls; false for none.
func (b *Backend) evalError(w http.ResponseWriter, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, store.ErrNotFound):
		b.jobError(w, err)
	case errors.Is(err, ErrBadEvalCase), errors.Is(err, ErrBadEvalRun):
		writeError(w, http.StatusUnprocessableEntity, apiv1.CodeBadEval, err.Error())
	case errors.Is(err, ErrEvalBusy):
		writeError(w, http.StatusConflict, apiv1.CodeEvalBusy, err.Error())
	case errors.Is(err, ErrReadOnly):
		writeError(w, http.StatusForbidden, apiv1.CodeReadOnly, err.Error())
	default:
		b.storeError(w, err)
	}
	return true
}

func (b *Backend) startEvalRun(w http.ResponseWriter, r *http.Request) {
	if b.Evals == nil {
		writeError(w, http.StatusNotImplemented, apiv1.CodeInternal, "this server has no eval files")
		return
	}
	var req apiv1.EvalRunRequest
	if !decodeBody(w, r, maxSmallBody, &req, "a JSON eval run request", true) {
		return
	}
	run, err := b.Evals.StartRun(req)
	if b.evalError(w, err) {
		return
	}
	writeJSON(w, http.StatusAccepted, run)
}

func (b *Backend) evalRuns(w http.ResponseWriter, r *http.Request) {
	if b.Evals == nil {
		writeError(w, http.StatusNotImplemented, apiv1.CodeInternal, "this server has no eval files")
		return
	}
	runs, err := b.Evals.Runs()
	if b.evalError(w, err) {
		return
	}
	writeJSON(w, http.StatusOK, runs)
}

func (b *Backend) evalRun(w http.ResponseWriter, r *http.Request) {
	b.oneEvalRun(w, r, func(id int64) (apiv1.EvalRun, error) { return b.Evals.Run(id) })
}

func (b *Backend) stopEvalRun(w http.ResponseWriter, r *http.Request) {
	b.oneEvalRun(w, r, func(id int64) (apiv1.EvalRun, error) { return b.Evals.StopRun(id) })
}

func (b *Backend) oneEvalRun(w http.ResponseWriter, r *http.Request, fn func(int64) (apiv1.EvalRun, error)) {
	if b.Evals == nil {
		writeError(w, http.StatusNotImplemented, apiv1.CodeInternal, "this server has no eval files")
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		writeError(w, http.StatusNotFound, apiv1.CodeNotFound, fmt.Sprintf("no eval run %q; GET /api/v1/eval-runs lists them", r.PathValue("id")))
		return
	}
	run, err := fn(id)
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, apiv1.CodeNotFound, err.Error()+"; GET /api/v1/eval-runs lists them")
		return
	}
	if b.evalError(w, err) {
		return
	}
	writeJSON(w, http.StatusOK, run)
}
