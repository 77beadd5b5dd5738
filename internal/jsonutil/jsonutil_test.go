package jsonutil

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestMarshalLeavesHTMLAlone(t *testing.T) {
	v := map[string]any{"text": "<b>R&D</b>", "n": 1, "line": "a\u2028b"}
	got, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"line":"a\u2028b","n":1,"text":"<b>R&D</b>"}`; string(got) != want {
		t.Errorf("Marshal = %s, want %s", got, want)
	}
	std, _ := json.Marshal(v)
	if strings.Contains(string(std), "<b>") {
		t.Errorf("encoding/json no longer escapes HTML: %s", std)
	}
	var back map[string]any
	if err := json.Unmarshal(got, &back); err != nil || back["text"] != "<b>R&D</b>" {
		t.Errorf("round trip: %v %v", back, err)
	}
}
