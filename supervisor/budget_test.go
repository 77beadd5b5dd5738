package supervisor_test

import (
	"testing"

	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/supervisor"
)

// A harness that says more than its limits.max_event_bytes fails, and what comes past the budget
// is not decoded: the sink never gets it. The says are longer than the read buffer, so they are
// read in pieces and counted as they pass: the sink gets the text of 15 lines and of the 16th up
// to the budget.
func TestEventBytesBudget(t *testing.T) {
	sp := spec(t, "saysflood", "200x65536") // 12.5 MiB
	sp.Limits.EventBytes = 1 << 20
	var text int64
	var last int64
	sp.Sink = func(e harnesskit.Event) {
		if m, ok := e.Message.(harnesskit.Say); ok && e.Kind == harnesskit.EventSay {
			text += int64(len(m.Text))
			last = e.Line
		}
	}
	end, _ := run(t, sp)
	wantStatus(t, end, harnesskit.Failed, "the harness wrote events past its limits.max_event_bytes of 1 MiB on stdout")
	t.Log(end.Reason)
	if text > 1<<20 || text < 15*65536 || last != 16 {
		t.Errorf("the sink got %d bytes of says, the last of line %d; want at least the 15 lines that fit in 1 MiB, at most 1 MiB, of up to line 16", text, last)
	}
}

// The same for the bytes a second: a harness that writes 12.5 MiB at once against 1 MiB a second.
func TestEventBytesPerSecondBudget(t *testing.T) {
	sp := spec(t, "saysflood", "200x65536")
	sp.Limits.EventBytesPerSecond = 1 << 20
	end, _ := run(t, sp)
	wantStatus(t, end, harnesskit.Failed, "the harness wrote events faster than its limits.max_event_bytes_per_second of 1 MiB a second on stdout")
}

// The defaults let through what a chatty agent writes: 3,000 says, and 8 MiB a second for 2 s.
func TestEventBudgetDefaults(t *testing.T) {
	if supervisor.DefaultEventBytes != 48<<20 || supervisor.DefaultEventBytesPerSecond != 16<<20 {
		t.Errorf("defaults %d and %d, documented as 48 MiB and 16 MiB a second", supervisor.DefaultEventBytes, supervisor.DefaultEventBytesPerSecond)
	}
	end, _ := run(t, spec(t, "flood", "3000"))
	wantStatus(t, end, harnesskit.Completed)
}
