package node

import (
	"encoding/json"
	"strings"
	"testing"
)

// A say event's data is the bytes json.Marshal writes, whichever way it is encoded.
func TestSayDataAsJSONMarshal(t *testing.T) {
	for _, text := range []string{"", "event 1", "ünïcødé 🎉", "a\"b", "a\\b", "a\nb", "<b>&</b>", "a\u2028b", "bad \xff utf-8", "tab\there"} {
		want, _ := json.Marshal(sayData{text})
		got := sayJSON(text)
		if string(got) != string(want) {
			t.Errorf("%q: %s, want %s", text, got, want)
		}
	}
}

// An event's data made by eventData is what json.Marshal of the same map writes, as a value, on
// one line (the live stream sends it as one), whatever spacing a raw value came with; its members
// in the order given.
func TestEventDataAsJSONMarshal(t *testing.T) {
	for _, raw := range []string{`"told"`, `{"a": [1, 2],` + "\r\t" + `"b" :null}`, `null`, ``, `"<b>&amp;</b> \u2028"`, `12345678901234567890`} {
		got := eventData(member{"id", "p1"}, member{"result", json.RawMessage(raw)}, member{"tool", "notify_team"}, member{"changed", true})
		m := map[string]any{"id": "p1", "result": json.RawMessage(raw), "tool": "notify_team", "changed": true}
		if raw == "" {
			m["result"] = nil
		}
		want, _ := json.Marshal(m)
		if !sameJSON(got, want) || strings.ContainsAny(string(got), "\r\n") {
			t.Errorf("%q: %s, want %s as a value, compact", raw, got, want)
		}
		if !strings.HasPrefix(string(got), `{"id":"p1","result":`) {
			t.Errorf("%q: %s does not keep the members' order", raw, got)
		}
	}
}
