package supervisor

import (
	"io"
	"os"
	"testing"
	"time"
)

// A reader that comes late to a draining pipe (its goroutine not run on a loaded machine until
// the wait for more, or the bound, is over) still gets what the harness wrote before it exited,
// and only then is the stream ended as held open (a result was lost under load before).
func TestLateReaderGetsWhatThePipeHolds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		idle  time.Duration
		bound time.Duration
	}{
		{name: "past the bound", idle: time.Hour, bound: -time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			defer w.Close() // held open: another process still has it
			line := `{"type":"result","output":"done"}` + "\n"
			if _, err := w.WriteString(line); err != nil {
				t.Fatal(err)
			}
			p := &pipeReader{f: r}
			p.drain(tc.idle, tc.bound)
			got, err := io.ReadAll(p)
			if err != nil || string(got) != line {
				t.Fatalf("read %q, %v; want the line the pipe held", got, err)
			}
			if !p.heldOpen.Load() {
				t.Error("the stream's end is not said to be held open")
			}
		})
	}
}

// A pipe whose writers are all gone ends at once, not as held open.
func TestLateReaderOfAClosedPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w.WriteString("last\n")
	w.Close()
	p := &pipeReader{f: r}
	p.drain(time.Hour, -time.Second)
	got, err := io.ReadAll(p)
	if err != nil || string(got) != "last\n" || p.heldOpen.Load() {
		t.Fatalf("read %q, %v, held open %v", got, err, p.heldOpen.Load())
	}
}
