package render

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/api/apiv1"
)

func ev(typ, data string) apiv1.Event { return apiv1.Event{Type: typ, Data: json.RawMessage(data)} }

func TestGuideStream(t *testing.T) {
	var b strings.Builder
	s := New(&b, "acme-triage")
	for _, e := range []apiv1.Event{
		ev("status", `{"status":"running"}`),
		ev("say", `{"text":"Sorting the ticket. "}`),
		ev("model_call", `{"record":"fake"}`),
		ev("permission_request", `{"id":"p1","tool":"notify_team","arguments":{"team":"billing","summary":"I was charged twice for my order"}}`),
		ev("permission_decision", `{"id":"p1","tool":"notify_team","decision":"allow","arguments":{"team":"billing","summary":"I was charged twice for my order"}}`),
		ev("tool_result", `{"id":"p1","tool":"notify_team","result":"told the billing team: I was charged twice for my order"}`),
		ev("result", `{"output":"billing: Sorry about the double charge; we have refunded the second one."}`),
	} {
		if err := s.Event(e); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	want := `acme-triage: Sorting the ticket.
acme-triage → notify_team {"summary":"I was charged twice for my order","team":"billing"}
acme-triage ← notify_team told the billing team: I was charged twice for my order
billing: Sorry about the double charge; we have refunded the second one.
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestSayChunksAndNewlines(t *testing.T) {
	var b strings.Builder
	s := New(&b, "a")
	for _, text := range []string{"Hel", "lo ", " world\nsecond", " line  ", "\n\n", "  "} {
		if err := s.say(text); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	want := "a: Hello  world\na: second line\n"
	if b.String() != want {
		t.Errorf("got %q want %q", b.String(), want)
	}
}

func TestRefusalsChangesAndOddValues(t *testing.T) {
	var b strings.Builder
	s := New(&b, "a")
	s.Event(ev("permission_decision", `{"tool":"t","decision":"deny","reason":"not today","by":"hook:policy"}`))
	s.Event(ev("permission_decision", `{"tool":"t","decision":"deny","reason":"hook policy failed: the plugin exited","by":"hook:policy"}`))
	s.Event(ev("permission_decision", `{"tool":"t","decision":"allow","changed":true,"arguments":{"b":1,"a":"<x>"},"by":"hook:redact"}`))
	s.Event(ev("tool_result", `{"tool":"t","error":"boom"}`))
	s.Event(ev("tool_result", `{"tool":"t","result":{"z":1,"a":[1,2]}}`))
	s.Event(ev("stray_output", `{"line":"hello"}`))
	s.Event(ev("stray_output", `{"line":"{\"type\":\"say\",\"text\":\"caf\ufffd\"}","note":"not valid UTF-8"}`))
	s.Event(ev("violation", `{"rule":"keys","message":"protocol violation (keys): line 2 of stdout is an object with the key \"type\" twice","line":"{\"type\":\"say\",\"type\":\"result\"}"}`))
	s.Event(ev("result", `{"output":{"team":"billing"}}`))
	want := `a ✗ t refused by hook policy: not today
a ✗ t refused: hook policy failed: the plugin exited
a → t {"a":"<x>","b":1} (arguments changed by hook redact)
a ← t failed: boom
a ← t {"a":[1,2],"z":1}
a ! stray output (not protocol JSON): hello
a ! stray output (not valid UTF-8): {"type":"say","text":"caf�"}
a ! protocol violation (keys): line 2 of stdout is an object with the key "type" twice
{"team":"billing"}
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestCompactJSONKeepsBigNumbers(t *testing.T) {
	if got := CompactJSON(json.RawMessage(`{"n": 12345678901234567890}`)); got != `{"n":12345678901234567890}` {
		t.Errorf("got %s", got)
	}
}

// A framework that streams its answer and then returns it as the result (strands-ts) shows it
// once; a result that says something else after the says is shown.
func TestStreamedAnswerIsNotRepeated(t *testing.T) {
	render := func(evs ...apiv1.Event) string {
		var b strings.Builder
		s := New(&b, "a")
		for _, e := range evs {
			if err := s.Event(e); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		return b.String()
	}
	got := render(ev("tool_result", `{"tool":"t","result":"ok"}`), ev("say", `{"text":"The team "}`), ev("say", `{"text":"was told.\n"}`),
		ev("result", `{"output":"The team was told."}`))
	if want := "a ← t ok\na: The team was told.\n"; got != want {
		t.Errorf("streamed, then returned:\n%q\nwant\n%q", got, want)
	}
	got = render(ev("say", `{"text":"Sorting."}`), ev("result", `{"output":"billing: sorted"}`))
	if want := "a: Sorting.\nbilling: sorted\n"; got != want {
		t.Errorf("a result after says:\n%q\nwant\n%q", got, want)
	}
	// A sub-agent's answer, said after its name (the Python templates' say(text, by=...)), then
	// returned as the result.
	got = render(ev("say", `{"text":"Handing over. "}`), ev("say", `{"text":"\n[billing] Refunded, "}`), ev("say", `{"text":"twice."}`),
		ev("result", `{"output":"Refunded, twice."}`))
	if want := "a: Handing over.\na: [billing] Refunded, twice.\n"; got != want {
		t.Errorf("a sub-agent's streamed answer, then returned:\n%q\nwant\n%q", got, want)
	}
	got = render(ev("say", `{"text":"[billing] Refunded."}`), ev("result", `{"output":"Refunded. Anything else?"}`))
	if want := "a: [billing] Refunded.\nRefunded. Anything else?\n"; got != want {
		t.Errorf("a result that says more than the stream ended with:\n%q\nwant\n%q", got, want)
	}
}

// oz0 run keeps at most maxSaid of what was said to compare with the result: past it (a flood, in
// pieces) the result is shown, and the said text is not all held.
func TestSaidTextBounded(t *testing.T) {
	var b strings.Builder
	s := New(&b, "a")
	piece := strings.Repeat("w ", 32<<10)
	var said int
	for said <= maxSaid {
		if err := s.Event(ev("say", `{"text":"`+piece+`"}`)); err != nil {
			t.Fatal(err)
		}
		said += len(piece)
	}
	if s.said.Cap() > maxSaid {
		t.Errorf("the renderer holds %d bytes of what was said; want at most %d", s.said.Cap(), maxSaid)
	}
	out, _ := json.Marshal(strings.Repeat("w ", said/2))
	if err := s.Event(ev("result", `{"output":`+string(out)+`}`)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if strings.Count(b.String(), "\n") != 2 { // the say's line, and the result's
		t.Errorf("the result after %d bytes of says is not shown: %d lines", said, strings.Count(b.String(), "\n"))
	}
}
