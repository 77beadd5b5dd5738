package node

import (
	"encoding/json"
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
