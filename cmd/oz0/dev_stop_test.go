package main

import (
	"bytes"
	"os"
	"strings"
	"syscall"
	"testing"
)

// stoppingServer is a dev server whose Close waits for Hurry (its sessions ignore SIGTERM under
// a long grace period).
type stoppingServer struct {
	hurry   chan struct{}
	hurried int
}

func (s *stoppingServer) Close() error { <-s.hurry; return nil }
func (s *stoppingServer) Hurry() {
	s.hurried++
	if s.hurried == 1 {
		close(s.hurry)
	}
}

// A second signal while oz0 dev stops kills the sessions at once and still ends the stop
// tidily; without it the stop waits for the sessions.
func TestSecondSignalHurriesTheStop(t *testing.T) {
	srv := &stoppingServer{hurry: make(chan struct{})}
	sigs := make(chan os.Signal, 1)
	sigs <- syscall.SIGINT
	var out bytes.Buffer
	if err := stopDev(srv, sigs, &out); err != nil {
		t.Fatal(err)
	}
	if srv.hurried != 1 || !strings.Contains(out.String(), "oz0 dev: ending the running sessions now") || !strings.HasSuffix(out.String(), "oz0 dev: stopped\n") {
		t.Errorf("hurried %d times, said %q", srv.hurried, out.String())
	}
}

// A third ends oz0 dev where it stands, and says what the next start does.
func TestThirdSignalStopsAtOnce(t *testing.T) {
	srv := &stoppingServer{hurry: make(chan struct{})}
	srv.hurried = 1 // Hurry does not end this Close: a session that would not die
	t.Cleanup(func() { close(srv.hurry) })
	sigs := make(chan os.Signal, 2)
	sigs <- syscall.SIGTERM
	sigs <- syscall.SIGHUP
	var out bytes.Buffer
	err := stopDev(srv, sigs, &out)
	if err == nil || !strings.Contains(err.Error(), "the next oz0 dev marks them interrupted and cleans up") {
		t.Errorf("err = %v", err)
	}
}
