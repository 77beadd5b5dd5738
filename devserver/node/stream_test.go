package node_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/orchestrator-zero/oz0/devserver/node"
	"github.com/orchestrator-zero/oz0/devserver/secrets"
	"github.com/orchestrator-zero/oz0/devserver/store"
	"github.com/orchestrator-zero/oz0/harnesskit"
)

const fastEvents = "limits:\n  max_event_bytes_per_second: 1073741824\n"

// A harness that says 4 × 4 MiB: the node reads, masks and stores the says in pieces. The live
// heap is measured, after a collection, each time the store takes an event (its masker is
// called on every event's data): before says went in pieces it held the line, its text and its
// JSON, and the queue of says waiting for the store, at once (18 MiB).
func TestLongSaysStoredInPieces(t *testing.T) {
	p := loadPlugin(t, map[string]string{"longsays": fastEvents})
	var (
		mu         sync.Mutex
		ms         runtime.MemStats
		base, peak uint64
		biggest    int
	)
	w := newWorld(t, p, nil)
	w.store.SetMasker(func(b []byte) []byte {
		mu.Lock()
		defer mu.Unlock()
		biggest = max(biggest, len(b))
		runtime.GC()
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc)
		return b
	})
	mu.Lock()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base = ms.HeapAlloc
	mu.Unlock()
	// The job's end is awaited on the change feed, which carries no data; its events are read
	// after, a page at a time: the test holds no says while the harness says them.
	watch, err := w.store.Watch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	j := w.submit(t, "longsays", "go")
	for c := range watch.C {
		if job, err := w.store.GetJob(j.ID); err != nil || c.Kind == store.ChangeJob && job.Status.Terminal() {
			break
		}
	}
	watch.Close()
	if job, err := w.store.GetJob(j.ID); err != nil || job.Status != store.StatusSucceeded {
		t.Fatalf("job %s: %s (%v)", job.Status, job.Reason, err)
	}
	mu.Lock()
	defer mu.Unlock()
	said, events := 0, 0
	for last := int64(0); ; {
		page, err := w.store.Events(j.ID, last, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		events += len(page)
		last = page[len(page)-1].Seq
		text := saidText(t, page)
		if strings.Trim(text, "s") != "" {
			t.Fatalf("the says are not what the harness said")
		}
		said += len(text)
	}
	if said != 4*4<<20 {
		t.Errorf("the says joined are %d bytes, want the %d said", said, 4*4<<20)
	}
	growth := int64(peak) - int64(base)
	t.Logf("%d events, the largest %d KiB; the live heap grew by at most %d KiB", events, biggest>>10, growth>>10)
	if biggest > 2*harnesskit.PieceSize {
		t.Errorf("an event of %d bytes reached the store; want pieces", biggest)
	}
	// What is left is bounded whatever the lines: the recorder's queue (1 MiB), the batch the
	// store writes, SQLite's page cache. Before, 4 lines' worth: 18 MiB.
	if growth > 6<<20 {
		t.Errorf("the live heap grew by %d KiB while the harness said 4 MiB lines; want under 6 MiB (the queues' bounds, not the lines')", growth>>10)
	}
}

// A secret said across the boundary of two pieces of a long say is masked: the pieces are masked
// as one stream.
func TestSecretAcrossPiecesMasked(t *testing.T) {
	const secret = "sk-test-0123456789abcdef"
	sec, err := secrets.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := sec.Set("SUPPORT_TOKEN", secret); err != nil {
		t.Fatal(err)
	}
	p := loadPlugin(t, map[string]string{"longsecret": ""})
	w := newWorld(t, p, func(c *node.Config) {
		c.SayStream = func() node.TextStream { return sec.Stream() }
	})
	w.store.SetMasker(sec.Masker())
	j := w.submit(t, "longsecret", secret)
	evs, job := w.events(t, j.ID, nil)
	if job.Status != store.StatusSucceeded {
		t.Fatalf("job %s: %s", job.Status, job.Reason)
	}
	var says []string
	for _, e := range evs {
		if e.Type == store.EventSay {
			var d struct{ Text string }
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			says = append(says, d.Text)
		}
	}
	if len(says) < 2 {
		t.Fatalf("the say is in %d events, not in pieces", len(says))
	}
	want := strings.Repeat("a", harnesskit.PieceSize-5) + secrets.Mask + strings.Repeat("b", harnesskit.PieceSize)
	if got := strings.Join(says, ""); got != want {
		t.Errorf("the says joined (%d bytes) are not the text with the secret masked (%d bytes); has the secret: %v", len(got), len(want), strings.Contains(got, secret))
	}
}

func saidText(t *testing.T, evs []store.Event) string {
	t.Helper()
	var b strings.Builder
	for _, e := range evs {
		if e.Type == store.EventSay {
			var d struct{ Text string }
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			b.WriteString(d.Text)
		}
	}
	return b.String()
}
