package supervisor_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/orchestrator-zero/oz0/fakemodel"
	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/internal/testbin"
	"github.com/orchestrator-zero/oz0/plugin"
	"github.com/orchestrator-zero/oz0/scaffold"
	"github.com/orchestrator-zero/oz0/supervisor"
)

// newTemplatePlugin writes the byo-agent template as `oz0 plugin new acme-triage` does.
func newTemplatePlugin(t testing.TB) string {
	t.Helper()
	parent := t.TempDir()
	_, err := scaffold.Create(scaffold.Options{Name: "acme-triage", Template: "byo-agent", Description: "Sorts support tickets", Parent: parent})
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(parent, "acme-triage")
}

// templateSpec is a session of the template's harness against a fake model API.
func templateSpec(t testing.TB, dir, modelURL string) supervisor.Spec {
	t.Helper()
	instructions, err := os.ReadFile(filepath.Join(dir, "prompts", "acme-triage.md"))
	if err != nil {
		t.Fatal(err)
	}
	input, _ := json.Marshal(ticket)
	return supervisor.Spec{
		Command:   []string{"python", "-m", "acme_triage"}, // as the template's manifest says
		PluginDir: dir,
		Request: harnesskit.SessionRequest{
			Job: "job_01J9Z3", Agent: "acme-triage", Harness: "acme-triage",
			Text: ticket, Input: input, Instructions: string(instructions),
			Model:  harnesskit.Model{Name: "fake-model", Format: plugin.FormatAnthropicMessages, Record: "fake"},
			Tools:  []string{"notify_team"},
			Limits: harnesskit.RequestLimits{MaxSteps: 10},
		},
		Env:     supervisor.Env{AnthropicBaseURL: modelURL, AnthropicAPIKey: "oz0s_test_session_key"},
		Limits:  supervisor.Limits{Timeout: 60e9, Grace: 5e9},
		Decider: supervisor.AllowAll,
		TempDir: t.TempDir(),
	}
}

// The Python template end to end through the supervisor, against the fake model API: the guide's
// acme-triage run, and the transcript docs/protocol.md shows.
func TestPythonTemplateEndToEnd(t *testing.T) {
	testbin.Python(t)
	model := fakemodel.New(nil)
	ts := httptest.NewServer(model)
	defer ts.Close()
	dir := newTemplatePlugin(t)
	sp := templateSpec(t, dir, ts.URL)
	var mu sync.Mutex
	var asks []*supervisor.Ask
	sp.Decider = supervisor.DeciderFunc(func(ctx context.Context, a *supervisor.Ask) supervisor.Decision {
		mu.Lock()
		asks = append(asks, a)
		mu.Unlock()
		return supervisor.Allow(nil)
	})
	end, events := run(t, sp)
	wantStatus(t, end, harnesskit.Completed)
	if got := outputString(t, end); got != reply {
		t.Errorf("output %q, want %q", got, reply)
	}
	if len(asks) != 1 || asks[0].Tool != "notify_team" || string(asks[0].Arguments) != `{"team":"billing","summary":"I was charged twice for my order"}` {
		t.Errorf("asks %+v", asks)
	}
	// What the harness sent, line by line, is the transcript of docs/protocol.md.
	var got []string
	for _, e := range events {
		switch e.Kind {
		case harnesskit.EventSay, harnesskit.EventPermissionRequest, harnesskit.EventPermission, harnesskit.EventToolResult, harnesskit.EventResult:
			data, _ := json.Marshal(e.Message)
			got = append(got, string(data))
		case harnesskit.EventStderr, harnesskit.EventEnd:
		default:
			t.Errorf("unexpected event %s: %+v", e.Kind, e)
		}
	}
	want := testbin.ProtocolTranscript(t, "../docs/protocol.md")[1:] // after the session request
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the session's lines\n%s\nare not the transcript of docs/protocol.md\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The model call went where the environment said, with the headers the protocol asks for.
	reqs := model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls", len(reqs))
	}
	h := reqs[0].Header
	if reqs[0].Path != "/v1/messages" || h.Get("x-api-key") != "oz0s_test_session_key" || h.Get("anthropic-version") != "2023-06-01" ||
		h.Get("Oz0-Job") != "job_01J9Z3" || h.Get("Oz0-Agent") != "acme-triage" || reqs[0].Rule != "triage-charged-twice" {
		t.Errorf("model call %s %v rule %s", reqs[0].Path, h, reqs[0].Rule)
	}
}

// The Go SDK's version of the template's agent, through the supervisor, gives the same answer.
func TestGoSDKTriageEndToEnd(t *testing.T) {
	model := fakemodel.New(nil)
	ts := httptest.NewServer(model)
	defer ts.Close()
	sp := spec(t, "triage")
	instructions, _ := os.ReadFile("../scaffold/templates/byo-agent/prompts/__name__.md")
	sp.Request.Instructions = string(instructions)
	sp.Env = supervisor.Env{AnthropicBaseURL: ts.URL + "/", AnthropicAPIKey: "oz0s_test_session_key"}
	end, events := run(t, sp)
	wantStatus(t, end, harnesskit.Completed)
	if got := outputString(t, end); got != reply {
		t.Errorf("output %q, want %q", got, reply)
	}
	var got []string
	for _, e := range events {
		if e.Message != nil {
			data, _ := json.Marshal(e.Message)
			got = append(got, string(data))
		}
	}
	want := testbin.ProtocolTranscript(t, "../docs/protocol.md")[1:]
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the session's lines\n%s\nare not the transcript\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if reqs := model.Requests(); len(reqs) != 1 || reqs[0].Header.Get("Oz0-Job") != "job_test_1" {
		t.Errorf("model calls %+v", reqs)
	}
}

// Model calls past limits.max_steps are refused by the SDK, with a clear error.
func TestGoSDKStepLimit(t *testing.T) {
	ts := httptest.NewServer(fakemodel.New(nil))
	defer ts.Close()
	sp := spec(t, "steps")
	sp.Request.Limits.MaxSteps = 3
	sp.Env = supervisor.Env{AnthropicBaseURL: ts.URL, AnthropicAPIKey: "k"}
	end, _ := run(t, sp)
	wantStatus(t, end, harnesskit.Completed)
	want := `{"calls":3,"error":"limits.max_steps reached: this session may make 3 model calls and has made 3","step_limit":true}`
	if string(end.Output) != want {
		t.Errorf("output %s, want %s", end.Output, want)
	}
}
