package jobspec

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/gateway"
	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
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
	if _, err := ResolveModel(testRecords, h, a); !errors.Is(err, gateway.ErrNoModel) || !strings.Contains(err.Error(), "the record openai is the tenant's once its key is set (oz0 secret set OPENAI_API_KEY)") {
		t.Errorf("a record whose key is not set: %v", err)
	}
	// A near miss of a name it may give is a typo: the name meant is said.
	a.Model.Use = "defualt"
	if _, err := ResolveModel(testRecords, h, a); !errors.Is(err, gateway.ErrNoModel) || !strings.HasSuffix(err.Error(), "there is no model record or alias defualt (the alias: default; the records: anthropic, openai, fake); did you mean `default`?") {
		t.Errorf("a typo: %v", err)
	}
	a.Model.Use = "gemini"
	if _, err := ResolveModel(testRecords, h, a); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("a name near none: %v", err)
	}
}

// The largest input a job takes fits the session request's line with a prompt of the largest
// size lint reads (1 MiB) of ordinary text, whatever the input's characters (control characters
// take six bytes each as JSON) and whether the agent takes text or JSON. Before, inputs of up to
// 16 MiB were taken, and one over about 4 MiB failed every session: the request line carries it
// twice.
func TestLargestInputFitsTheRequestLine(t *testing.T) {
	p, h, a := testPlugin()
	a.InstructionsText = strings.Repeat("Sort the \"ticket\" into a team, and say why.\n", (1<<20)/45)
	jsonAgent := *a
	jsonAgent.Input.Kind = "json"
	fill := func(unit string, json bool) string { // as many units as fit the limit as a JSON string
		n := (apiv1.MaxInput - 8) / (apiv1.InputSize(unit) - 2)
		if json {
			return `["` + strings.Repeat(unit, n/2) + `"]`
		}
		return strings.Repeat(unit, n)
	}
	for name, c := range map[string]struct {
		agent *plugin.Agent
		input string
	}{
		"text":                   {a, fill("a", false)},
		"line breaks":            {a, fill("\n", false)},
		"control characters":     {a, fill("\x01", false)},
		"JSON":                   {&jsonAgent, fill("a", true)},
		"JSON of escaped quotes": {&jsonAgent, fill(`\"`, true)},
	} {
		in, err := ParseInput(c.agent, c.input)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		j := Job{ID: "job_" + strings.Repeat("x", 20), Plugin: p, Harness: h, Agent: c.agent, Input: in, Model: Model{Name: "claude-sonnet-4-5"}}
		if err := j.CheckRequest(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		r := j.Request()
		r.Workdir, r.StateDir = "/"+strings.Repeat("w", 4094), "/"+strings.Repeat("s", 4094)
		r.Protocol, r.Limits.TimeoutS = harnesskit.Protocol, 86400
		line, err := jsonutil.Marshal(r)
		if err != nil || len(line)+1 > harnesskit.MaxLine {
			t.Errorf("%s: a request line of %d bytes, over %d (%v)", name, len(line)+1, harnesskit.MaxLine, err)
		}
	}
}

// An input over the limit, as a JSON string, is refused at once, for every agent, saying so;
// an agent whose own instructions leave no room for an input within it is refused at the job,
// saying what takes the room.
func TestInputOverTheLimitRefused(t *testing.T) {
	p, h, a := testPlugin()
	for _, input := range []string{strings.Repeat("a", apiv1.MaxInput+1), strings.Repeat("\x01", apiv1.MaxInput/5)} {
		_, err := ParseInput(a, input)
		var inErr *InputError
		if !errors.As(err, &inErr) || !strings.HasPrefix(err.Error(), "the input is ") || !strings.HasSuffix(err.Error(), " a job takes; give a shorter one") {
			t.Errorf("an input of %d bytes: %v", len(input), err)
		}
	}
	a.InstructionsText = strings.Repeat("\x01", 1<<20) // 6 MiB as JSON
	in, err := ParseInput(a, strings.Repeat("a", 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	j := Job{Plugin: p, Harness: h, Agent: a, Input: in}
	err = j.CheckRequest()
	var inErr *InputError
	if !errors.As(err, &inErr) || !strings.Contains(err.Error(), "the session request would be over the protocol's line of 8 MiB: the input takes 2097156 bytes in it (as text and as JSON), agent orders's instructions 6291458") {
		t.Errorf("instructions that leave no room: %v", err)
	}
}
