package textclip

import (
	"strings"
	"testing"
)

func TestSquash(t *testing.T) {
	if got := Squash(" a\n\tb  c ", 0); got != "a b c" {
		t.Errorf("Squash = %q", got)
	}
	if got := Squash("a b c d", 4); got != "a b…" {
		t.Errorf("Squash clipped = %q", got)
	}
}

func TestBytes(t *testing.T) {
	for _, c := range []struct {
		name, in string
		n        int
		want     string
		cut      bool
	}{
		{"short", "abc", 3, "abc", false},
		{"cut", "abcd", 3, "abc", true},
		{"rune boundary", "aé", 2, "a", true}, // é is two bytes: not split
	} {
		t.Run(c.name, func(t *testing.T) {
			got, cut := Bytes(c.in, c.n)
			if got != c.want || cut != c.cut {
				t.Errorf("Bytes(%q, %d) = %q, %v; want %q, %v", c.in, c.n, got, cut, c.want, c.cut)
			}
		})
	}
}

func TestLastLines(t *testing.T) {
	for _, c := range []struct {
		name, in string
		n, max   int
		want     string
	}{
		{"fewer lines", "a\nb\n", 3, 100, "a\nb"},
		{"last two", "a\nb\nc\n", 2, 100, "b\nc"},
		{"bytes bound starts a whole line", "aaaa\nbb\ncc", 5, 6, "bb\ncc"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := LastLines(c.in, c.n, c.max); got != c.want {
				t.Errorf("LastLines(%q, %d, %d) = %q, want %q", c.in, c.n, c.max, got, c.want)
			}
		})
	}
}

func TestSizeName(t *testing.T) {
	for in, want := range map[int64]string{8 << 20: "8 MiB", 64 << 10: "64 KiB", 100: "100 bytes", 1<<20 + 1: "1048577 bytes"} {
		if got := SizeName(in); got != want {
			t.Errorf("SizeName(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestLastLine(t *testing.T) {
	for in, want := range map[string]string{
		"Traceback:\n  File x\nModuleNotFoundError: No module named 'x'\n\n": "ModuleNotFoundError: No module named 'x'",
		"  one line  ":                   "one line",
		"":                               "",
		"a\n" + strings.Repeat("é", 400): strings.Repeat("é", 299) + "…",
	} {
		if got := LastLine(in, 300); got != want {
			t.Errorf("LastLine(%.40q) = %.40q, want %.40q", in, got, want)
		}
	}
}
