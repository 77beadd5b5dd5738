package harnesskit

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// A say or log line longer than the read buffer is read in pieces: its text is decoded as it
// comes and handed on in pieces of PieceSize bytes, so that a long line is never held whole, let
// alone several times over (the line, its decoded text, the masked text, the store's JSON). Any
// other line is read whole, once, up to the limit.

// PieceSize is the size of the pieces a long say's or log's text is handed on in (a piece ends
// on a character boundary, so it may be a few bytes shorter). A line whose text is shorter than
// the read buffer is one event, as it always was.
const PieceSize = 64 << 10

// LongText is the start of a long line whose text can be read in pieces (PeekLongText).
type LongText struct {
	typ   string // TypeSay or TypeLog
	level string // a log's level; "" when none came before its message
	n     int    // where the text begins, after its opening quote
}

// peekLong reports whether the next line is longer than the read buffer, without reading any of
// it, and returns the buffer's worth of its start. It waits, as ReadLine does, for the line's end
// or a full buffer.
func (r *Reader) peekLong() ([]byte, bool) {
	if r.err != nil {
		return nil, false
	}
	scanned := 0
	for n := max(r.br.Buffered(), 1); ; {
		avail, err := r.br.Peek(n)
		if bytes.IndexByte(avail[scanned:], '\n') >= 0 || err != nil {
			return nil, false // a line that fits, the end of the input, or an error: ReadLine's
		}
		if len(avail) >= r.br.Size() {
			return avail, true
		}
		scanned = len(avail)
		n = min(r.br.Size(), max(r.br.Buffered(), len(avail)+1))
	}
}

// streamHead parses the start of a long line: "{", the member "type" (say or log), for a log its
// "level", then the text's member ("text" of a say, "message" of a log) and its opening quote,
// with any JSON whitespace between, as the SDKs and json.dumps write them. Any other start is read
// whole.
func streamHead(b []byte) (LongText, bool) {
	var h LongText
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return h, false
	}
	i++
	for member := 0; member < 3; member++ {
		key, j, ok := plainString(b, skipSpace(b, i))
		if !ok {
			return h, false
		}
		if i = skipSpace(b, j); i >= len(b) || b[i] != ':' {
			return h, false
		}
		i = skipSpace(b, i+1)
		switch {
		case key == "type" && h.typ == "":
			v, j, ok := plainString(b, i)
			if !ok || v != TypeSay && v != TypeLog {
				return h, false
			}
			h.typ, i = v, j
		case key == "level" && h.typ == TypeLog && h.level == "":
			v, j, ok := plainString(b, i)
			if !ok || v == "" {
				return h, false
			}
			h.level, i = v, j
		case key == "text" && h.typ == TypeSay, key == "message" && h.typ == TypeLog:
			if i < len(b) && b[i] == '"' {
				h.n = i + 1
				return h, true
			}
			return h, false
		default:
			return h, false
		}
		if i = skipSpace(b, i); i >= len(b) || b[i] != ',' {
			return h, false
		}
		i++
	}
	return h, false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// plainString reads a short JSON string without escapes at b[i:]: its value and the index after it.
func plainString(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", 0, false
	}
	for j := i + 1; j < len(b) && j < i+66; j++ {
		switch c := b[j]; {
		case c == '"':
			return string(b[i+1 : j]), j + 1, true
		case c < 0x20 || c == '\\' || c >= 0x80:
			return "", 0, false
		}
	}
	return "", 0, false
}

// ErrTextStopped ends a line read in pieces: a budget was past (take said so).
var ErrTextStopped = errors.New("stopped")

// TextSyntaxError is a line read in pieces that turned out not to be JSON, or not valid UTF-8.
type TextSyntaxError struct {
	UTF8   bool // not valid UTF-8 (else not JSON)
	Detail string
}

func (e *TextSyntaxError) Error() string { return e.Detail }

// textReader reads the rest of a line whose head streamHead took, in pieces.
type textReader struct {
	r     *Reader
	size  int64                // the line's bytes read so far
	take  func(n int64) string // counts bytes read against the budgets; not "": past one
	over  string               // what take said
	out   []byte               // decoded text not handed on yet
	piece func(text []byte)    // gets each full piece (valid only during the call)
}

// consume reads n bytes of the line that the caller has looked at (Peek) and taken what it needs
// of: they are counted against the line's limit and the budgets.
func (t *textReader) consume(n int) error {
	if n == 0 {
		return nil
	}
	_, _ = t.r.br.Discard(n)
	return t.count(n)
}

func (t *textReader) count(n int) error {
	t.size += int64(n)
	if over := t.take(int64(n)); over != "" {
		t.over = over
		return ErrTextStopped
	}
	if t.size > int64(t.r.limit) {
		return &LineTooLongError{Size: t.size, Limit: t.r.limit}
	}
	return nil
}

// text appends decoded text, handing on every full piece.
func (t *textReader) text(b []byte) {
	t.out = append(t.out, b...)
	for len(t.out) >= PieceSize {
		cut := PieceSize
		for cut < len(t.out) && cut > PieceSize-utf8.UTFMax && !utf8.RuneStart(t.out[cut]) {
			cut--
		}
		t.piece(t.out[:cut])
		t.out = append(t.out[:0], t.out[cut:]...)
	}
}

// readString reads and decodes the rest of the text, a JSON string whose opening quote is read,
// up to and including its closing quote. It stops at the first byte that is not valid there:
// a *TextSyntaxError, with the rest of the line left to read.
func (t *textReader) readString() error {
	br := t.r.br
	short := false // the input ended within a character
	for {
		avail, err := br.Peek(max(br.Buffered(), 1))
		if len(avail) == 0 {
			if err == io.EOF {
				return &TextSyntaxError{Detail: "the input ended inside the text"}
			}
			return err
		}
		i := 0
	scan:
		for i < len(avail) {
			switch c := avail[i]; {
			case c >= 0x20 && c < 0x80 && c != '"' && c != '\\':
				i++
			case c == '"':
				t.text(avail[:i])
				return t.consume(i + 1)
			case c == '\\':
				t.text(avail[:i])
				if err := t.consume(i); err != nil {
					return err
				}
				if err := t.escape(); err != nil {
					return err
				}
				break scan
			case c < 0x20:
				t.text(avail[:i])
				if err := t.consume(i); err != nil {
					return err
				}
				if c == '\n' {
					return &TextSyntaxError{Detail: "the line ended inside its text"}
				}
				return &TextSyntaxError{Detail: fmt.Sprintf("a control character (0x%02x) in a string", c)}
			default:
				r, n := utf8.DecodeRune(avail[i:])
				if r == utf8.RuneError && n <= 1 {
					if !utf8.FullRune(avail[i:]) && !short {
						// Cut by the buffer's end: take the bytes before it, and wait for the rest.
						t.text(avail[:i])
						if err := t.consume(i); err != nil {
							return err
						}
						if _, err := br.Peek(utf8.UTFMax); err != nil {
							short = true
						}
						break scan
					}
					t.text(avail[:i])
					if err := t.consume(i); err != nil {
						return err
					}
					return &TextSyntaxError{UTF8: true, Detail: "not valid UTF-8"}
				}
				i += n
				short = false
			}
		}
		if i == len(avail) {
			t.text(avail)
			if err := t.consume(len(avail)); err != nil {
				return err
			}
		}
	}
}

// escape decodes the escape at the reader, its backslash not read yet, as encoding/json does: a
// \u escape of half a surrogate pair that is not followed by the other half is U+FFFD.
func (t *textReader) escape() error {
	br := t.r.br
	p, _ := br.Peek(2)
	if len(p) < 2 {
		return &TextSyntaxError{Detail: "the input ended inside the text"}
	}
	var one byte
	switch p[1] {
	case '"', '\\', '/':
		one = p[1]
	case 'b':
		one = '\b'
	case 'f':
		one = '\f'
	case 'n':
		one = '\n'
	case 'r':
		one = '\r'
	case 't':
		one = '\t'
	case 'u':
		p, _ = br.Peek(6)
		r1, ok := hex4(p, 2)
		if !ok {
			return &TextSyntaxError{Detail: `a \u escape without four hex digits`}
		}
		size := 6
		if utf16.IsSurrogate(r1) {
			// Look only as far as the line must go on: a valid line has its closing quote
			// after this escape, and four hex digits after a "\u".
			if q, _ := br.Peek(8); len(q) == 8 && q[6] == '\\' && q[7] == 'u' {
				q, _ = br.Peek(12)
				if r2, ok := hex4(q, 8); ok {
					if dec := utf16.DecodeRune(r1, r2); dec != unicode.ReplacementChar {
						r1, size = dec, 12
					}
				}
			}
			if size == 6 {
				r1 = unicode.ReplacementChar
			}
		}
		t.text(utf8.AppendRune(nil, r1))
		return t.consume(size)
	default:
		return &TextSyntaxError{Detail: fmt.Sprintf("an invalid escape \\%c in a string", p[1])}
	}
	t.text([]byte{one})
	return t.consume(2)
}

func hex4(p []byte, at int) (rune, bool) {
	if len(p) < at+4 {
		return 0, false
	}
	var r rune
	for _, c := range p[at : at+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// rest reads the rest of the line, up to its "\n", without it and without a "\r" before it,
// after head (which it returns first: the line is not copied again to be put after it); the last
// line of the input may have none. It is counted as it is read.
func (t *textReader) rest(head []byte) ([]byte, error) {
	buf := append(t.r.buf[:0], head...)
	for {
		chunk, err := t.r.br.ReadSlice('\n')
		if cerr := t.count(len(chunk)); cerr != nil {
			t.r.buf = buf
			return nil, cerr
		}
		switch err {
		case bufio.ErrBufferFull:
			buf = append(buf, chunk...)
			continue
		case nil:
			buf = append(buf, chunk[:len(chunk)-1]...)
		default:
			buf = append(buf, chunk...)
			if err != io.EOF {
				t.r.err = err
			}
		}
		t.r.buf = buf
		if n := len(buf); n > 0 && buf[n-1] == '\r' {
			buf = buf[:n-1]
		}
		if err != nil && err != io.EOF {
			return buf, err
		}
		return buf, nil
	}
}

// skipLine reads and drops the rest of a line over the limit, keeping nothing, counted against
// the budgets (ErrTextStopped when one is past).
func (t *textReader) skipLine() error {
	for {
		chunk, err := t.r.br.ReadSlice('\n')
		t.size += int64(len(chunk))
		if over := t.take(int64(len(chunk))); over != "" {
			t.over = over
			return ErrTextStopped
		}
		if err != bufio.ErrBufferFull {
			if err != nil && err != io.EOF {
				t.r.err = err
			}
			return nil
		}
	}
}

// PeekLongText reports whether the next line is a say or log longer than the read buffer whose
// text can be read in pieces (ReadLongText), reading none of it. Any other line is read whole
// (ReadLine).
func (r *Reader) PeekLongText() (LongText, bool) {
	head, long := r.peekLong()
	if !long {
		return LongText{}, false
	}
	return streamHead(head)
}

// PeekLong reports whether the next line is longer than the read buffer (64 KiB), reading none of
// it: ReadLine will read it into a buffer of its own.
func (r *Reader) PeekLong() bool {
	_, long := r.peekLong()
	return long
}

// LongTextRead is what ReadLongText found after the pieces it handed on.
type LongTextRead struct {
	Line int64  // the line's number
	Size int64  // the line's bytes read
	Rest []byte // the text's end, not handed on as a piece: the line's last piece
	// Synth is the line with its text left out ({"type":"say","text":"" and what came after the
	// text), when the line was read to its end; Tail is what came after the text.
	Synth, Tail []byte
	// Err is nil, ErrTextStopped (Over says which budget), a *LineTooLongError (the line was
	// read and dropped to its end), or the input's error. Syntax is set when the line turned out
	// not to be JSON (or not UTF-8) after its text began: what came before has gone on.
	Err    error
	Over   string
	Syntax *TextSyntaxError
}

// ReadLongText reads the line PeekLongText found, decoding its text as it comes and handing it
// on in pieces of PieceSize bytes (piece's argument is valid only during the call); take counts
// the bytes read against the caller's budgets and says, not "", that one is past.
func (r *Reader) ReadLongText(h LongText, take func(n int64) string, piece func(text []byte)) LongTextRead {
	r.lines++
	t := &textReader{r: r, take: take, piece: piece}
	err := t.consume(h.n)
	if err == nil {
		err = t.readString()
	}
	// What follows the text is read after what the line would be with its text left out, the
	// line to decode when it goes on after its text.
	var head []byte
	switch {
	case h.typ == TypeSay:
		head = []byte(`{"type":"say","text":""`)
	case h.level != "":
		head = []byte(`{"type":"log","level":"` + h.level + `","message":""`)
	default:
		head = []byte(`{"type":"log","message":""`)
	}
	res := LongTextRead{Line: r.lines}
	if err == nil || errors.As(err, &res.Syntax) {
		if synth, rerr := t.rest(head); rerr != nil {
			err = rerr
		} else {
			res.Synth, res.Tail = synth, synth[len(head):]
		}
	}
	var tooLong *LineTooLongError
	if errors.As(err, &tooLong) {
		if err = t.skipLine(); err == nil {
			err = &LineTooLongError{Size: t.size, Limit: r.limit}
		}
	}
	if res.Syntax != nil && errors.Is(err, res.Syntax) {
		err = nil // said by Syntax
	}
	res.Size, res.Rest, res.Err, res.Over = t.size, t.out, err, t.over
	return res
}

// Type is the line's message type: TypeSay or TypeLog.
func (h LongText) Type() string { return h.typ }

// Level is a log's level, LevelInfo when none came before its text.
func (h LongText) Level() string { return cmp.Or(h.level, LevelInfo) }

// Err is the error that ended the input, nil at its end or while it goes on.
func (r *Reader) Err() error { return r.err }
