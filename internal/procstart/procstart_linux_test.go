package procstart

import (
	"testing"
	"time"
)

func TestParseStart(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	// pid, a name with a space and a parenthesis, then state and 18 fields before starttime (5000
	// ticks: 50 s after boot).
	stat := []byte("4242 (oz0 (dev) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 3 0 5000 123456 789 18446744073709551615\n")
	got, ok := parseStart(stat, now, 60*time.Second)
	if !ok || !got.Equal(now.Add(-10*time.Second)) {
		t.Fatalf("parseStart = %v, %v; want 10 s before now", got, ok)
	}
	for _, bad := range []string{"", "4242 oz0 S 1", "4242 (oz0) S 1 2 3", "4242 (oz0) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 3 0 x 1"} {
		if _, ok := parseStart([]byte(bad), now, time.Minute); ok {
			t.Errorf("parseStart(%q) read a start", bad)
		}
	}
	if _, ok := parseStart(stat, now, 10*time.Second); ok {
		t.Error("a start after the uptime was taken")
	}
}
