package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/conformance"
	"github.com/orchestrator-zero/oz0/devserver/node"
	"github.com/orchestrator-zero/oz0/devserver/store"
	"github.com/orchestrator-zero/oz0/fakemodel"
	"github.com/orchestrator-zero/oz0/gateway"
	"github.com/orchestrator-zero/oz0/plugin"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

// The harness of these tests appends each session request it gets to RECORD, a file outside its
// plugin, which a sandbox hides: the kit runs them in tier none, as the node does.
const recordingManifest = `apiVersion: oz0/v1
name: shop
version: 0.1.0
runtime: binary
harnesses:
  - name: shop
    command: ["HARNESS", "triage", "RECORD"]
    permissions: true
    tools: [notify_team, refund]
    formats: [anthropic-messages, openai-chat]
  - name: solo
    command: ["HARNESS", "triage", "RECORD"]
    permissions: true
    tools: [notify_team]
    formats: [openai-chat, anthropic-messages]
agents: [agents/]
`

// An agent that sets much, and leaves limits.max_steps out.
const recordingAgent = `name: orders
runtime: harness:shop
instructions: prompts/p.md
model: {use: default, name: fake-sonnet}
input: {schema: {type: object, required: [order]}}
limits: {timeout: 90s, max_tokens: 100000}
harness: {tools: [notify_team], options: {tone: dry, retries: 2}}
`

const orderInput = "{\"order\": \"A-1042\", \"note\": \"charged twice\"}\n"

// TestKitSendsTheRequestTheNodeSends: the kit's plain run of a harness gets, field by field, the
// session request oz0 dev's node sends for a job of the same agent on the same input; only the
// job's id and the session's directories differ.
func TestKitSendsTheRequestTheNodeSends(t *testing.T) {
	noLeaks(t)
	record := filepath.Join(t.TempDir(), "requests.jsonl")
	p := loadPlugin(t, map[string]string{
		"oz0-plugin.yaml":    strings.ReplaceAll(recordingManifest, "RECORD", record),
		"agents/orders.yaml": recordingAgent,
		"prompts/p.md":       "Sort the support ticket.\n",
	})

	runOnNode(t, p, "orders", orderInput)
	rep, err := conformance.Run(context.Background(), p, conformance.Options{Input: orderInput, Harnesses: []string{"shop"}, Grace: 3 * time.Second, Sandbox: sandbox.None})
	if err != nil {
		t.Fatal(err)
	}
	if p, f, _ := rep.Counts(); p != 7 || f != 0 {
		t.Errorf("the kit: %d passed, %d failed: %+v", p, f, rep.Checks)
	}
	reqs := readRequests(t, record)
	if len(reqs) < 2 {
		t.Fatalf("%d session requests recorded", len(reqs))
	}
	byNode, byKit := reqs[0], reqs[1] // the kit's first session is its plain run
	for _, k := range []string{"job", "workdir", "state_dir"} {
		if bytes.Equal(byNode[k], byKit[k]) {
			t.Errorf("%s is %s in both: each session has its own", k, byNode[k])
		}
		delete(byNode, k)
		delete(byKit, k)
	}
	for _, k := range slices.Sorted(keys(byNode, byKit)) {
		if !bytes.Equal(byNode[k], byKit[k]) {
			t.Errorf("%s: the node sends %s, the kit %s", k, byNode[k], byKit[k])
		}
	}
	// The request is the agent's: pinned here so that both cannot drift together unnoticed.
	want := map[string]string{
		"agent": `"orders"`, "harness": `"shop"`, "input": `{"order":"A-1042","note":"charged twice"}`,
		"text":  `"{\"order\": \"A-1042\", \"note\": \"charged twice\"}\n"`,
		"model": `{"name":"fake-sonnet","format":"anthropic-messages","record":"fake"}`,
		"tools": `["notify_team"]`, "limits": `{"max_steps":0,"timeout_s":90}`, "options": `{"retries":2,"tone":"dry"}`,
		"instructions": `"Sort the support ticket.\n"`,
	}
	for k, v := range want {
		if string(byKit[k]) != v {
			t.Errorf("%s is %s, want %s", k, byKit[k], v)
		}
	}
	// The scenarios change only what they are about.
	for i, r := range reqs[2:] {
		for _, k := range []string{"job", "workdir", "state_dir"} {
			delete(r, k)
		}
		for k := range keys(r, byKit) {
			switch {
			case k == "tools" && string(r[k]) == `[]`, k == "limits" && string(r[k]) == `{"max_steps":1,"timeout_s":90}`:
			case !bytes.Equal(r[k], byKit[k]):
				t.Errorf("session %d of the kit changed %s: %s", i+2, k, r[k])
			}
		}
	}
}

// TestKitRequestForAHarnessNoAgentUses: what an agent named after the harness would get with
// nothing set.
func TestKitRequestForAHarnessNoAgentUses(t *testing.T) {
	noLeaks(t)
	record := filepath.Join(t.TempDir(), "requests.jsonl")
	p := loadPlugin(t, map[string]string{
		"oz0-plugin.yaml":    strings.ReplaceAll(recordingManifest, "RECORD", record),
		"agents/orders.yaml": recordingAgent,
		"prompts/p.md":       "Sort the support ticket.\n",
	})
	if _, err := conformance.Run(context.Background(), p, conformance.Options{Harnesses: []string{"solo"}, Grace: 3 * time.Second, Sandbox: sandbox.None}); err != nil {
		t.Fatal(err)
	}
	got := readRequests(t, record)[0]
	want := map[string]string{
		"agent": `"solo"`, "harness": `"solo"`, "input": `"` + conformance.DefaultInput + `"`, "text": `"` + conformance.DefaultInput + `"`,
		"instructions": `""`, "model": `{"name":"fake-model","format":"openai-chat","record":"fake"}`,
		"tools": `["notify_team"]`, "limits": `{"max_steps":0,"timeout_s":0}`, "options": `{}`,
	}
	for k, v := range want {
		if string(got[k]) != v {
			t.Errorf("%s is %s, want %s", k, got[k], v)
		}
	}
}

// runOnNode runs one job of agent on a node like oz0 dev's, with the fake record alone, and
// waits for its end.
func runOnNode(t *testing.T, p *plugin.Plugin, agent, input string) {
	t.Helper()
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	upstream := httptest.NewServer(fakemodel.New(nil))
	defer upstream.Close()
	keys := gateway.NewMemResolver()
	gw, err := gateway.New(gateway.Config{Resolver: keys})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	gwServer := httptest.NewServer(gw)
	defer gwServer.Close()
	n := node.New(node.Config{
		Store: st, Keys: keys, Gateway: gw, GatewayURL: gwServer.URL,
		Plugins: staticPlugins{p}, Records: staticRecords{gateway.FakeRecord(upstream.URL)},
		TempDir: t.TempDir(), Grace: 3 * time.Second,
	})
	defer n.Close(context.Background())
	j, err := n.Submit(agent, input)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := st.Subscribe(t.Context(), j.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range sub.C {
	}
	if end, err := st.GetJob(j.ID); err != nil || end.Status != store.StatusSucceeded {
		t.Fatalf("the node's job ended %s: %s (%v)", end.Status, end.Reason, err)
	}
}

type staticPlugins []*plugin.Plugin

func (s staticPlugins) Plugins() []*plugin.Plugin { return s }

type staticRecords []gateway.Record

func (s staticRecords) Records() []gateway.Record { return s }

// readRequests reads the session requests the harness recorded, each as its fields.
func readRequests(t *testing.T, name string) []map[string]json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]json.RawMessage
	for line := range strings.Lines(string(data)) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		out = append(out, m)
	}
	return out
}

func keys(ms ...map[string]json.RawMessage) func(func(string) bool) {
	return func(yield func(string) bool) {
		seen := map[string]bool{}
		for _, m := range ms {
			for k := range m {
				if !seen[k] {
					seen[k] = true
					if !yield(k) {
						return
					}
				}
			}
		}
	}
}

// TestKitStandsTheFakeInForANamedRecord: an agent on a record the kit does not have runs on the
// fake model under that record's name.
func TestKitStandsTheFakeInForANamedRecord(t *testing.T) {
	noLeaks(t)
	record := filepath.Join(t.TempDir(), "requests.jsonl")
	p := loadPlugin(t, map[string]string{
		"oz0-plugin.yaml":    strings.ReplaceAll(recordingManifest, "RECORD", record),
		"agents/orders.yaml": strings.Replace(recordingAgent, "{use: default, name: fake-sonnet}", "{use: anthropic}", 1),
		"prompts/p.md":       "Sort the support ticket.\n",
	})
	rep, err := conformance.Run(context.Background(), p, conformance.Options{Input: orderInput, Harnesses: []string{"shop"}, Grace: 3 * time.Second, Sandbox: sandbox.None})
	if err != nil {
		t.Fatal(err)
	}
	if p, f, _ := rep.Counts(); p != 7 || f != 0 {
		t.Errorf("the kit: %d passed, %d failed: %+v", p, f, rep.Checks)
	}
	if got := string(readRequests(t, record)[0]["model"]); got != `{"name":"fake-model","format":"anthropic-messages","record":"anthropic"}` {
		t.Errorf("model %s", got)
	}
}
