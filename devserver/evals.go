package devserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/devserver/api"
	"github.com/orchestrator-zero/oz0/eval"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
	"github.com/orchestrator-zero/oz0/internal/textclip"
	"github.com/orchestrator-zero/oz0/lint/evalfile"
	"github.com/orchestrator-zero/oz0/plugin"
	"github.com/orchestrator-zero/oz0/schemas"
)

// The dev UI's eval cases and runs go through oz0 eval's engine (package eval), as `oz0 eval add`
// and `oz0 eval --dev` do: the engine reads jobs and runs cases through the control API, here the
// server's own, called in memory (selfClient).

// evals serves the API's eval calls (api.Evals).
type evals struct{ s *Server }

// selfClient is a client of the server's own API, connected in memory.
func (s *Server) selfClient() *client.Client {
	s.selfOnce.Do(func() {
		s.selfAPI = client.NewDial(s.Context(), s.self.dialSelf((&net.Dialer{}).DialContext))
	})
	return s.selfAPI
}

// pluginOf is the plugin a job's agent is of.
func (s *Server) pluginOf(agent, name string) *plugin.Plugin {
	for _, p := range s.Plugins() {
		if name != "" && p.Manifest.Name != name {
			continue
		}
		if p.Agent(agent) != nil {
			return p
		}
	}
	return nil
}

func (e evals) Case(ctx context.Context, id string, req apiv1.EvalCaseRequest) (apiv1.EvalCase, error) {
	s := e.s
	j, err := s.store.GetJob(id)
	if err != nil {
		return apiv1.EvalCase{}, err
	}
	p := s.pluginOf(j.Agent, j.Plugin)
	if p == nil {
		return apiv1.EvalCase{}, fmt.Errorf("%w: the plugins served have no agent %s now, whose job %s is", api.ErrBadEvalCase, j.Agent, id)
	}
	dir := filepath.Join(p.Dir, evalfile.Dir)
	prop, err := eval.ProposeCase(ctx, s.selfClient(), id, dir, eval.CaseRequest{File: req.File, Name: req.Name}, schemas.URLAt(s.ref(), evalfile.SchemaName))
	if err != nil {
		return apiv1.EvalCase{}, err // an eval.ErrBadCase is the API's ErrBadEvalCase
	}
	c := apiv1.EvalCase{Plugin: p.Manifest.Name, File: prop.File, Path: path.Join(evalfile.Dir, prop.File), Name: prop.Name,
		Agent: prop.Agent, Job: prop.Job, Existing: prop.Existing, YAML: prop.YAML, CaseYAML: prop.CaseYAML,
		Recording: path.Join(evalfile.Dir, prop.Recording), Notes: prop.Notes}
	if !req.Write {
		return c, nil
	}
	if err := writable(p.Dir); err != nil {
		return c, err
	}
	err = eval.WriteCase(dir, prop)
	switch {
	case readOnly(err):
		return c, fmt.Errorf("%w: cannot write %s in %s: %v; save the case from a checkout oz0 dev may write (oz0 eval add %s there)", api.ErrReadOnly, c.Path, p.Dir, err, id)
	case err != nil:
		return c, err
	}
	c.Written = true
	s.log.Info("eval case written", "job", id, "file", c.Path, "case", c.Name)
	return c, nil
}

// writable refuses a plugin the dev server may not write: its directory on a read-only file
// system, or not the server's to write.
func writable(dir string) error {
	if err := syscall.Access(dir, 2 /* W_OK */); err != nil {
		return fmt.Errorf("%w: the plugin in %s is read-only for oz0 dev (%v): eval cases are written into its %s directory", api.ErrReadOnly, dir, err, evalfile.Dir)
	}
	return nil
}

func readOnly(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
}

func (e evals) Files() (apiv1.EvalFiles, error) {
	out := apiv1.EvalFiles{Files: []apiv1.EvalFileInfo{}}
	for _, p := range e.s.Plugins() {
		dir := filepath.Join(p.Dir, evalfile.Dir)
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return out, err
		}
		for _, en := range entries {
			if !evalfile.IsFile(en) {
				continue
			}
			info := apiv1.EvalFileInfo{Plugin: p.Manifest.Name, File: en.Name(), Path: path.Join(evalfile.Dir, en.Name()),
				Name: e.s.evalName(p, en.Name()), Cases: []apiv1.EvalCaseInfo{}}
			data, ds, err := evalfile.Read(filepath.Join(dir, en.Name()), info.Path)
			if err != nil {
				return out, err
			}
			var f *evalfile.File
			if len(ds) == 0 {
				f, ds = evalfile.Parse(info.Path, data)
			}
			if f != nil {
				info.Agent = f.Agent
				if f.Agent != "" && p.Agent(f.Agent) == nil {
					info.Problems = append(info.Problems, fmt.Sprintf("%s:%d:%d: the plugin has no agent `%s`", info.Path, f.AgentLine, f.AgentCol, f.Agent))
				}
				for _, c := range f.Cases {
					ci := apiv1.EvalCaseInfo{Name: c.Name, Line: c.Line, Source: string(c.Source), Asserts: []apiv1.EvalAssertInfo{}}
					for _, a := range c.Asserts {
						v, _ := jsonutil.Marshal(a.Value)
						ci.Asserts = append(ci.Asserts, apiv1.EvalAssertInfo{Kind: a.Kind, Line: a.Line, Col: a.Col, Value: textclip.ClipN(strings.TrimSpace(string(v)), 200)})
					}
					info.Cases = append(info.Cases, ci)
				}
			}
			for _, d := range ds {
				info.Problems = append(info.Problems, fmt.Sprintf("%s:%d:%d: %s", info.Path, d.Line, d.Col, d.Message))
			}
			out.Files = append(out.Files, info)
		}
	}
	return out, nil
}
