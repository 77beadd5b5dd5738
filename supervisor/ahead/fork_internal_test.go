package ahead

import "testing"

// A fork server forks none ahead while more than one of its sessions runs, or while jobs wait for
// a session (Policy.Backlog): the next job then takes one at once, forked at it.
func TestNoForkAheadWhileBusy(t *testing.T) {
	backlog := false
	p := New(Policy{Mode: Warm, Fork: true, Backlog: func() bool { return backlog }}, nil)
	srv := &server{}
	for _, c := range []struct {
		running int
		backlog bool
		want    bool
	}{{0, false, false}, {1, false, false}, {2, false, true}, {0, true, true}, {1, true, true}} {
		srv.running, backlog = c.running, c.backlog
		if got := p.busy(srv); got != c.want {
			t.Errorf("%d running, jobs waiting %v: busy = %v; want %v", c.running, c.backlog, got, c.want)
		}
	}
	if New(Policy{Mode: Warm, Fork: true}, nil).busy(&server{running: 1}) {
		t.Error("a pool without a Backlog is busy with one session running")
	}
}
