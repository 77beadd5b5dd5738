package supervisor_test

import (
	"testing"

	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/supervisor"
)

// A harness that says more than its limits.max_event_bytes fails, and the line past the budget
// and the rest of stdout are not decoded: the sink never gets them.
func TestEventBytesBudget(t *testing.T) {
	sp := spec(t, "saysflood", "200x65536") // 12.5 MiB
	sp.Limits.EventBytes = 1 << 20
	var says int
	var bytes int64
	sp.Sink = func(e harnesskit.Event) {
		if e.Kind == harnesskit.EventSay {
			says++
			bytes += int64(len(e.Raw)) + 1
		}
	}
	end, _ := run(t, sp)
	wantStatus(t, end, harnesskit.Failed, "the harness wrote events past its limits.max_event_bytes of 1 MiB on stdout")
	if bytes > 1<<20 || says != 15 {
		t.Errorf("the sink got %d says, %d bytes; want the 15 that fit in 1 MiB", says, bytes)
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
	if supervisor.DefaultEventBytes != 64<<20 || supervisor.DefaultEventBytesPerSecond != 16<<20 {
		t.Errorf("defaults %d and %d, documented as 64 MiB and 16 MiB a second", supervisor.DefaultEventBytes, supervisor.DefaultEventBytesPerSecond)
	}
	end, _ := run(t, spec(t, "flood", "3000"))
	wantStatus(t, end, harnesskit.Completed)
}
