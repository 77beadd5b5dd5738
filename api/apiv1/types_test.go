package apiv1

import (
	"encoding/json"
	"testing"
	"time"
)

func TestAppendJSONIsMarshal(t *testing.T) {
	for _, ev := range []Event{
		{Job: "job_abc", Seq: 7, Time: time.Date(2026, 11, 29, 10, 0, 0, 123456789, time.UTC), Type: EventSay, Data: json.RawMessage(`{"text":"hi \u003c"}`)},
		{Job: "job_abc", Seq: 1, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Type: "odd\"type", Data: nil},
	} {
		want, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if got := ev.AppendJSON(nil); string(got) != string(want) {
			t.Errorf("AppendJSON = %s\n  Marshal = %s", got, want)
		}
	}
}

func TestTerminal(t *testing.T) {
	for data, want := range map[string]bool{
		`{"status":"succeeded","from":"running"}`: true,
		`{"status":"interrupted"}`:                true,
		`{"status":"waiting_for_approval"}`:       false,
		`not json`:                                false,
	} {
		if got := (Event{Type: EventStatus, Data: json.RawMessage(data)}).Terminal(); got != want {
			t.Errorf("status event %s: Terminal() = %v", data, got)
		}
	}
	if (Event{Type: EventResult, Data: json.RawMessage(`{"status":"succeeded"}`)}).Terminal() {
		t.Error("a result event is not the last one")
	}
}
