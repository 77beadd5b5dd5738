package harnesskit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/orchestrator-zero/oz0/internal/jsonutil"
	"github.com/orchestrator-zero/oz0/internal/textclip"
)

// MaxLine is the longest line the protocol allows: 8 MiB, the "\n" included.
const MaxLine = 8 << 20

var (
	// ErrLineTooLong is wrapped by the *LineTooLongError a Reader returns for a line over its
	// limit, and by the error a Writer returns for a message that would make one.
	ErrLineTooLong = errors.New("line over the protocol's limit")
	// ErrInvalidUTF8 is returned by Reader.ReadLine, with the line, for a line that is not valid
	// UTF-8.
	ErrInvalidUTF8 = errors.New("line is not valid UTF-8")
)

// LineTooLongError is a line over the limit. The reader has discarded it, up to and including its
// "\n", and goes on with the next line.
type LineTooLongError struct {
	Size  int64 // the line's length, its "\n" included (at end of input: the bytes there were)
	Limit int   // the limit, MaxLine unless the Reader was made with another
}

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("a line of %d bytes is over the protocol's limit of %s (%d bytes)", e.Size, textclip.SizeName(int64(e.Limit)), e.Limit)
}

func (e *LineTooLongError) Unwrap() error { return ErrLineTooLong }

// Reader reads the protocol's lines. Unlike bufio.Scanner it takes lines of any length up to its
// limit, and it refuses a longer line in bounded memory: it discards the rest of that line and
// goes on with the next one.
type Reader struct {
	br    *bufio.Reader
	limit int
	buf   []byte
	lines int64
	err   error // sticky: the reader is done
}

// readerBuffer is the size of a Reader's read buffer: a line that fits is returned without a copy.
const readerBuffer = 64 << 10

// NewReader returns a Reader of lines up to MaxLine.
func NewReader(r io.Reader) *Reader { return NewReaderSize(r, MaxLine) }

// NewReaderSize returns a Reader of lines up to limit bytes, "\n" included (limit ≥ 2).
func NewReaderSize(r io.Reader, limit int) *Reader {
	limit = max(limit, 2)
	return &Reader{br: bufio.NewReaderSize(r, min(readerBuffer, max(limit, 16))), limit: limit}
}

// Lines returns the number of lines read so far, a refused one included: the number of the line
// ReadLine returned last.
func (r *Reader) Lines() int64 { return r.lines }

// ReadLine returns the next line without its "\n" and without a "\r" before it. The line is valid
// until the next call. A last line without "\n" at the end of the input is returned as a line.
//
// Errors: a line over the limit is a *LineTooLongError (errors.Is ErrLineTooLong) with a nil
// line; a line that is not valid UTF-8 is returned whole with an error wrapping ErrInvalidUTF8.
// After either, the Reader goes on with the next line. At the end of the input the error is
// io.EOF; any other read error is returned as it is, and the Reader is done.
func (r *Reader) ReadLine() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	if cap(r.buf) > 1<<20 {
		r.buf = nil // one long line does not pin its buffer for the rest of the session
	}
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(r.buf)+len(chunk) > r.limit {
			return nil, r.discard(int64(len(r.buf)+len(chunk)), err)
		}
		switch err {
		case nil:
			line := chunk
			if len(r.buf) > 0 {
				r.buf = append(r.buf, chunk...)
				line = r.buf
			}
			return r.line(line[:len(line)-1])
		case bufio.ErrBufferFull:
			r.buf = grow(r.buf, len(chunk), r.limit)
			r.buf = append(r.buf, chunk...)
			continue
		default:
			if n := len(r.buf) + len(chunk); n >= r.limit { // with its "\n" it would be over
				return nil, r.discard(int64(n), err)
			} else if n > 0 {
				r.buf = append(r.buf, chunk...)
				if err != io.EOF {
					r.err = err
				}
				return r.line(r.buf)
			}
			r.err = err
			return nil, err
		}
	}
}

// Keep gives the caller the line ReadLine returned last, a line longer than the read buffer
// (PeekLong) that it read into a buffer of its own: the Reader lets go of that buffer and will
// not reuse it, so the line stays valid (DecodeHarnessLine may keep slices of it), and the Reader
// holds nothing of it while it waits for the next line.
func (r *Reader) Keep() { r.buf = nil }

// Discard reads the rest of the input and drops it, holding no more than the read buffer; the
// Reader is done after it.
func (r *Reader) Discard() {
	r.buf = nil
	if r.err == nil {
		_, r.err = r.br.WriteTo(io.Discard)
		if r.err == nil {
			r.err = io.EOF
		}
	}
}

// grow makes room for n more bytes in buf, doubling (append grows large slices by only 1.25×,
// which would allocate about five times the line), but not past limit.
func grow(buf []byte, n, limit int) []byte {
	if len(buf)+n <= cap(buf) {
		return buf
	}
	size := min(max(2*cap(buf), len(buf)+n, 4096), limit)
	return append(make([]byte, 0, size), buf...)
}

func (r *Reader) line(line []byte) ([]byte, error) {
	r.lines++
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if !utf8.Valid(line) {
		return line, fmt.Errorf("line %d: %w", r.lines, ErrInvalidUTF8)
	}
	return line, nil
}

// discard reads to the end of a line over the limit, keeping nothing; size is what was read of it
// so far and err the error of the last read.
func (r *Reader) discard(size int64, err error) error {
	r.lines++
	r.buf = r.buf[:0]
	for err == bufio.ErrBufferFull {
		var chunk []byte
		chunk, err = r.br.ReadSlice('\n')
		size += int64(len(chunk))
	}
	if err != nil && err != io.EOF {
		r.err = err
	}
	return &LineTooLongError{Size: size, Limit: r.limit}
}

// Writer writes protocol messages, one compact JSON object per line, each in one Write call. It is
// safe for concurrent use.
type Writer struct {
	mu    sync.Mutex
	w     io.Writer
	buf   bytes.Buffer
	enc   *json.Encoder
	limit int
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer {
	wr := &Writer{w: w, limit: MaxLine}
	wr.enc = jsonutil.NewEncoder(&wr.buf)
	return wr
}

// Encode writes v, a Message or any value that marshals to a JSON object, as one line. A line that
// would be over MaxLine is not written: the error wraps ErrLineTooLong. U+2028 and U+2029 are
// escaped, and invalid UTF-8 in strings is replaced, so every line is valid UTF-8.
func (w *Writer) Encode(v any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Reset()
	defer func() {
		if w.buf.Cap() > 1<<20 {
			w.buf = bytes.Buffer{}
		}
	}()
	if err := w.enc.Encode(v); err != nil {
		return err
	}
	line := w.buf.Bytes()
	if len(line) == 0 || line[0] != '{' {
		return fmt.Errorf("harnesskit: a protocol line must be a JSON object, not %.40s", line)
	}
	if len(line) > w.limit {
		return fmt.Errorf("a %s message: %w", typeOf(v), &LineTooLongError{Size: int64(len(line)), Limit: w.limit})
	}
	if !utf8.Valid(line) { // a json.RawMessage may carry invalid UTF-8 through
		return fmt.Errorf("a %s line that is not valid UTF-8", typeOf(v))
	}
	_, err := w.w.Write(line)
	return err
}

func typeOf(v any) string {
	if m, ok := v.(Message); ok && m.MessageType() != "" {
		return m.MessageType()
	}
	return fmt.Sprintf("%T", v)
}
