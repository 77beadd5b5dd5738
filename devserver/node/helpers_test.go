package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/devserver/node"
	"github.com/orchestrator-zero/oz0/devserver/store"
	"github.com/orchestrator-zero/oz0/fakemodel"
	"github.com/orchestrator-zero/oz0/gateway"
	"github.com/orchestrator-zero/oz0/internal/testbin"
	"github.com/orchestrator-zero/oz0/lint"
	"github.com/orchestrator-zero/oz0/plugin"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// The plugin of the tests: harness NAME runs the test harness in mode NAME; agent NAME runs on
// harness NAME.
const manifestHead = `apiVersion: oz0/v1
name: shop
version: 0.1.0
runtime: binary
agents: [agents/]
harnesses:
`

// loadPlugin makes a plugin with a harness and an agent for each mode (the agent's YAML may add
// to the agent definition), and loads it. A mode "NAME=MODE ARG" is harness and agent NAME
// running the test harness in MODE with ARG.
func loadPlugin(t *testing.T, agents map[string]string) *plugin.Plugin {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"prompts/p.md": "Sort the support ticket.\n"}
	manifest := manifestHead
	for mode, extra := range agents {
		argv := []string{testbin.Build(t, testbin.TestHarness), mode}
		if name, rest, ok := strings.Cut(mode, "="); ok {
			mode = name
			argv = append(argv[:1], strings.Fields(rest)...)
		}
		command, _ := json.Marshal(argv)
		manifest += fmt.Sprintf("  - name: %s\n    command: %s\n    permissions: true\n    tools: [notify_team]\n    formats: [anthropic-messages]\n", mode, command)
		files["agents/"+mode+".yaml"] = fmt.Sprintf("name: %s\nruntime: harness:%s\ninstructions: prompts/p.md\n%s", mode, mode, extra)
	}
	files["oz0-plugin.yaml"] = manifest
	for name, data := range files {
		full := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, rep, err := lint.Load(dir)
	if err != nil {
		t.Fatalf("%v\n%v", err, rep)
	}
	return p
}

type plugins []*plugin.Plugin

func (p plugins) Plugins() []*plugin.Plugin { return p }

type records []gateway.Record

func (r records) Records() []gateway.Record { return r }

// world is a node with a real store, the gateway and the fake model behind it.
type world struct {
	node    *node.Node
	store   *store.Store
	meter   *gateway.MemMeter
	gw      *gateway.Gateway
	tempDir string
}

// newWorld starts a node over p; change, when given, edits its Config first. The node, the
// servers and the store are closed at the end of the test, and the test fails if a session left
// a process, a directory or a goroutine behind.
func newWorld(t *testing.T, p *plugin.Plugin, change func(*node.Config)) *world {
	t.Helper()
	return newWorldOn(t, p, t.TempDir(), store.Options{}, change)
}

// newWorldOn is newWorld with its store in stateDir, opened with opts.
func newWorldOn(t *testing.T, p *plugin.Plugin, stateDir string, opts store.Options, change func(*node.Config)) *world {
	t.Helper()
	goroutines := runtime.NumGoroutine()
	w := &world{meter: &gateway.MemMeter{}, tempDir: t.TempDir()}
	st, err := store.OpenWith(stateDir, opts)
	if err != nil {
		t.Fatal(err)
	}
	w.store = st
	upstream := httptest.NewServer(fakemodel.New(nil))
	keys := gateway.NewMemResolver()
	gw, err := gateway.New(gateway.Config{Resolver: keys, Meter: w.meter})
	if err != nil {
		t.Fatal(err)
	}
	w.gw = gw
	gwServer := httptest.NewServer(gw)
	cfg := node.Config{
		Store: st, Keys: keys, Gateway: gw, GatewayURL: gwServer.URL,
		Plugins: plugins{p}, Records: records{gateway.FakeRecord(upstream.URL)},
		TempDir: w.tempDir, Grace: 3 * time.Second,
		// As the dev server waits for its meter: the job's calls are metered before it ends.
		BeforeEnd: func(string) { gw.Flush() },
	}
	if change != nil {
		change(&cfg)
	}
	w.node = node.New(cfg)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := w.node.Close(ctx); err != nil {
			t.Errorf("closing the node: %v", err)
		}
		gwServer.Close()
		gw.Close()
		upstream.Close()
		if err := st.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
		if entries, _ := os.ReadDir(w.tempDir); len(entries) > 0 {
			t.Errorf("the sessions left %d entries in their TempDir", len(entries))
		}
		if pids := testbin.Running(testbin.Build(t, testbin.TestHarness)); len(pids) > 0 {
			t.Errorf("test harness processes are left: %v", pids)
		}
		testbin.CheckGoroutines(t, goroutines)
	})
	return w
}

// submit starts a job that must be accepted.
func (w *world) submit(t *testing.T, agent, input string) store.Job {
	t.Helper()
	j, err := w.node.Submit(agent, input)
	if err != nil {
		t.Fatalf("Submit(%s): %v", agent, err)
	}
	return j
}

// events follows a job's events until its end, telling each to seen (which may be nil) as it
// comes; it returns them all and the job as it ended.
func (w *world) events(t *testing.T, id string, seen func(store.Event)) ([]store.Event, store.Job) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sub, err := w.store.Subscribe(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var evs []store.Event
	for ev := range sub.C {
		evs = append(evs, ev)
		if seen != nil {
			seen(ev)
		}
	}
	if err := sub.Err(); err != nil {
		t.Fatalf("the job's stream ended with %v after %d events", err, len(evs))
	}
	j, err := w.store.GetJob(id)
	if err != nil {
		t.Fatal(err)
	}
	return evs, j
}

// types lists the events' types, a status event as status:STATUS.
func types(evs []store.Event) string {
	var out []string
	for _, e := range evs {
		typ := e.Type
		if typ == store.EventStatus {
			var d struct{ Status string }
			_ = json.Unmarshal(e.Data, &d)
			typ += ":" + d.Status
		}
		out = append(out, typ)
	}
	return strings.Join(out, " ")
}
