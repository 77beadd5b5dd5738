package recording

import (
	"bytes"
	"net/http/httptest"
	"strings"

	"github.com/orchestrator-zero/oz0/fakemodel"
	"github.com/orchestrator-zero/oz0/gateway"
)

// ScriptAnswers answers a session's model calls from a fake model script, as the fake model
// serving it would, in the gateway's process: the answers of a job that runs on a script rather
// than on a model (an oz0 eval case whose recording is a script, as oz0 job script writes one).
// Each job has its own, so the script's times count that job's calls.
type ScriptAnswers struct {
	fake *fakemodel.Server
}

// NewScriptAnswers answers from script.
func NewScriptAnswers(script *fakemodel.Script) *ScriptAnswers {
	f := fakemodel.New(script)
	f.KeepRequests = -1
	return &ScriptAnswers{fake: f}
}

// Answer implements gateway.Replay: the fake model's answer to the call, a stream kept as one
// chunk (the gateway reads its usage from it as from an upstream's).
func (a *ScriptAnswers) Answer(method, path string, body []byte) (*gateway.Exchange, bool, string) {
	// The fake routes by the path's end: /anthropic/v1/messages and /openai/chat/completions
	// are its /v1/messages and /v1/chat/completions.
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	if strings.HasPrefix(path, "/anthropic/") {
		// The gateway has checked the call as its face takes it; the fake wants the header
		// every Anthropic client sends, which the Replay is not given.
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	a.fake.ServeHTTP(rec, req)
	ex := &gateway.Exchange{Method: method, Path: path, Request: string(body), Status: rec.Code, ContentType: rec.Header().Get("Content-Type")}
	if strings.HasPrefix(ex.ContentType, "text/event-stream") {
		ex.Streamed = true
		ex.Chunks = []gateway.Chunk{{Data: rec.Body.String()}}
	} else {
		ex.Body = rec.Body.String()
	}
	return ex, false, ""
}

// Divergence implements node.Replay: a script answers every call, so a session never departs.
func (a *ScriptAnswers) Divergence() string { return "" }

// WentUpstream implements node.Replay: a script never sends a call upstream.
func (a *ScriptAnswers) WentUpstream() string { return "" }

// Format is the API the recorded calls spoke, "" when none of them is a model call.
func Format(exchanges []gateway.Exchange) gateway.Format {
	for _, ex := range exchanges {
		switch {
		case strings.HasPrefix(ex.Path, "/anthropic/"):
			return gateway.AnthropicMessages
		case strings.HasPrefix(ex.Path, "/openai/"):
			return gateway.OpenAIChat
		}
	}
	return ""
}
