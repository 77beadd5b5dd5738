package devserver

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/orchestrator-zero/oz0/api/apiv1"
)

// A session's calls are metered in the order it made them, and the job ends after the last:
// 1,000 calls made back to back, each as soon as the last answered, while the meter writes to
// the store after the answers have gone.
func TestSessionCallsMeteredInOrder(t *testing.T) {
	const n = 1000
	bin := buildTestHarness(t)
	_, c := startServer(t, goPlugin(t, "caller", bin, "calls", "1000"))
	steps := []int{}
	ended := false
	_, _, st, err := runJob(context.Background(), c, "caller", "go", func(ev apiv1.Event) {
		switch {
		case ev.Type == apiv1.EventModelCall:
			if ended {
				t.Errorf("a model_call event after the job's end: %s", ev.Data)
			}
			var d struct {
				Step   int `json:"step"`
				Status int `json:"status"`
			}
			if err := json.Unmarshal(ev.Data, &d); err != nil || d.Status != 200 {
				t.Errorf("model_call %s: %v", ev.Data, err)
			}
			steps = append(steps, d.Step)
		case ev.Terminal():
			ended = true
		}
	})
	if err != nil || st != apiv1.StatusSucceeded {
		t.Fatalf("job: %v %s", err, st)
	}
	if len(steps) != n {
		t.Fatalf("%d model_call events, want %d", len(steps), n)
	}
	for i, s := range steps {
		if s != i+1 {
			t.Fatalf("model_call event %d is step %d: the calls were metered out of order (%v…)", i+1, s, steps[max(0, i-3):min(len(steps), i+4)])
		}
	}
}
