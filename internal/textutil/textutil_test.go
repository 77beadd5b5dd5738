package textutil

import "testing"

func TestClip(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"one more char", 10, "one more …"},
		{"héllo wörld ünïcode", 19, "héllo wörld ünïcode"}, // 19 runes, more bytes
		{"héllo wörld", 6, "héllo…"},
		{"anything", 0, ""},
	} {
		if got := Clip(c.in, c.n); got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
