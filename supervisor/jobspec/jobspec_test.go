package jobspec

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/gateway"
	"github.com/orchestrator-zero/oz0/plugin"
	"github.com/orchestrator-zero/oz0/supervisor"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

func testPlugin() (*plugin.Plugin, *plugin.Harness, *plugin.Agent) {
	p := &plugin.Plugin{Dir: "/plugins/shop", Manifest: plugin.Manifest{Name: "shop", Harnesses: []plugin.Harness{{
		Name: "shop", Command: []string{"python", "-m", "shop"}, Permissions: true,
		Tools: []string{"lookup_order", "refund"}, Formats: []string{"openai-chat", "anthropic-messages"},
	}}}}
	a := &plugin.Agent{Name: "orders", Runtime: "harness:shop", InstructionsText: "Help with orders.\n",
		Model:  plugin.Model{Use: "anthropic"},
		Limits: plugin.Limits{MaxSteps: 3, Timeout: "90s", MaxTokens: 5000, MaxCostUSD: 0.5}}
	a.Harness.Options = map[string]any{"tone": "dry"}
	p.Agents = []*plugin.Agent{a}
	return p, &p.Manifest.Harnesses[0], a
}

var testRecords = []gateway.Record{
	{Name: "anthropic", Formats: []gateway.Format{gateway.AnthropicMessages}, Model: "claude-sonnet-4-5"},
	gateway.FakeRecord("http://127.0.0.1:9"),
}

func TestRequestOfAnAgent(t *testing.T) {
	p, h, a := testPlugin()
	m, err := ResolveModel(testRecords, h, a)
	if err != nil {
		t.Fatal(err)
	}
	// The record the agent names, and the harness's first format that record takes.
	if m.Record.Name != "anthropic" || m.Format != gateway.AnthropicMessages || m.Name != "claude-sonnet-4-5" {
		t.Errorf("model %+v", m)
	}
	j := Job{ID: "job_1", Plugin: p, Harness: h, Agent: a, Input: TextInput("where is A-1?"), Model: m}
	got, _ := json.Marshal(j.Request())
	want := `{"type":"session","protocol":0,"job":"job_1","agent":"orders","harness":"shop","text":"where is A-1?","input":"where is A-1?",` +
		`"instructions":"Help with orders.\n","model":{"name":"claude-sonnet-4-5","format":"anthropic-messages","record":"anthropic"},` +
		`"tools":["lookup_order","refund"],"limits":{"max_steps":3,"timeout_s":0},"workdir":"","state_dir":"","options":{"tone":"dry"}}`
	if string(got) != want {
		t.Errorf("request\n got %s\nwant %s", got, want)
	}
	g := j.Grant()
	if g.Job != "job_1" || g.Agent != "orders" || g.Record.Name != "anthropic" ||
		g.Limits != (gateway.Limits{MaxSteps: 3, MaxTokens: 5000, MaxCostUSD: 0.5}) {
		t.Errorf("grant %+v", g)
	}
	sb := supervisor.Sandbox{Tier: sandbox.Strict, Hide: []string{"/state"}}
	s := j.Spec("http://127.0.0.1:7/gateway", "key_1", sb)
	if s.Sandbox.Tier != sandbox.Strict || len(s.Sandbox.Hide) != 1 {
		t.Errorf("the spec's sandbox is %+v, want the node's", s.Sandbox)
	}
	if s.Limits.Timeout != 90*time.Second || s.PluginDir != "/plugins/shop" || strings.Join(s.Command, " ") != "python -m shop" ||
		s.Env.AnthropicBaseURL != "http://127.0.0.1:7/gateway/anthropic" || s.Env.OpenAIBaseURL != "http://127.0.0.1:7/gateway/openai" ||
		s.Env.AnthropicAPIKey != "key_1" || s.Env.OpenAIAPIKey != "key_1" {
		t.Errorf("spec %+v", s)
	}
	// The request's tools are its own: changing them changes nothing of the plugin's.
	r := j.Request()
	r.Tools[0] = "changed"
	if h.Tools[0] != "lookup_order" {
		t.Error("the request shares the harness's tools")
	}
}

func TestRequestOfAHarnessNoAgentUses(t *testing.T) {
	p, h, _ := testPlugin()
	h.Tools = nil
	m, err := ResolveModel(testRecords, h, nil)
	if err != nil {
		t.Fatal(err)
	}
	j := Job{ID: "job_2", Plugin: p, Harness: h, Input: TextInput("hi"), Model: m}
	got, _ := json.Marshal(j.Request())
	want := `{"type":"session","protocol":0,"job":"job_2","agent":"shop","harness":"shop","text":"hi","input":"hi","instructions":"",` +
		`"model":{"name":"claude-sonnet-4-5","format":"anthropic-messages","record":"anthropic"},"tools":[],` +
		`"limits":{"max_steps":0,"timeout_s":0},"workdir":"","state_dir":"","options":{}}`
	if string(got) != want {
		t.Errorf("request\n got %s\nwant %s", got, want)
	}
	if g := j.Grant(); g.Agent != "shop" || g.Limits != (gateway.Limits{}) {
		t.Errorf("grant %+v", g)
	}
	if s := j.Spec("http://gw", "k", supervisor.Sandbox{}); s.Limits.Timeout != 0 {
		t.Errorf("timeout %v", s.Limits.Timeout)
	}
}

func TestResolveModel(t *testing.T) {
	_, h, a := testPlugin()
	a.Model = plugin.Model{Use: "default", Name: "my-model"}
	m, err := ResolveModel(testRecords[1:], h, a)
	if err != nil || m.Record.Name != "fake" || m.Format != gateway.OpenAIChat || m.Name != "my-model" {
		t.Errorf("default on the fake: %+v %v", m, err)
	}
	a.Model.Use = "openai"
	if _, err := ResolveModel(testRecords, h, a); err == nil || !strings.Contains(err.Error(), "there is no provider record openai") {
		t.Errorf("an unknown record: %v", err)
	}
}
