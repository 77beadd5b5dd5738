package supervisor_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/supervisor"
)

// A harness that says 4 × 4 MiB: the reading side holds no more than a few pieces of a say at any
// time. The live heap is measured, after a collection, at every event the sink gets: before says
// were read in pieces it grew by the line and its decoded text (over 8 MiB) at each say.
func TestLongSaysInBoundedPieces(t *testing.T) {
	sp := spec(t, "longsays")
	sp.Limits.EventBytesPerSecond = 1 << 30
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak uint64
	var said, biggest, says int
	sp.Sink = func(e harnesskit.Event) {
		if m, ok := e.Message.(harnesskit.Say); ok && e.Kind == harnesskit.EventSay {
			said += len(m.Text)
			biggest = max(biggest, len(m.Text))
			says++
			if strings.Trim(m.Text, "s") != "" {
				t.Errorf("say %d has text other than the harness said", says)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc)
	}
	s, err := supervisor.Start(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	end := s.Wait()
	wantStatus(t, end, harnesskit.Completed)
	if said != 4*4<<20 {
		t.Errorf("the sink got %d bytes of says, want %d", said, 4*4<<20)
	}
	if biggest > harnesskit.PieceSize {
		t.Errorf("a say event of %d bytes; want pieces of at most %d", biggest, harnesskit.PieceSize)
	}
	growth := int64(peak) - int64(base)
	t.Logf("%d say events; the live heap grew by at most %d KiB while the harness said 4 MiB lines", says, growth>>10)
	if growth > 1<<20 {
		t.Errorf("the live heap grew by %d KiB while the harness said 4 MiB lines; want under 1 MiB (a few pieces)", growth>>10)
	}
}

// Long says and logs read in pieces are the text any JSON decoder reads from their lines: escapes,
// surrogate pairs (and a lone half, U+FFFD), characters of several bytes across the read
// buffer's edges, Python's spacing. A line that goes on after its text is still its say when it
// decodes as one; one that turns out not to be JSON is flagged after the text that went on (one
// that goes on with another "type" is a violation: TestDuplicateKeyIsAViolation).
func TestLongTextsReadInPieces(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 300<<10; i++ {
		b.WriteString("line ")
		b.WriteString(strings.Repeat("é€😀", i%7))
		b.WriteString("\n\t\"quoted\" \\ back/slash \u2028 <&> \x01")
	}
	long := b.String()
	enc, _ := json.Marshal(long)
	ascii := strings.NewReplacer("é", `\u00e9`, "€", `\u20AC`, "😀", `\ud83d\ude00`).Replace(string(enc))
	lone := `"` + strings.Repeat("x", 70000) + `\ud83d\u0041 \udc00 end"`
	lines := []string{
		`{"type":"say","text":` + string(enc) + `}`,
		`{"type": "say", "text": ` + ascii + `}  `,
		`{ "type" : "log" , "level" : "warning" , "message" : ` + string(enc) + ` }`,
		`{"type":"say","text":` + lone + `}`,
		`{"type":"say","text":` + string(enc) + `,"extra":1}`,
		`{"type":"say","text":` + string(enc) + `,"extra":}`,
		`{"type":"say","text":"` + strings.Repeat("y", 100000) + `\q"}`,
		`{"type":"result","output":"done"}`,
	}
	file := filepath.Join(t.TempDir(), "lines")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sp := spec(t, "lines", file)
	sp.Limits.EventBytesPerSecond = 1 << 30
	raws := map[int64]string{} // the last event's Raw of each line, kept while the sink runs
	sp.Sink = func(e harnesskit.Event) {
		if e.Raw != nil {
			raws[e.Line] = string(e.Raw)
		}
	}
	end, events := run(t, sp)
	wantStatus(t, end, harnesskit.Completed)

	// The texts of each line, joined, and how each line's events end.
	texts := map[int64]string{}
	var notes []string
	for _, e := range events {
		switch m := e.Message.(type) {
		case harnesskit.Say:
			texts[e.Line] += m.Text
			if len(m.Text) > harnesskit.PieceSize {
				t.Errorf("line %d: a piece of %d bytes", e.Line, len(m.Text))
			}
		case harnesskit.Log:
			texts[e.Line] += m.Message
			if m.Level != "warning" {
				t.Errorf("line %d: level %q", e.Line, m.Level)
			}
		}
		if e.Kind == harnesskit.EventStray || e.Kind == harnesskit.EventIgnored {
			notes = append(notes, e.Note)
		}
	}
	for i, want := range []string{long, long, long, strings.Repeat("x", 70000) + "\uFFFDA \uFFFD end", long, long} {
		if got := texts[int64(i+1)]; got != want {
			t.Errorf("line %d: the pieces joined are %d bytes, not the %d of the line's text (first difference at %d)", i+1, len(got), len(want), firstDiff(got, want))
		}
	}
	if got := texts[7]; got != strings.Repeat("y", 100000) {
		t.Errorf("line 7: the text before the bad escape is %d bytes, want 100000", len(got))
	}
	// Raw is the reader's buffer, valid only while the sink runs.
	if raw := raws[5]; raw != `{"type":"say","text":"","extra":1}` {
		t.Errorf("line 5's last piece has Raw %.80q, want the line without its text", raw)
	}
	if raw := raws[7]; raw != `\q"}` {
		t.Errorf("line 7's stray event has Raw %.80q, want the rest of the line from the fault", raw)
	}
	want := []string{"line 6 began as a say, whose text went on as one, but the line is not one: not JSON", `not JSON: an invalid escape \q in a string`}
	if len(notes) != len(want) {
		t.Fatalf("notes %q, want %q", notes, want)
	}
	for i := range want {
		if !strings.Contains(notes[i], want[i]) {
			t.Errorf("note %q does not say %q", notes[i], want[i])
		}
	}
}

func firstDiff(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// BenchmarkLongSays is the supervisor's throughput on long says: a harness says 32 × 4 MiB (the
// test harness's saysflood), read in pieces, the budgets lifted. The process's start is included.
func BenchmarkLongSays(b *testing.B) {
	for range b.N {
		sp := spec(b, "saysflood", "32x4194304")
		sp.Limits.EventBytes, sp.Limits.EventBytesPerSecond = 1<<40, 1<<40
		var said int64
		sp.Sink = func(e harnesskit.Event) {
			if m, ok := e.Message.(harnesskit.Say); ok {
				said += int64(len(m.Text))
			}
		}
		end, err := supervisor.Run(context.Background(), sp)
		if err != nil || end.Status != harnesskit.Completed || said != 32*4<<20 {
			b.Fatalf("%v %s: %d bytes said", err, end, said)
		}
	}
	b.SetBytes(32 * 4 << 20)
}

// What a harness writes to stderr before its last line (a traceback, then its error) comes before
// that line's event in the trace, though another goroutine reads it.
func TestStderrBeforeTheLastLineComesFirst(t *testing.T) {
	const lines = 3000
	end, events := run(t, spec(t, "traceback", strconv.Itoa(lines)))
	wantStatus(t, end, harnesskit.Failed)
	seen, last := 0, -1
	for i, e := range events {
		switch e.Kind {
		case harnesskit.EventStderr:
			if last >= 0 {
				t.Fatalf("stderr line %d came after the error event (event %d of %d)", seen+1, i, len(events))
			}
			seen++
		case harnesskit.EventError:
			last = i
		}
	}
	if seen != lines || last < 0 {
		t.Errorf("%d stderr lines and an error at %d; want %d lines, then the error", seen, last, lines)
	}
}
