// Package textclip bounds text that oz0 quotes from outside (a value from a file, a harness's
// line, its stderr): cut to a number of runes or bytes, to its last lines, or named by its size,
// so that a hostile or runaway input cannot make a message or an event unbounded. It is the
// bottom layer's text helpers, beside package diag and below the protocol.
package textclip

import (
	"fmt"
	"strings"
)

// SizeName names a size in bytes as a person writes it: "8 MiB", "64 KiB", "100 bytes".
func SizeName(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Bytes returns s cut to n bytes on a rune boundary, as a string, and whether it cut; of a
// []byte it copies no more than that (a long line is not copied whole to be clipped).
func Bytes[T ~string | ~[]byte](s T, n int) (string, bool) {
	if len(s) <= n {
		return string(s), false
	}
	cut := n
	for cut > 0 && cut > n-4 && !isRuneStart(s[cut]) {
		cut--
	}
	return string(s[:cut]), true
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// LastLines returns at most n lines and max bytes of the end of s, trimmed.
func LastLines(s string, n, maxBytes int) string {
	s = strings.TrimRight(s, "\n")
	if len(s) > maxBytes {
		s = s[len(s)-maxBytes:]
		for i := 0; i < 4 && i < len(s) && !isRuneStart(s[0]); i++ {
			s = s[1:]
		}
		if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
			s = s[i+1:]
		}
	}
	for i, count := len(s)-1, 0; i >= 0; i-- {
		if s[i] == '\n' {
			count++
			if count == n {
				return s[i+1:]
			}
		}
	}
	return s
}

// LastLine is the last line of s that is not blank, trimmed and clipped to n runes: what a
// failure's stderr ends with, quoted in its one-line error.
func LastLine(s string, n int) string {
	return ClipN(strings.TrimSpace(LastLines(strings.TrimSpace(s), 1, 64<<10)), n)
}

// MaxArg is the most runes of a value from a file quoted in a message (Clip): a hostile file
// cannot make megabyte-long messages.
const MaxArg = 80

// Clip shortens s to MaxArg runes, marking the cut with an ellipsis.
func Clip(s string) string { return ClipN(s, MaxArg) }

// ClipN shortens s to n runes, marking the cut with an ellipsis.
func ClipN(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// Squash makes s one line for a message or a table cell: runs of white space (newlines included)
// become one space; then it is clipped to n runes (n <= 0: not clipped).
func Squash(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if n > 0 {
		s = ClipN(s, n)
	}
	return s
}
