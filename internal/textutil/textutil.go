// Package textutil shortens text for a message or a table cell.
package textutil

// Clip returns s cut to at most n runes, … in place of the rest. It cuts on a rune boundary, so
// the result is valid UTF-8 when s is.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s // n bytes or fewer: n runes or fewer
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n < 1 {
		return ""
	}
	return string(r[:n-1]) + "…"
}
