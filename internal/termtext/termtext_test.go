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
		// What an approval showed: another command than the one it asks for.
		{"bidi override", "rm -rf ~/important \u202e\u2066 txt.sgol_dlo/pmt/ mr\u2069\u200b", `rm -rf ~/important \u202e\u2066 txt.sgol_dlo/pmt/ mr\u2069\u200b`, `rm -rf ~/important \u202e\u2066 txt.sgol_dlo/pmt/ mr\u2069\u200b`},
		{"bidi marks and embeddings", "\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u2067\u2068", `\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u2067\u2068`, `\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u2067\u2068`},
		{"zero-width and invisible", "a\u200bc\u2060d\ufeffe\u00adf\u2064", `a\u200bc\u2060d\ufeffe\u00adf\u2064`, `a\u200bc\u2060d\ufeffe\u00adf\u2064`},
		// The joiners write words of other scripts and emoji sequences: they stay.
		{"joiners stay", "می\u200cخواهم 👩\u200d💻", "می\u200cخواهم 👩\u200d💻", "می\u200cخواهم 👩\u200d💻"},
		{"tags spell a hidden text", "ok\U000E0001\U000E0068\U000E0069", `ok\U000e0001\U000e0068\U000e0069`, `ok\U000e0001\U000e0068\U000e0069`},
		{"other scripts stay", "שלום مرحبا 日本 ✓", "שלום مرحبا 日本 ✓", "שלום مرحبا 日本 ✓"},
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
	text := "a\u009b31m\u0085b\x7fc café \x1b \u202emr\u200b\U000E0041"
	b, _ := json.Marshal(map[string]string{"text": text})
	got := EscapeJSON(b)
	if want := `{"text":"a\u009b31m\u0085b\u007fc café \u001b \u202emr\u200b\udb40\udc41"}`; string(got) != want {
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
	in := []byte(`{"a":"x` + "\u009b" + `y` + "\u0085" + `é` + "\u202e\U000E0041" + `"}`)
	for cut := range len(in) + 1 {
		var b strings.Builder
		w := NewJSONWriter(&b)
		w.Write(in[:cut])
		w.Write(in[cut:])
		w.Flush()
		if want := `{"a":"x\u009by\u0085é\u202e\udb40\udc41"}`; b.String() != want {
			t.Errorf("cut at %d: %s, want %s", cut, b.String(), want)
		}
	}
}

func TestVisibleJSON(t *testing.T) {
	var got1 string
	in := map[string]any{"a": "t\x1b]0;x\x07 \r\n\t\b\f\x7f\u0085 \\u001b é \u202emr\u2069\u200b\U000E0041 \u2028", "b": []any{"\x1b", 1, "plain"}}
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
	// Escaped in the JSON, as another encoder writes them (a pair of surrogates past the BMP).
	if err := json.Unmarshal(VisibleJSON([]byte(`"\u202Emr\u200b\udb40\udc41\u00e9"`)), &got1); err != nil || got1 != `\u202emr\u200b\U000e0041é` {
		t.Errorf("escaped format characters: %q, %v", got1, err)
	}
	if plain := []byte(`{"a":"b\n\\u001b"}`); &VisibleJSON(plain)[0] != &plain[0] {
		t.Error("JSON without controls was copied")
	}
}
