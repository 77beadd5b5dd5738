package termtext

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestVisible(t *testing.T) {
	for _, c := range []struct {
		name              string
		in, want, oneLine string
	}{
		{"plain", "plain text, café ✓", "plain text, café ✓", "plain text, café ✓"},
		{"newline and tab", "two\nlines\tand a tab", "two\nlines\tand a tab", `two\nlines` + "\tand a tab"},
		{"OSC title", "\x1b]0;pwned\x07title", `\x1b]0;pwned\x07title`, `\x1b]0;pwned\x07title`},
		{"OSC 52 clipboard", "\x1b]52;c;Y3VybCBldmls\x07", `\x1b]52;c;Y3VybCBldmls\x07`, `\x1b]52;c;Y3VybCBldmls\x07`},
		{"CSI clear", "\x1b[2J", `\x1b[2J`, `\x1b[2J`},
		{"carriage return", "ok\r\x1b[2Kfake", `ok\r\x1b[2Kfake`, `ok\r\x1b[2Kfake`},
		{"DEL", "del\x7f", `del\x7f`, `del\x7f`},
		{"C1 controls", "csi\u009b31m nel\u0085", `csi\u009b31m nel\u0085`, `csi\u009b31m nel\u0085`},
		{"invalid UTF-8", "bad \xff\x9b byte", "bad \ufffd\ufffd byte", "bad \ufffd\ufffd byte"},
		{"C0 controls", "\x00\x08\x0b\x0c", `\x00\x08\x0b\x0c`, `\x00\x08\x0b\x0c`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Visible(c.in); got != c.want {
				t.Errorf("Visible(%q) = %q, want %q", c.in, got, c.want)
			}
			if got := OneLine(c.in); got != c.oneLine {
				t.Errorf("OneLine(%q) = %q, want %q", c.in, got, c.oneLine)
			}
		})
	}
}

func TestEscapeJSON(t *testing.T) {
	text := "a\u009b31m\u0085b\x7fc café \x1b"
	b, _ := json.Marshal(map[string]string{"text": text})
	got := EscapeJSON(b)
	if want := `{"text":"a\u009b31m\u0085b\u007fc café \u001b"}`; string(got) != want {
		t.Errorf("EscapeJSON = %s, want %s", got, want)
	}
	var back map[string]string
	if err := json.Unmarshal(got, &back); err != nil || back["text"] != text {
		t.Errorf("the escaped JSON is not the same value: %q, %v", back["text"], err)
	}
	if plain := []byte(`{"a":"b"}`); &EscapeJSON(plain)[0] != &plain[0] {
		t.Error("JSON without controls was copied")
	}
}

func TestJSONWriter(t *testing.T) {
	in := []byte(`{"a":"x` + "\u009b" + `y` + "\u0085" + `é"}`)
	for cut := range len(in) + 1 {
		var b strings.Builder
		w := NewJSONWriter(&b)
		w.Write(in[:cut])
		w.Write(in[cut:])
		w.Flush()
		if want := `{"a":"x\u009by\u0085é"}`; b.String() != want {
			t.Errorf("cut at %d: %s, want %s", cut, b.String(), want)
		}
	}
}

func TestVisibleJSON(t *testing.T) {
	in := map[string]any{"a": "t\x1b]0;x\x07 \r\n\t\b\f\x7f\u0085 \\u001b é", "b": []any{"\x1b", 1, "plain"}}
	b, _ := json.Marshal(in)
	var got map[string]any
	if err := json.Unmarshal(VisibleJSON(b), &got); err != nil {
		t.Fatalf("VisibleJSON(%s) = %s: %v", b, VisibleJSON(b), err)
	}
	if want := Visible(in["a"].(string)); got["a"] != want {
		t.Errorf("a = %q, want %q", got["a"], want)
	}
	if got := got["b"].([]any); got[0] != `\x1b` || got[2] != "plain" {
		t.Errorf("b = %q", got)
	}
	if plain := []byte(`{"a":"b\n\\u001b"}`); &VisibleJSON(plain)[0] != &plain[0] {
		t.Error("JSON without controls was copied")
	}
}
