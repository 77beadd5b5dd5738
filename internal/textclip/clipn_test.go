package textclip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClipN(t *testing.T) {
	for _, tc := range []struct {
		name, s string
		n       int
		want    string
	}{
		{name: "short", s: "abc", n: 5, want: "abc"},
		{name: "exact", s: "abcde", n: 5, want: "abcde"},
		{name: "long", s: "abcdef", n: 5, want: "abcd…"},
		{name: "runes counted, not bytes", s: "ééééé", n: 5, want: "ééééé"},
		{name: "cut between runes", s: "éééééé", n: 5, want: "éééé…"},
		{name: "invalid UTF-8 cut", s: "ab\xffcdef", n: 4, want: "ab\uFFFD…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ClipN(tc.s, tc.n)
			if got != tc.want {
				t.Errorf("ClipN(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
			}
			if n := utf8.RuneCountInString(got); n > tc.n {
				t.Errorf("ClipN(%q, %d) is %d runes", tc.s, tc.n, n)
			}
			if got != tc.s && (!utf8.ValidString(got) || !strings.HasSuffix(got, "…")) {
				t.Errorf("ClipN(%q, %d) = %q: a cut is valid UTF-8 and ends in an ellipsis", tc.s, tc.n, got)
			}
		})
	}
}
