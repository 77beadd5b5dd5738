// Package termtext makes text from outside oz0 (what a harness, a model or a tool said) safe to
// print on a terminal: its control characters are made visible, so that none of them moves the
// cursor, clears the screen, sets the window's title, writes the clipboard (OSC 52) or rewrites a
// line that oz0 printed (a carriage return, then ESC [ 2K); so are its invisible format
// characters (Unicode's category Cf: the bidirectional controls, zero-width characters, tags), so
// that none of them reorders or hides what a person reads (`rm -rf ~/x U+202E txt.gol` shown as
// another command than the one approved).
//
// Every printer of such text calls Visible (or OneLine, for a table's cell or a one-line message),
// on a terminal and in a pipe alike: a pipe is often read on a terminal later (less -R, a CI log).
// JSON output keeps the exact text, JSON-escaped (see EscapeJSON).
package termtext

import (
	"io"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Visible returns s with every C0 control but the newline and the tab, DEL, every C1 control and
// every format character (IsFormat) written out as Go writes them in a string: \r, \x1b, \x7f,
// \u009b, \u202e, \U000e0041. A byte that is not UTF-8 becomes U+FFFD. s comes back as it is (no
// copy) when it has none of these.
func Visible(s string) string { return escape(s, false) }

// OneLine is Visible with the newline written out too (\n): a value that stays on its line.
func OneLine(s string) string { return escape(s, true) }

// IsControl reports whether r is a control that Visible writes out: C0 (a tab and a newline
// aside, which it keeps), DEL and C1.
func IsControl(r rune) bool { return (r < 0x20 && r != '\t') || (r >= 0x7f && r < 0xa0) }

// IsFormat reports whether r is a format character (Unicode's category Cf), which Visible writes
// out too: the bidirectional controls (U+200E, U+200F, U+061C, U+202A–U+202E, U+2066–U+2069),
// which make a terminal show text in another order than it is, and the characters that show as
// nothing (U+200B, U+2060–U+2064, U+FEFF, U+00AD, the tags U+E0001 and U+E0020–U+E007F, which
// can spell a hidden text), but the joiners U+200C and U+200D.
func IsFormat(r rune) bool {
	return r >= 0xad && r != zwnj && r != zwj && unicode.Is(unicode.Cf, r)
}

// The joiners stay: Persian, Hindi and other scripts write words with them, and emoji sequences
// (a family, a flag) are made with them; they neither reorder text nor hide a character.
const (
	zwnj = '\u200c'
	zwj  = '\u200d'
)

// escaped reports whether Visible writes r out (a tab and a newline aside).
func escaped(r rune) bool { return IsControl(r) || IsFormat(r) }

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
		if r == utf8.RuneError && n == 1 || escaped(r) {
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
		case escaped(r):
			writeU(&b, r)
		default:
			b.WriteRune(r) // a byte that is not UTF-8 came as U+FFFD
		}
	}
	return b.String()
}

// hex is the digits of the escapes this package writes.
const hex = "0123456789abcdef"

// writeU writes r as \uXXXX, or \UXXXXXXXX past the BMP.
func writeU(b *strings.Builder, r rune) {
	digits := 4
	if r > 0xffff {
		digits = 8
		b.WriteString(`\U`)
	} else {
		b.WriteString(`\u`)
	}
	for i := digits - 1; i >= 0; i-- {
		b.WriteByte(hex[r>>(4*i)&0xf])
	}
}

// EscapeJSON returns JSON text with DEL, the C1 controls and the format characters (IsFormat),
// which encoding/json leaves as they are, escaped as \u007f, \u0080…\u009f, \u202e (a pair of
// surrogates past the BMP): the same JSON values, none of them a terminal's control. They can only
// be inside strings in JSON, where the escape means the same character. b comes back as it is
// when it has none.
func EscapeJSON(b []byte) []byte {
	i := 0
	for i < len(b) {
		if b[i] < utf8.RuneSelf {
			if b[i] == 0x7f {
				break
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if n > 1 && escaped(r) {
			break
		}
		i += n
	}
	if i == len(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:i]...)
	for i < len(b) {
		if b[i] < utf8.RuneSelf {
			if b[i] == 0x7f {
				out = append(out, `\u007f`...)
			} else {
				out = append(out, b[i])
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case n > 1 && escaped(r) && r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			out = appendJSONU(appendJSONU(out, r1), r2)
		case n > 1 && escaped(r):
			out = appendJSONU(out, r)
		default:
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}

func appendJSONU(out []byte, r rune) []byte {
	return append(out, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}

// JSONWriter writes JSON text to w with EscapeJSON applied, however the text is cut into writes.
// Flush writes what it held back (the first bytes of a character at the end of a write).
type JSONWriter struct {
	w    io.Writer
	held []byte // the last write ended in the first bytes of a character
}

func NewJSONWriter(w io.Writer) *JSONWriter { return &JSONWriter{w: w} }

func (j *JSONWriter) Write(p []byte) (int, error) {
	n := len(p)
	if len(j.held) > 0 {
		p = append(j.held, p...)
		j.held = nil
	}
	k := len(p) - 1
	for k > 0 && k > len(p)-utf8.UTFMax && !utf8.RuneStart(p[k]) {
		k--
	}
	if k >= 0 && p[k] >= utf8.RuneSelf && !utf8.FullRune(p[k:]) {
		p, j.held = p[:k], append([]byte(nil), p[k:]...)
	}
	if _, err := j.w.Write(EscapeJSON(p)); err != nil {
		return 0, err
	}
	return n, nil
}

// Flush writes the bytes held back.
func (j *JSONWriter) Flush() error {
	if len(j.held) == 0 {
		return nil
	}
	_, err := j.w.Write(j.held)
	j.held = nil
	return err
}

// VisibleJSON returns JSON text whose strings hold, in place of each control and format
// character, what Visible writes for it: the JSON value a terminal may show (--jq and --template print strings as they
// are). A newline and a tab stay. b must be valid JSON; it comes back as it is when no string
// has a control.
func VisibleJSON(b []byte) []byte {
	var out []byte
	visible := func(r rune) []byte { // Visible(r), JSON-escaped: its backslash doubled
		return []byte(strings.ReplaceAll(Visible(string(r)), `\`, `\\`))
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
					u := func(at int) rune {
						var r rune
						for _, h := range b[at+2 : at+6] {
							r = r<<4 | rune(strings.IndexByte(hex, h|0x20))
						}
						return r
					}
					r, n := u(i), 6
					if utf16.IsSurrogate(r) && i+12 <= len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
						if pair := utf16.DecodeRune(r, u(i+6)); pair != utf8.RuneError {
							r, n = pair, 12
						}
					}
					if escaped(r) && r != '\n' {
						put(i, n, visible(r))
					}
					i += n - 2
				} else {
					i += 4
				}
			}
			i++ // the escaped character is not a quote
		case c == 0x7f:
			put(i, 1, visible(0x7f))
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(b[i:])
			if n > 1 && escaped(r) {
				put(i, n, visible(r))
			}
			i += n - 1
		}
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}
