package apiv1

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/internal/jsonutil"
)

// InputSize is the length of the JSON string oz0 writes, whatever the text: every byte alone,
// mixed runs of them, and random text.
func TestInputSizeIsTheJSONStringsLength(t *testing.T) {
	texts := []string{"", "plain", "a\"b\\c\n\r\t\b\f", "\x00\x01\x1f\x7f", "é€😀", "\u2028\u2029", "\xff\xfe", "caf\xe9 <&>", "\xe2\x82", "\xf0\x9f\x98"}
	for b := range 256 {
		texts = append(texts, string([]byte{byte(b)}), "x"+string([]byte{byte(b)})+"é")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", " ", "\"", "\\", "\n", "\x01", "é", "€", "😀", "\u2028", "\xff", "<", "\xe2\x82"}
	for range 500 {
		var b strings.Builder
		for range rng.IntN(64) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	for _, s := range texts {
		enc, err := jsonutil.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := InputSize(s); got != len(enc) {
			t.Errorf("InputSize(%q) = %d, want %d (%s)", s, got, len(enc), enc)
		}
	}
}

func TestInputTooLarge(t *testing.T) {
	for _, c := range []struct{ input, want string }{
		{strings.Repeat("a", MaxInput-2), ""},
		{strings.Repeat("a", MaxInput-1), "INPUT is 3145727 bytes, 3145729 bytes written as a JSON string (its quotes, line breaks and control characters escaped), as the session request carries it: over the 3 MiB (3145728 bytes) a job takes; give a shorter one"},
		{strings.Repeat("a", MaxInput+1), "INPUT is over 3 MiB, the most a job takes; give a shorter one"},
		{strings.Repeat("line\n", MaxInput/5), "INPUT is 3145725 bytes, 3774872 bytes written as a JSON string (its quotes, line breaks and control characters escaped), as the session request carries it: over the 3 MiB (3145728 bytes) a job takes; give a shorter one"},
	} {
		if got := InputTooLarge("INPUT", c.input); got != c.want {
			t.Errorf("InputTooLarge(%d bytes) = %q, want %q", len(c.input), got, c.want)
		}
	}
}
