// Package api is the dev server's control API: jobs, their live streams and traces, the
// approvals inbox, usage by model record, the feed that keeps a live view up to date, and the
// tenant's secrets, answered in the wire types of apiv1. Every call needs the bearer token of
// OZ0_CONTEXT; the Host must be loopback (so a web page cannot reach it through DNS rebinding) and
// writes from another origin are refused. The dev UI serves the same calls (Routes), but the
// secrets', behind its own login instead of the token.
package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/devserver/node"
	"github.com/orchestrator-zero/oz0/devserver/secrets"
	"github.com/orchestrator-zero/oz0/devserver/store"
	"github.com/orchestrator-zero/oz0/eval"
	"github.com/orchestrator-zero/oz0/gateway"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
)

// Backend is what the API serves from.
type Backend struct {
	Token string       // the bearer token every call must carry
	Store *store.Store // the job records, read directly
	Node  JobRunner
	Inbox Answerer
	// Recorder records and replays jobs; nil: the calls that need it answer 501.
	Recorder Recorder
	// Evals reads and writes the plugins' eval files and runs them; nil: those calls answer 501.
	Evals   Evals
	Secrets SecretStore
	Info    func() apiv1.Info
	Logger  *slog.Logger
	// UILogin makes a one-time login link of the dev UI, for POST /api/v1/ui/login (oz0 ui);
	// only Handler serves it, behind the token: nil, not at all.
	UILogin func() string
	// Tenant is the tenant's quotas, their use and its kill switches, read (GET /api/v1/tenant,
	// /api/v1/tenant/usage); nil: not served. TenantAdmin changes them; nil: not served (the dev
	// UI shows them and changes none).
	Tenant      TenantView
	TenantAdmin TenantAdmin
	// Stopping is closed when the server stops: the feeds, which follow changes for as long as
	// the client stays, end then. nil never closes.
	Stopping <-chan struct{}
}

// JobRunner starts and cancels jobs: the dev server's node.
type JobRunner interface {
	// Submit makes a job of agent with the input as the user gave it, and starts it. Its errors
	// are a *node.InputError, node.ErrUnknownAgent, gateway.ErrNoModel or node.ErrClosed.
	Submit(agent, input string) (store.Job, error)
	// Cancel cancels a running job; false when the node does not run it.
	Cancel(id string) bool
	// Waiting says why a queued job waits for a session; "" when it does not wait.
	Waiting(id string) string
}

// Recorder runs jobs whose model calls are recorded and replays them: the dev server.
type Recorder interface {
	// SubmitRecorded is JobRunner.Submit for a job whose model calls are kept (record) or not,
	// whatever the server keeps of other jobs'.
	SubmitRecorded(agent, input string, record bool) (store.Job, error)
	// Replay starts a new job like job, its model calls answered from job's recording (with
	// upstream, those from the first that departs from it go upstream). Besides Submit's errors,
	// one wrapping ErrNotRecorded or ErrLive.
	Replay(job string, upstream bool) (store.Job, error)
	// Script is job's recording as a fake model script (YAML).
	Script(job string) ([]byte, error)
	// SubmitAnswered is JobRunner.Submit for a job whose model calls are answered as a says (a
	// recording or a fake model script), its own calls kept when record. Besides Submit's
	// errors, one wrapping ErrBadAnswers.
	SubmitAnswered(agent, input string, a apiv1.Answers, record bool) (store.Job, error)
	// RunAgain starts a job of agent, the agent of job from, on input, linked to from. Besides
	// Submit's errors, store.ErrNotFound for no job from, and one wrapping ErrOtherAgent.
	RunAgain(from, agent, input string) (store.Job, error)
}

// ErrOtherAgent is wrapped by RunAgain's error for an agent that is not the job's.
var ErrOtherAgent = errors.New("a job is run again by its own agent")

// Evals is the plugins' eval files as the API serves them: the dev server, through oz0 eval's
// engine.
type Evals interface {
	// Files lists the eval files of the plugins served.
	Files() (apiv1.EvalFiles, error)
	// Case proposes job as an eval case, and writes it when req.Write. Its errors wrap
	// store.ErrNotFound, ErrBadEvalCase or ErrReadOnly, or are the environment's.
	// StartRun's wrap ErrBadEvalRun or ErrEvalBusy.
	Case(ctx context.Context, job string, req apiv1.EvalCaseRequest) (apiv1.EvalCase, error)
	// StartRun starts running the cases req names, one run at a time (else ErrEvalBusy).
	StartRun(req apiv1.EvalRunRequest) (apiv1.EvalRun, error)
	// Runs lists the runs kept, newest first, without their reports.
	Runs() (apiv1.EvalRuns, error)
	// Run is run id with its report (so far, while it runs).
	Run(id int64) (apiv1.EvalRun, error)
	// StopRun stops run id if it runs.
	StopRun(id int64) (apiv1.EvalRun, error)
}

// ErrEvalBusy is wrapped by StartRun's error while another run runs.
var ErrEvalBusy = errors.New("an eval run is running")

// ErrBadEvalCase is wrapped by Evals' errors for a case that cannot be made as asked: the eval
// engine's own.
var ErrBadEvalCase = eval.ErrBadCase

// ErrBadEvalRun is wrapped by Evals' errors for cases that cannot be run as asked (no such file
// or case, eval files with problems, none to run).
var ErrBadEvalRun = errors.New("the eval cases cannot be run")

// ErrReadOnly is wrapped by Evals' errors for a plugin whose files the dev server may not write.
var ErrReadOnly = errors.New("the plugin is read-only")

// ErrBadAnswers is wrapped by a Recorder's error for answers it cannot use: a recorded call or a
// script that does not read.
var ErrBadAnswers = errors.New("the answers cannot be used")

// ErrNotRecorded is wrapped by a Recorder's error for a job whose model calls were not kept.
var ErrNotRecorded = errors.New("the job's model calls were not recorded")

// ErrLive is wrapped by Replay's error for a job that has not ended.
var ErrLive = errors.New("the job has not ended")

// Answerer answers approvals: the dev server's approvals inbox.
type Answerer interface {
	Approve(id, scope string) (store.Approval, *store.ApprovalRule, error)
	Deny(id, reason string) (store.Approval, error)
}

// SecretStore is the tenant's secrets, as the API changes them. Set and Remove say what the change
// did to the agents' model records (apiv1.SecretChange).
type SecretStore interface {
	Set(name, value, baseURL string) ([]string, error)
	List() ([]apiv1.SecretMeta, error)
	Remove(name string) ([]string, error)
}

// The most each call that takes a body takes (decodeBody).
const (
	// A job's input is at most apiv1.MaxInput as a JSON string (refused past it by the node, 422
	// naming the limit); the rest is room for the recorded answers oz0 eval sends with it.
	maxJobBody = store.MaxData + 1<<20
	// A secret's value (at most apiv1.MaxSecretValue), escaped as JSON.
	maxSecretBody = 2*apiv1.MaxSecretValue + 4<<10
	// Answers to approvals and replay requests: a few fields.
	maxSmallBody = 1 << 20
)

// Handler returns the API's handler, to mount at /api/: its calls behind Guard, with the bearer
// token, and GET /api/v1/debug/goroutines (Goroutines) and POST /api/v1/ui/login, which the dev
// UI does not serve (a page must not make itself login links).
func Handler(b *Backend) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/api/", Routes(b))
	mux.HandleFunc("GET /api/v1/debug/goroutines", Goroutines)
	if b.UILogin != nil {
		mux.HandleFunc("POST /api/v1/ui/login", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, apiv1.UILogin{URL: b.UILogin()})
		})
	}
	return marked(Guard(b.Token, mux))
}

// Goroutines answers the dev server's goroutines as Go's goroutine profile in text: the first
// line is "goroutine profile: total N", then the stacks, grouped. It is for finding a leak in
// oz0 dev itself (the fault matrix's tests count them before and after).
func Goroutines(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_ = pprof.Lookup("goroutine").WriteTo(w, 1)
}

// marked sets apiv1.ServerHeader on every answer of next, its refusals included.
func marked(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(apiv1.ServerHeader, "v1")
		next.ServeHTTP(w, r)
	})
}

// Routes are the API's calls, at /api/v1/…, without Guard: for a caller that guards them another
// way (the dev UI, with a login cookie). A Backend without Secrets serves no secrets calls.
func Routes(b *Backend) http.Handler {
	mux := http.NewServeMux()
	for _, rt := range b.routes() {
		mux.HandleFunc(rt.Pattern, rt.Handler)
	}
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, apiv1.CodeNotFound, fmt.Sprintf("no API call %s %s", r.Method, r.URL.Path))
	})
	return marked(mux)
}

// Route is one of the API's calls: its ServeMux pattern ("METHOD /api/v1/…") and handler.
type Route struct {
	Pattern string
	Handler http.HandlerFunc
}

// RouteList lists the calls Routes serves, so that a test covers every one, a new one included.
func RouteList(b *Backend) []Route { return b.routes() }

func (b *Backend) routes() []Route {
	rs := []Route{
		{"GET /api/v1/info", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, b.Info()) }},
		{"POST /api/v1/jobs", b.createJob},
		{"GET /api/v1/jobs", b.listJobs},
		{"GET /api/v1/jobs/{id}", b.getJob},
		{"POST /api/v1/jobs/{id}/cancel", b.cancelJob},
		{"GET /api/v1/jobs/{id}/events", b.events},
		{"GET /api/v1/jobs/{id}/trace", b.trace},
		{"POST /api/v1/jobs/{id}/replay", b.replayJob},
		{"GET /api/v1/jobs/{id}/script", b.script},
		{"POST /api/v1/jobs/{id}/eval-case", b.evalCase},
		{"GET /api/v1/evals", b.evalFiles},
		{"POST /api/v1/eval-runs", b.startEvalRun},
		{"GET /api/v1/eval-runs", b.evalRuns},
		{"GET /api/v1/eval-runs/{id}", b.evalRun},
		{"POST /api/v1/eval-runs/{id}/stop", b.stopEvalRun},
		{"GET /api/v1/jobs/{id}/calls", b.calls},
		{"GET /api/v1/jobs/{id}/calls/{seq}", b.call},
		{"GET /api/v1/jobs/{id}/calls/{seq}/diff", b.callDiff},
		{"GET /api/v1/approvals", b.listApprovals},
		{"GET /api/v1/approvals/{id}", b.getApproval},
		{"POST /api/v1/approvals/{id}/approve", b.approve},
		{"POST /api/v1/approvals/{id}/deny", b.deny},
		{"GET /api/v1/approval-rules", b.listRules},
		{"DELETE /api/v1/approval-rules/{id}", b.revokeRule},
		{"GET /api/v1/usage", b.usage},
		{"GET /api/v1/feed", b.feed},
	}
	if b.Tenant != nil {
		rs = append(rs,
			Route{"GET /api/v1/tenant", b.tenant},
			Route{"GET /api/v1/tenant/usage", b.tenantUsage})
	}
	if b.TenantAdmin != nil {
		rs = append(rs,
			Route{"PUT /api/v1/tenant/quotas", b.setQuota},
			Route{"DELETE /api/v1/tenant/quotas/{name}", b.removeQuota},
			Route{"POST /api/v1/tenant/kill", b.killTenant},
			Route{"POST /api/v1/tenant/resume", b.resumeTenant})
	}
	if b.Secrets != nil {
		rs = append(rs,
			Route{"GET /api/v1/secrets", b.listSecrets},
			Route{"PUT /api/v1/secrets/{name}", b.setSecret},
			Route{"DELETE /api/v1/secrets/{name}", b.removeSecret})
	}
	return rs
}

// Guard wraps a handler with the checks every call passes: a loopback Host, no cross-origin
// write, and the bearer token (when token is not empty).
func Guard(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if !apiv1.IsLoopbackHost(host) {
			writeError(w, http.StatusForbidden, apiv1.CodeForbiddenHost, "the dev server answers only requests addressed to loopback, not "+r.Host)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && r.Method != http.MethodGet && r.Method != http.MethodHead {
			if origin != "http://"+r.Host {
				writeError(w, http.StatusForbidden, apiv1.CodeCrossOrigin, "cross-origin writes are refused (Origin "+origin+")")
				return
			}
		}
		if k, n := repeatedHeader(r.Header); n > 1 {
			writeError(w, http.StatusBadRequest, apiv1.CodeBadRequest, fmt.Sprintf("the %s header comes %d times; send it once", k, n))
			return
		}
		if token != "" {
			scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
			// The scheme is case-insensitive (RFC 9110): "bearer" is as good as "Bearer".
			if !ok || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="oz0 dev"`)
				writeError(w, http.StatusUnauthorized, apiv1.CodeUnauthorized, "missing or wrong bearer token")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, apiv1.ErrorBody{Error: apiv1.Error{Code: code, Message: msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = jsonutil.NewEncoder(w).Encode(v)
}

// jobError is storeError for a call about one job: an unknown job says where the jobs are.
func (b *Backend) jobError(w http.ResponseWriter, err error) {
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, apiv1.CodeNotFound, err.Error()+"; `oz0 job list` shows the jobs")
		return
	}
	b.storeError(w, err)
}

func (b *Backend) storeError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, apiv1.CodeNotFound, err.Error())
	case errors.Is(err, store.ErrDecided):
		writeError(w, http.StatusConflict, apiv1.CodeDecided, err.Error())
	case errors.Is(err, store.ErrInvalid):
		writeError(w, http.StatusBadRequest, apiv1.CodeBadRequest, err.Error())
	case errors.Is(err, store.ErrDiskFull):
		writeError(w, http.StatusInsufficientStorage, apiv1.CodeDiskFull, err.Error())
	default:
		writeError(w, http.StatusInternalServerError, apiv1.CodeInternal, err.Error())
	}
}

func (b *Backend) createJob(w http.ResponseWriter, r *http.Request) {
	var req apiv1.JobRequest
	if !decodeBody(w, r, maxJobBody, &req, "a JSON job", false) {
		return
	}
	var j store.Job
	var err error
	switch {
	case (req.Record != nil || req.Answers != nil || req.From != "") && b.Recorder == nil:
		writeError(w, http.StatusNotImplemented, apiv1.CodeInternal, "this server does not record jobs")
		return
	case req.From != "" && (req.Answers != nil || req.Record != nil):
		writeError(w, http.StatusBadRequest, apiv1.CodeBadRequest, "from runs a job again on its model: it takes no answers and no record")
		return
	case req.From != "":
		j, err = b.Recorder.RunAgain(req.From, req.Agent, req.Input)
		if errors.Is(err, store.ErrNotFound) {
			b.jobError(w, err)
			return
		}
		if errors.Is(err, ErrOtherAgent) {
			writeError(w, http.StatusBadRequest, apiv1.CodeBadRequest, err.Error())
			return
		}
	case req.Answers != nil:
		j, err = b.Recorder.SubmitAnswered(req.Agent, req.Input, *req.Answers, req.Record != nil && *req.Record)
		if errors.Is(err, ErrBadAnswers) {
			writeError(w, http.StatusBadRequest, apiv1.CodeBadRequest, err.Error())
			return
		}
	case req.Record != nil:
		j, err = b.Recorder.SubmitRecorded(req.Agent, req.Input, *req.Record)
	default:
		j, err = b.Node.Submit(req.Agent, req.Input)
	}
	b.submitted(w, j, err)
}

// submitted answers a job just made, or why it was not.
func (b *Backend) submitted(w http.ResponseWriter, j store.Job, err error) {
	var inErr *node.InputError
	switch {
	case errors.As(err, &inErr):
		writeError(w, http.StatusUnprocessableEntity, apiv1.CodeBadInput, err.Error())
	case errors.Is(err, node.ErrUnknownAgent):
		writeError(w, http.StatusNotFound, apiv1.CodeUnknownAgent, err.Error())
	case errors.Is(err, gateway.ErrNoModel):
		writeError(w, http.StatusUnprocessableEntity, apiv1.CodeNoModel, err.Error())
	case errors.Is(err, node.ErrClosed):
		writeError(w, http.StatusServiceUnavailable, apiv1.CodeShuttingDown, err.Error())
	case err != nil:
		b.storeError(w, err)
	default:
		wj := b.wireJob(j)
		// The node looked at the plugin's files as it made the job: files that do not load leave
		// it on the version that did, which the answer says.
		if b.Info != nil {
			for _, a := range b.Info().Agents {
				if a.Name == j.Agent && a.Stale != "" {
					wj.Warnings = append(wj.Warnings, a.Stale)
				}
			}
		}
		writeJSON(w, http.StatusCreated, wj)
	}
}

// wireJob is a job as the API answers it: a queued job that waits for a session says why in its
// reason (oz0 run prints it).
func (b *Backend) wireJob(j store.Job) apiv1.Job {
	wj := wireJob(j)
	if wj.Status == apiv1.StatusQueued && wj.Reason == "" {
		wj.Reason = b.Node.Waiting(j.ID)
	}
	return wj
}

// listFilter reads the filters of a list of jobs from the query: agent, status (a comma-separated
// list), limit and before. A bad one is answered, and ok is false.
func listFilter(w http.ResponseWriter, r *http.Request) (f store.ListFilter, ok bool) {
	q := r.URL.Query()
	f = store.ListFilter{Agent: q.Get("agent"), Before: q.Get("before")}
	if s := q.Get("status"); s != "" {
		for _, st := range strings.Split(s, ",") {
			if !store.Status(st).Valid() {
				writeError(w, http.StatusBadRequest, apiv1.CodeBadRequest, fmt.Sprintf("unknown status %q; the statuses are %v", st, apiv1.Statuses))
				return f, false
			}
			f.Status = append(f.Status, store.Status(st))
		}
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, apiv1.CodeBadRequest, "limit must be a positive number")
			return f, false
		}
		f.Limit = n
	}
	return f, true
}

func (b *Backend) listJobs(w http.ResponseWriter, r *http.Request) {
	f, ok := listFilter(w, r)
	if !ok {
		return
	}
	jobs, err := b.Store.ListJobs(f)
	if err != nil {
		b.storeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.JobList{Jobs: wireJobs(jobs)})
}

func (b *Backend) getJob(w http.ResponseWriter, r *http.Request) {
	j, err := b.Store.GetJob(r.PathValue("id"))
	if err != nil {
		b.jobError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, b.wireJob(j))
}

func (b *Backend) cancelJob(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	j, err := b.Store.GetJob(id)
	if err != nil {
		b.jobError(w, err)
		return
	}
	if j.Status.Terminal() {
		writeError(w, http.StatusConflict, apiv1.CodeEnded, fmt.Sprintf("job %s has already ended: %s", id, j.Status))
		return
	}
	if !b.Node.Cancel(id) {
		_ = b.Store.FinishJob(id, store.StatusCancelled, node.StoppedOnRequest, nil)
	}
	// Answer once the job has ended, so that `oz0 job cancel` can say it is gone.
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	if sub, err := b.Store.Subscribe(ctx, id, 0); err == nil {
		for range sub.C {
		}
	}
	j, err = b.Store.GetJob(id)
	if err != nil {
		b.jobError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wireJob(j))
}

// events streams a job's events as server-sent events, each with its seq as the id, from after
// ?after= or the Last-Event-ID header, until the job's last event; then an `end` event.
func (b *Backend) events(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	after, ok := afterSeq(w, r)
	if !ok {
		return
	}
	sub, err := b.Store.Subscribe(r.Context(), id, after)
	if err != nil {
		b.jobError(w, err)
		return
	}
	defer sub.Close()
	sseHead(w)
	flusher, _ := w.(http.Flusher)
	rc := http.NewResponseController(w)
	buf := make([]byte, 0, 4096)
	for ev := range sub.C {
		buf = append(buf[:0], "id: "...)
		buf = strconv.AppendInt(buf, ev.Seq, 10)
		buf = append(buf, "\nevent: "...)
		buf = append(buf, ev.Type...)
		buf = append(buf, "\ndata: "...)
		if we := wireEvent(ev); len(we.Data) > longEvent {
			// Its data (a tool's result, a call's arguments: megabytes) is written as it is,
			// not copied into the buffer, which would keep its size for the rest of the stream.
			buf = we.AppendJSONHead(buf)
			if _, err := w.Write(buf); err != nil {
				return
			}
			if _, err := w.Write(we.Data); err != nil {
				return
			}
			buf = append(buf[:0], "}\n\n"...)
		} else {
			buf = we.AppendJSON(buf)
			buf = append(buf, "\n\n"...)
		}
		if _, err := w.Write(buf); err != nil {
			return
		}
		// Flush when no more events are waiting, so a burst goes out in few writes.
		if len(sub.C) == 0 && flusher != nil {
			if err := rc.Flush(); err != nil {
				return
			}
		}
	}
	if sub.Err() == nil {
		fmt.Fprint(w, "event: end\ndata: {}\n\n")
		if flusher != nil {
			flusher.Flush()
		}
	}
}

// longEvent is the size past which an event's data is written to the live stream as it is.
const longEvent = 64 << 10

// afterSeq reads where a stream resumes: the larger of ?after= and the Last-Event-ID header, 0
// when neither is given. A bad one is answered, and ok is false.
func afterSeq(w http.ResponseWriter, r *http.Request) (after int64, ok bool) {
	for _, s := range []string{r.Header.Get("Last-Event-ID"), r.URL.Query().Get("after")} {
		if s == "" {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, apiv1.CodeBadRequest, "after must be an event's seq")
			return 0, false
		}
		after = max(after, n)
	}
	return after, true
}

func (b *Backend) trace(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := b.Store.GetJob(id); err != nil {
		b.jobError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	if err := b.Store.Trace(id, w); err != nil {
		b.Logger.Error("trace", "job", id, "err", err)
	}
}

// replayJob starts a replay of a job from its recording.
func (b *Backend) replayJob(w http.ResponseWriter, r *http.Request) {
	if b.Recorder == nil {
		writeError(w, http.StatusNotImplemented, apiv1.CodeInternal, "this server does not replay jobs")
		return
	}
	var req apiv1.ReplayRequest
	if !decodeBody(w, r, maxSmallBody, &req, "a JSON replay request", true) {
		return
	}
	j, err := b.Recorder.Replay(r.PathValue("id"), req.Upstream)
	if b.recordingError(w, err) {
		return
	}
	b.submitted(w, j, err)
}

// script answers a job's recording as a fake model script.
func (b *Backend) script(w http.ResponseWriter, r *http.Request) {
	if b.Recorder == nil {
		writeError(w, http.StatusNotImplemented, apiv1.CodeInternal, "this server does not record jobs")
		return
	}
	data, err := b.Recorder.Script(r.PathValue("id"))
	if b.recordingError(w, err) {
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, apiv1.CodeInternal, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/yaml")
	w.Write(data)
}

// recordingError answers the errors of a job's recording; false for others.
func (b *Backend) recordingError(w http.ResponseWriter, err error) bool {
	switch {
	case errors.Is(err, store.ErrNotFound):
		b.jobError(w, err)
	case errors.Is(err, ErrNotRecorded):
		writeError(w, http.StatusConflict, apiv1.CodeNotRecorded, err.Error())
	case errors.Is(err, ErrLive):
		writeError(w, http.StatusConflict, apiv1.CodeLive, err.Error())
	default:
		return false
	}
	return true
}

func (b *Backend) listSecrets(w http.ResponseWriter, r *http.Request) {
	list, err := b.Secrets.List()
	if err != nil {
		writeError(w, http.StatusInternalServerError, apiv1.CodeInternal, err.Error())
		return
	}
	if list == nil {
		list = []apiv1.SecretMeta{}
	}
	writeJSON(w, http.StatusOK, apiv1.SecretList{Secrets: list})
}

func (b *Backend) setSecret(w http.ResponseWriter, r *http.Request) {
	var body apiv1.SetSecretRequest
	if !decodeBody(w, r, maxSecretBody, &body, "a JSON secret", false) {
		return
	}
	notes, err := b.Secrets.Set(r.PathValue("name"), body.Value, body.BaseURL)
	if err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, secrets.ErrInvalid) {
			status = http.StatusBadRequest
		}
		writeError(w, status, apiv1.CodeBadSecret, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, apiv1.SecretChange{Notes: notes})
}

func (b *Backend) removeSecret(w http.ResponseWriter, r *http.Request) {
	notes, err := b.Secrets.Remove(r.PathValue("name"))
	if err != nil {
		status, msg := http.StatusInternalServerError, err.Error()
		if errors.Is(err, secrets.ErrNotFound) {
			status, msg = http.StatusNotFound, msg+"; `oz0 secret list` shows the secrets"
		}
		writeError(w, status, apiv1.CodeBadSecret, msg)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.SecretChange{Notes: notes})
}
