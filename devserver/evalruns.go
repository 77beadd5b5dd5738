package devserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/devserver/api"
	"github.com/orchestrator-zero/oz0/devserver/store"
	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/eval"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
	"github.com/orchestrator-zero/oz0/lint/evalfile"
	"github.com/orchestrator-zero/oz0/plugin"
)

// The dev UI's eval runs: the plugins' cases run by eval.Run, oz0 eval's engine, on the server's
// own API (as oz0 eval --dev runs them), one run at a time. A run is kept in the store as it goes
// (each case's result as it ends, which the feed tells the page), and once ended with its report
// and the deltas from the run before it.

// evalRuns is the run in progress, and how to stop the runs when the server stops.
type evalRuns struct {
	mu      sync.Mutex
	current *liveEvalRun
	ctx     context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

type liveEvalRun struct {
	id      int64
	results []eval.Result // the cases ended so far, kept in the store as each ends
	notes   []string
	cancel  context.CancelFunc
}

// maxRunNotes bounds the notes a run keeps while it runs.
const maxRunNotes = 100

// startEvalRuns makes the runner; the server's undo stops a run in progress and waits for it to
// be kept as interrupted.
func (s *Server) startEvalRuns() {
	ctx, stop := context.WithCancel(context.Background())
	s.evalRuns = &evalRuns{ctx: ctx, stop: stop}
	// Runs a stopped (or crashed) oz0 dev left running did not end.
	if err := s.store.InterruptEvalRuns(); err != nil {
		s.log.Warn("eval runs left running not marked interrupted", "err", err)
	}
	s.undo = append(s.undo, func() error {
		stop()
		s.evalRuns.wg.Wait()
		return nil
	})
}

// evalPaths lists the eval files of the plugins served (only, a plugin's name; "" all), each
// with the name its reports give it (evalName).
func (s *Server) evalPaths(only string) (plugins []*plugin.Plugin, paths, shown [][]string, err error) {
	ps := s.Plugins()
	for _, p := range ps {
		if only != "" && p.Manifest.Name != only {
			continue
		}
		dir := filepath.Join(p.Dir, evalfile.Dir)
		entries, err := os.ReadDir(dir)
		if err != nil && !os.IsNotExist(err) {
			return nil, nil, nil, err
		}
		var ps1, sh1 []string
		for _, e := range entries {
			if evalfile.IsFile(e) {
				ps1 = append(ps1, filepath.Join(dir, e.Name()))
				sh1 = append(sh1, s.evalName(p, e.Name()))
			}
		}
		plugins = append(plugins, p)
		paths = append(paths, ps1)
		shown = append(shown, sh1)
	}
	return plugins, paths, shown, nil
}

// evalName is how a run's report names an eval file of p: evals/NAME.yaml, or
// PLUGIN/evals/NAME.yaml when oz0 dev serves several plugins.
func (s *Server) evalName(p *plugin.Plugin, file string) string {
	name := path.Join(evalfile.Dir, file)
	if len(s.Plugins()) > 1 {
		name = path.Join(p.Manifest.Name, name)
	}
	return name
}

func (e evals) StartRun(req apiv1.EvalRunRequest) (apiv1.EvalRun, error) {
	s := e.s
	if req.Case != "" && req.File == "" {
		return apiv1.EvalRun{}, fmt.Errorf("%w: a case is run with its file: give file too", api.ErrBadEvalRun)
	}
	plugins, paths, shown, err := s.evalPaths(req.Plugin)
	if err != nil {
		return apiv1.EvalRun{}, err
	}
	var files []*eval.File
	rep := &diag.Report{}
	var refs []eval.PluginRef
	for i, p := range plugins {
		fs, r, err := eval.Load(p, paths[i], shown[i])
		if err != nil {
			return apiv1.EvalRun{}, err
		}
		rep.Add(r.Diagnostics...)
		files = append(files, fs...)
		refs = append(refs, eval.PluginRef{Name: p.Manifest.Name, Version: p.Manifest.Version})
	}
	if rep.HasErrors() {
		d := rep.Diagnostics[0]
		return apiv1.EvalRun{}, fmt.Errorf("%w: the eval files have %s; nothing was run (oz0 plugin lint shows them): %s:%d:%d: %s", api.ErrBadEvalRun, diag.Summary(rep), d.File, d.Line, d.Col, d.Message)
	}
	if req.File != "" {
		// The file as GET /api/v1/evals names it (relative to its plugin), as the report does.
		base, ok := strings.CutPrefix(req.File, evalfile.Dir+"/")
		if !ok || strings.Contains(base, "/") || len(plugins) != 1 {
			return apiv1.EvalRun{}, fmt.Errorf("%w: no eval file %s%s (GET /api/v1/evals lists them; with several plugins, say whose)", api.ErrBadEvalRun, req.File, pluginNote(req.Plugin))
		}
		if files = eval.Only(files, s.evalName(plugins[0], base), req.Case); files == nil {
			what := "eval file " + req.File
			if req.Case != "" {
				what = fmt.Sprintf("case %s in %s", req.Case, req.File)
			}
			return apiv1.EvalRun{}, fmt.Errorf("%w: no %s (GET /api/v1/evals lists them)", api.ErrBadEvalRun, what)
		}
	}
	cases := 0
	for _, f := range files {
		cases += len(f.Cases)
	}
	if cases == 0 {
		return apiv1.EvalRun{}, fmt.Errorf("%w: the plugins have no eval case to run: write cases in %s/*.yaml, or save a job as one", api.ErrBadEvalRun, evalfile.Dir)
	}
	mode := eval.Offline
	if req.Live {
		mode = eval.Live
		if eval.HasJudge(files) {
			return apiv1.EvalRun{}, fmt.Errorf("%w: a judge assertion runs on oz0 eval's own node, which has the judge: run these cases with oz0 eval --live, or offline here (judges are then skipped)", api.ErrBadEvalRun)
		}
	}
	r := s.evalRuns
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current != nil {
		return apiv1.EvalRun{}, fmt.Errorf("%w: eval run %d is running; wait for it, or stop it", api.ErrEvalBusy, r.current.id)
	}
	if r.ctx.Err() != nil {
		return apiv1.EvalRun{}, errors.New("oz0 dev is stopping")
	}
	reqJSON, _ := jsonutil.Marshal(req)
	run, err := s.store.CreateEvalRun(reqJSON, cases)
	if err != nil {
		return apiv1.EvalRun{}, err
	}
	ctx, cancel := context.WithCancel(r.ctx)
	live := &liveEvalRun{id: run.ID, cancel: cancel}
	r.current = live
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer cancel()
		s.runEvals(ctx, live, files, mode, refs)
	}()
	return apiv1.EvalRun{ID: run.ID, Request: req, Status: store.EvalRunning, StartedAt: run.StartedAt, Cases: cases}, nil
}

// runEvals runs the cases and keeps the run's end.
func (s *Server) runEvals(ctx context.Context, live *liveEvalRun, files []*eval.File, mode eval.Mode, refs []eval.PluginRef) {
	r := s.evalRuns
	// Each case's end and each note is kept as it comes: the feed tells the page, which reads
	// the run again. Kept in turn (eval.Run calls Progress one at a time; notes take r.mu).
	keep := func() {
		data, _ := jsonutil.Marshal(eval.JSONReport{Report: &eval.Report{Results: live.results}})
		if err := s.store.EvalRunProgress(live.id, len(live.results), data, live.notes); err != nil {
			s.log.Warn("eval run's progress not kept", "run", live.id, "err", err)
		}
	}
	opts := eval.Options{Mode: mode, Inbox: true,
		Progress: func(res eval.Result) {
			r.mu.Lock()
			defer r.mu.Unlock()
			live.results = append(live.results, res)
			keep()
		},
		Note: func(msg string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if len(live.notes) < maxRunNotes {
				live.notes = append(live.notes, msg)
				keep()
			}
		},
	}
	report, err := eval.Run(ctx, s.selfClient(), files, opts)
	status, errText := store.EvalDone, ""
	var interrupted *eval.InterruptedError
	switch {
	case errors.As(err, &interrupted):
		status, errText = store.EvalInterrupted, interrupted.Error()
	case err != nil:
		status, errText = store.EvalFailed, err.Error()
	}
	var data json.RawMessage
	done := 0
	if report != nil {
		done = len(report.Results)
		report.Plugins, report.OZ0Version = refs, s.cfg.Version
		out := eval.JSONReport{Report: report}
		if prev := s.previousReport(live.id); prev != nil {
			out.Baseline = eval.Compare(prev, report)
		}
		data, _ = jsonutil.Marshal(out)
	}
	if err := s.store.FinishEvalRun(live.id, status, done, data, errText); err != nil {
		s.log.Warn("eval run not kept", "run", live.id, "err", err)
	}
	r.mu.Lock()
	r.current = nil
	r.mu.Unlock()
	s.log.Info("eval run ended", "run", live.id, "status", status)
}

// previousReport is the report of the latest run before id that has one.
func (s *Server) previousReport(id int64) *eval.Report {
	runs, err := s.store.EvalRuns()
	if err != nil {
		return nil
	}
	for _, run := range runs {
		if run.ID >= id || run.Report == nil {
			continue
		}
		var rep eval.Report
		if json.Unmarshal(run.Report, &rep) == nil && rep.Results != nil {
			return &rep
		}
	}
	return nil
}

func (e evals) Runs() (apiv1.EvalRuns, error) {
	runs, err := e.s.store.EvalRuns()
	if err != nil {
		return apiv1.EvalRuns{}, err
	}
	out := apiv1.EvalRuns{Runs: []apiv1.EvalRun{}}
	for _, run := range runs {
		w := e.wireRun(run)
		w.Report = nil
		out.Runs = append(out.Runs, w)
	}
	return out, nil
}

func (e evals) Run(id int64) (apiv1.EvalRun, error) {
	run, err := e.s.store.GetEvalRun(id)
	if err != nil {
		return apiv1.EvalRun{}, err
	}
	return e.wireRun(run), nil
}

func (e evals) StopRun(id int64) (apiv1.EvalRun, error) {
	r := e.s.evalRuns
	r.mu.Lock()
	if r.current != nil && r.current.id == id {
		r.current.cancel()
	}
	r.mu.Unlock()
	return e.Run(id)
}

// wireRun is a run as the API answers it, as the store keeps it (its results so far while it
// runs).
func (e evals) wireRun(run store.EvalRun) apiv1.EvalRun {
	w := apiv1.EvalRun{ID: run.ID, Status: run.Status, StartedAt: run.StartedAt, EndedAt: run.EndedAt, Error: run.Error, Report: run.Report,
		Cases: run.Cases, Done: run.Done, Notes: run.Notes}
	_ = json.Unmarshal(run.Request, &w.Request)
	if len(w.Report) > 0 {
		var t struct {
			Totals apiv1.EvalTotals `json:"totals"`
		}
		if json.Unmarshal(w.Report, &t) == nil {
			w.Totals = &t.Totals
		}
	}
	return w
}

func pluginNote(name string) string {
	if name == "" {
		return ""
	}
	return " of plugin " + name
}
