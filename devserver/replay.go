package devserver

import (
	"cmp"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/devserver/api"
	"github.com/orchestrator-zero/oz0/devserver/conversation"
	"github.com/orchestrator-zero/oz0/devserver/node"
	"github.com/orchestrator-zero/oz0/devserver/recording"
	"github.com/orchestrator-zero/oz0/devserver/store"
	"github.com/orchestrator-zero/oz0/fakemodel"
	"github.com/orchestrator-zero/oz0/gateway"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
	"github.com/orchestrator-zero/oz0/schemas"
)

// MaxRecordingBytes bounds what is kept of one job's model calls: past it, its later calls are
// kept as truncated (what they were, without their bodies, and a Cut that says why), and a replay
// stops there.
const MaxRecordingBytes = 64 << 20

// recordedBytes counts what is kept of each live job's model calls.
type recordedBytes struct {
	mu    sync.Mutex
	bytes map[string]int
}

// take counts n bytes of job's; false once the job is over MaxRecordingBytes.
func (r *recordedBytes) take(job string, n int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bytes == nil {
		r.bytes = map[string]int{}
	}
	if r.bytes[job]+n > MaxRecordingBytes {
		r.bytes[job] = MaxRecordingBytes + 1
		return false
	}
	r.bytes[job] += n
	return true
}

func (r *recordedBytes) forget(job string) {
	r.mu.Lock()
	delete(r.bytes, job)
	r.mu.Unlock()
}

// exchangeData is a recorded model call of job as the store keeps it with its model_call event,
// truncated once the job's recording is over its bound.
func (s *Server) exchangeData(job string, ex *gateway.Exchange) json.RawMessage {
	if !s.recorded.take(job, len(ex.Request)+len(ex.Body)+chunkBytes(ex)) {
		ex = &gateway.Exchange{Method: ex.Method, Path: ex.Path, Query: ex.Query, Status: ex.Status, Streamed: ex.Streamed, Usage: ex.Usage, Gateway: ex.Gateway,
			Truncated: true, Cut: fmt.Sprintf("the job's kept model calls reached the bound of %s a job, so this call's request and answer were not kept", gateway.SizeText(MaxRecordingBytes))}
	}
	b, err := jsonutil.Marshal(ex)
	if err != nil { // an Exchange is strings and numbers: it always encodes
		s.log.Warn("model call not kept for replay", "job", job, "err", err)
		return nil
	}
	return b
}

func chunkBytes(ex *gateway.Exchange) int {
	n := 0
	for _, c := range ex.Chunks {
		n += len(c.Data)
	}
	return n
}

// recording loads a job and its recorded model calls; a live job, or one whose calls were not
// recorded, is an error.
func (s *Server) recording(id string, mustHaveEnded bool) (store.Job, []gateway.Exchange, error) {
	j, err := s.store.GetJob(id)
	if err != nil {
		return store.Job{}, nil, err
	}
	if mustHaveEnded && !j.Status.Terminal() {
		return j, nil, fmt.Errorf("%w: job %s is %s; replay it once it has ended", api.ErrLive, id, j.Status)
	}
	raw, err := s.store.Exchanges(id)
	if err != nil {
		return j, nil, err
	}
	if len(raw) == 0 && j.Usage.ModelCalls > 0 {
		return j, nil, fmt.Errorf("%w: job %s made %d model call(s) that were not kept; oz0 dev was started with --no-record, or the job with oz0 run --no-record; run it again without", api.ErrNotRecorded, id, j.Usage.ModelCalls)
	}
	exs, err := recording.Decode(raw)
	return j, exs, err
}

// SubmitRecorded starts a job whose model calls are kept (record), or not, whatever oz0 dev keeps.
func (s *Server) SubmitRecorded(agent, input string, record bool) (store.Job, error) {
	return s.node.SubmitWith(agent, input, node.SubmitOptions{Record: record, NoRecord: !record})
}

// Replay starts a new job of the agent of job id with its input, on its model, its model calls
// answered from id's recording; with upstream, calls from the first that departs from the
// recording go to the record's upstream.
func (s *Server) Replay(id string, upstream bool) (store.Job, error) {
	j, exs, err := s.recording(id, true)
	if err != nil {
		return store.Job{}, err
	}
	return s.node.SubmitWith(j.Agent, j.InputText, node.SubmitOptions{
		Replay: recording.NewReplay(j.ID, exs, s.secrets.Masker(), upstream),
		Model:  &node.ModelAs{Record: j.ModelRecord, Name: j.ModelName, Format: recording.Format(exs)},
		Record: s.cfg.Record,
		Origin: &store.Origin{Job: j.ID, How: store.OriginReplay},
	})
}

// RunAgain starts a job of the agent of job from, on input, on the agent's model as it resolves
// now, linked to from.
func (s *Server) RunAgain(from, agent, input string) (store.Job, error) {
	j, err := s.store.GetJob(from)
	if err != nil {
		return store.Job{}, err
	}
	if agent != "" && agent != j.Agent {
		return store.Job{}, fmt.Errorf("%w: job %s is agent %s's, not %s's", api.ErrOtherAgent, from, j.Agent, agent)
	}
	return s.node.SubmitWith(j.Agent, input, node.SubmitOptions{Origin: &store.Origin{Job: j.ID, How: store.OriginRunAgain}})
}

// SubmitAnswered starts a job of agent on input whose model calls are answered as a says: from
// recorded calls (on the record and model they were made on), or from a fake model script (on
// the agent's model); its own calls are kept when record.
func (s *Server) SubmitAnswered(agent, input string, a apiv1.Answers, record bool) (store.Job, error) {
	opts := node.SubmitOptions{Record: record, NoRecord: !record}
	switch {
	case a.Script != "":
		script, err := fakemodel.ParseScript(cmp.Or(a.ScriptName, "the answers' script"), []byte(a.Script))
		if err != nil {
			return store.Job{}, fmt.Errorf("%w: %v", api.ErrBadAnswers, err)
		}
		opts.Replay = recording.NewScriptAnswers(script)
	case len(a.Calls) > 0:
		exs, err := recording.Decode(a.Calls)
		if err != nil {
			return store.Job{}, fmt.Errorf("%w: %v", api.ErrBadAnswers, err)
		}
		opts.Replay = recording.NewReplay(cmp.Or(a.Job, "(unnamed)"), exs, s.secrets.Masker(), false)
		opts.Model = &node.ModelAs{Record: a.Record, Name: a.Model, Format: recording.Format(exs)}
	default:
		return store.Job{}, fmt.Errorf("%w: answers need recorded calls or a script", api.ErrBadAnswers)
	}
	return s.node.SubmitWith(agent, input, opts)
}

// Script is a job's recorded model calls as a fake model script.
func (s *Server) Script(id string) ([]byte, error) {
	j, exs, err := s.recording(id, false)
	if err != nil {
		return nil, err
	}
	if len(exs) == 0 {
		return nil, fmt.Errorf("%w: job %s has no kept model call to write as a script", api.ErrNotRecorded, j.ID)
	}
	ref := s.ref()
	// The script shows the calls decoded: a secret they escaped is masked first.
	mask := s.secrets.Masker()
	for i := range exs {
		conversation.MaskExchange(&exs[i], mask)
	}
	return recording.Script(j.ID, j.InputText, exs, schemas.URLAt(ref, fakemodel.SchemaName))
}

// ref is the git ref of oz0's repository whose schemas the files the server writes point at.
func (s *Server) ref() string { return cmp.Or(s.cfg.Ref, "main") }
