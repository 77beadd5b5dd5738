// Package termtext makes text from outside oz0 (what a harness, a model or a tool said) safe to
// print on a terminal: its control characters are made visible, so that none of them moves the
// cursor, clears the screen, sets the window's title, writes the clipboard (OSC 52) or rewrites a
// line that oz0 printed (a carriage return, then ESC [ 2K).
//
// Every printer of such text calls Visible (or OneLine, for a table's cell or a one-line message),
// on a terminal and in a pipe alike: a pipe is often read on a terminal later (less -R, a CI log).
// JSON output keeps the exact text, JSON-escaped (see EscapeJSON).
package termtext

import (
	"io"
	"strings"
	"unicode/utf8"
)

// Visible returns s with every C0 control but the newline and the tab, DEL, and every C1 control
// written out as Go writes them in a string: \r, \x1b, \x7f, \u009b. A byte that is not UTF-8
// becomes U+FFFD. s comes back as it is (no copy) when it has none of these.
func Visible(s string) string { return escape(s, false) }

// OneLine is Visible with the newline written out too (\n): a value that stays on its line.
func OneLine(s string) string { return escape(s, true) }

// IsControl reports whether r is a control that Visible writes out: C0 (a tab and a newline
// aside, which it keeps), DEL and C1.
func IsControl(r rune) bool { return (r < 0x20 && r != '\t') || (r >= 0x7f && r < 0xa0) }

func escape(s string, newline bool) string {
	i := 0
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != 0x7f || c == '\t' || c == '\n' && !newline {
				i++
				continue
			}
			break
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || IsControl(r) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	const hex = "0123456789abcdef"
	for _, r := range s[i:] {
		switch {
		case r == '\n' && !newline, r == '\t':
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80 && IsControl(r):
			b.WriteString(`\x`)
			b.WriteByte(hex[r>>4])
			b.WriteByte(hex[r&0xf])
		case IsControl(r):
			b.WriteString(`\u00`)
			b.WriteByte(hex[r>>4])
			b.WriteByte(hex[r&0xf])
		default:
			b.WriteRune(r) // a byte that is not UTF-8 came as U+FFFD
		}
	}
	return b.String()
}

// EscapeJSON returns JSON text with DEL and the C1 controls, which encoding/json leaves as they
// are, escaped as \u007f and \u0080…\u009f: the same JSON values, none of them a terminal's
// control. They can only be inside strings in JSON, where the escape means the same character.
// b comes back as it is when it has none.
func EscapeJSON(b []byte) []byte {
	i := 0
	for i < len(b) && b[i] != 0x7f && !(b[i] == 0xc2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] < 0xa0) {
		i++
	}
	if i == len(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:i]...)
	const hex = "0123456789abcdef"
	for ; i < len(b); i++ {
		switch {
		case b[i] == 0x7f:
			out = append(out, `\u007f`...)
		case b[i] == 0xc2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] < 0xa0:
			out = append(out, '\\', 'u', '0', '0', hex[b[i+1]>>4], hex[b[i+1]&0xf])
			i++
		default:
			out = append(out, b[i])
		}
	}
	return out
}

// JSONWriter writes JSON text to w with EscapeJSON applied, however the text is cut into writes.
// Flush writes what it held back (half of a character at the end of a write).
type JSONWriter struct {
	w    io.Writer
	held bool // the last write ended in 0xc2, the first byte of a C1 control or of another character
}

func NewJSONWriter(w io.Writer) *JSONWriter { return &JSONWriter{w: w} }

func (j *JSONWriter) Write(p []byte) (int, error) {
	n := len(p)
	if j.held {
		p = append([]byte{0xc2}, p...)
		j.held = false
	}
	if len(p) > 0 && p[len(p)-1] == 0xc2 {
		p, j.held = p[:len(p)-1], true
	}
	if _, err := j.w.Write(EscapeJSON(p)); err != nil {
		return 0, err
	}
	return n, nil
}

// Flush writes a byte held back.
func (j *JSONWriter) Flush() error {
	if !j.held {
		return nil
	}
	j.held = false
	_, err := j.w.Write([]byte{0xc2})
	return err
}

// VisibleJSON returns JSON text whose strings hold, in place of each control, what Visible
// writes for it: the JSON value a terminal may show (--jq and --template print strings as they
// are). A newline and a tab stay. b must be valid JSON; it comes back as it is when no string
// has a control.
func VisibleJSON(b []byte) []byte {
	var out []byte
	const hex = "0123456789abcdef"
	visible := func(r rune) []byte { // Visible(r), JSON-escaped: its backslash doubled
		switch {
		case r == '\r':
			return []byte(`\\r`)
		case r < 0x80:
			return []byte{'\\', '\\', 'x', hex[r>>4], hex[r&0xf]}
		}
		return []byte{'\\', '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf]}
	}
	in := false
	last := 0 // b[:last] is in out (once out is made)
	put := func(i, n int, repl []byte) {
		if out == nil {
			out = make([]byte, 0, len(b)+16)
		}
		out = append(out, b[last:i]...)
		out = append(out, repl...)
		last = i + n
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			in = !in
		case !in:
		case c == '\\' && i+1 < len(b):
			switch e := b[i+1]; e {
			case 'r':
				put(i, 2, visible('\r'))
			case 'b':
				put(i, 2, visible('\b'))
			case 'f':
				put(i, 2, visible('\f'))
			case 'u':
				if i+6 <= len(b) {
					var r rune
					for _, h := range b[i+2 : i+6] {
						r = r<<4 | rune(strings.IndexByte(hex, h|0x20))
					}
					if IsControl(r) && r != '\n' {
						put(i, 6, visible(r))
					}
				}
				i += 4
			}
			i++ // the escaped character is not a quote
		case c == 0x7f:
			put(i, 1, visible(0x7f))
		case c == 0xc2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] < 0xa0:
			put(i, 2, visible(rune(b[i+1])))
			i++
		}
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}
