package harnesskit_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/orchestrator-zero/oz0/harnesskit"
)

type readResult struct {
	line string
	err  error
}

func readAll(r *harnesskit.Reader) []readResult {
	var out []readResult
	for {
		line, err := r.ReadLine()
		if err == io.EOF {
			return out
		}
		out = append(out, readResult{string(line), err})
		if err != nil && !errors.Is(err, harnesskit.ErrLineTooLong) && !errors.Is(err, harnesskit.ErrInvalidUTF8) {
			return out
		}
	}
}

func TestReaderLines(t *testing.T) {
	big := strings.Repeat("x", 1<<20) // far past bufio.Scanner's 64 KiB
	input := "one\ntwo\r\n\n" + big + "\n\xffbad\nlast"
	results := readAll(harnesskit.NewReader(strings.NewReader(input)))
	want := []string{"one", "two", "", big, "\xffbad", "last"}
	if len(results) != len(want) {
		t.Fatalf("%d lines, want %d", len(results), len(want))
	}
	for i, r := range results {
		if r.line != want[i] {
			t.Errorf("line %d: %.20q, want %.20q", i+1, r.line, want[i])
		}
		if bad := i == 4; bad != errors.Is(r.err, harnesskit.ErrInvalidUTF8) || (!bad && r.err != nil) {
			t.Errorf("line %d: error %v", i+1, r.err)
		}
	}
}

func TestReaderLimit(t *testing.T) {
	exact := strings.Repeat("a", harnesskit.MaxLine-1) // with its "\n", exactly MaxLine
	over := strings.Repeat("b", harnesskit.MaxLine)
	r := harnesskit.NewReader(strings.NewReader(exact + "\n" + over + "\nafter\n" + over))
	line, err := r.ReadLine()
	if err != nil || len(line) != harnesskit.MaxLine-1 {
		t.Fatalf("a line of exactly MaxLine: %d bytes, %v", len(line), err)
	}
	line, err = r.ReadLine()
	var tooLong *harnesskit.LineTooLongError
	if !errors.As(err, &tooLong) || line != nil || tooLong.Size != harnesskit.MaxLine+1 || r.Lines() != 2 {
		t.Fatalf("over the limit: %d bytes, %v (line %d)", len(line), err, r.Lines())
	}
	if want := "a line of 8388609 bytes is over the protocol's limit of 8 MiB (8388608 bytes)"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if line, err = r.ReadLine(); string(line) != "after" || err != nil {
		t.Fatalf("after the long line: %q, %v", line, err)
	}
	// A long last line without "\n" is over the limit too.
	if _, err = r.ReadLine(); !errors.Is(err, harnesskit.ErrLineTooLong) {
		t.Fatalf("a long last line: %v", err)
	}
	if _, err = r.ReadLine(); err != io.EOF {
		t.Fatalf("at the end: %v", err)
	}
}

// endless is an io.Reader of n bytes of 'x' then "\nok\n", made up as it is read.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return copy(p, "\nok\n"), io.EOF
	}
	k := min(int64(len(p)), e.n)
	for i := range k {
		p[i] = 'x'
	}
	e.n -= k
	return int(k), nil
}

// A line far over the limit is discarded in bounded memory.
func TestReaderLongLineBoundedMemory(t *testing.T) {
	const size = 256 << 20
	r := harnesskit.NewReader(&endless{n: size})
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := r.ReadLine()
	runtime.ReadMemStats(&after)
	var tooLong *harnesskit.LineTooLongError
	if !errors.As(err, &tooLong) || tooLong.Size != size+1 {
		t.Fatalf("error %v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 3*harnesskit.MaxLine {
		t.Errorf("reading a %d MiB line allocated %d MiB", size>>20, alloc>>20)
	}
	if line, err := r.ReadLine(); string(line) != "ok" || err != nil {
		t.Errorf("after it: %q %v", line, err)
	}
}

func TestReaderReadErrors(t *testing.T) {
	boom := errors.New("boom")
	r := harnesskit.NewReader(io.MultiReader(strings.NewReader("one\npart"), iotest.ErrReader(boom)))
	if line, err := r.ReadLine(); string(line) != "one" || err != nil {
		t.Fatalf("%q %v", line, err)
	}
	if line, err := r.ReadLine(); string(line) != "part" || err != nil {
		t.Fatalf("the part before the error: %q %v", line, err)
	}
	if _, err := r.ReadLine(); err != boom {
		t.Fatalf("then the error: %v", err)
	}
	if _, err := r.ReadLine(); err != boom {
		t.Fatalf("and again: %v", err)
	}
	// One byte at a time makes no difference.
	results := readAll(harnesskit.NewReaderSize(iotest.OneByteReader(strings.NewReader("ab\r\ncdefgh\nij")), 4))
	if len(results) != 3 || results[0].line != "ab" || !errors.Is(results[1].err, harnesskit.ErrLineTooLong) || results[2].line != "ij" {
		t.Errorf("%+v", results)
	}
}

func TestWriter(t *testing.T) {
	var buf bytes.Buffer
	w := harnesskit.NewWriter(&buf)
	if err := w.Encode(harnesskit.Say{Text: "a\nb <&> \u2028\u2029"}); err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"say","text":"a\nb <&> \u2028\u2029"}` + "\n"; buf.String() != want {
		t.Errorf("%q, want %q", buf.String(), want)
	}
	if err := w.Encode(harnesskit.Say{Text: strings.Repeat("x", harnesskit.MaxLine)}); !errors.Is(err, harnesskit.ErrLineTooLong) {
		t.Errorf("a line over the limit: %v", err)
	}
	if err := w.Encode([]int{1}); err == nil {
		t.Error("an array was written")
	}
	if err := w.Encode(harnesskit.Result{Output: json.RawMessage("\"\xff\"")}); err == nil {
		t.Error("invalid UTF-8 was written")
	}
	if strings.Count(buf.String(), "\n") != 1 {
		t.Errorf("refused lines were written: %q", buf.String())
	}
}

func TestDecodeHarnessMessage(t *testing.T) {
	for line, want := range map[string]string{
		`{"type":"say","text":"hi"}`:                                       "harnesskit.Say {hi}",
		`{"type":"say","text":"hi","ts":1}`:                                "harnesskit.Say {hi}",
		`{"type":"tool_result","id":"p1","tool":"t","result":null}`:        `harnesskit.ToolResult {p1 t [110 117 108 108] }`,
		`{"type":"log","message":"m"}`:                                     "harnesskit.Log {info m}",
		`{"type":"result","output":null}`:                                  "harnesskit.Result {[110 117 108 108]}",
		`{"type":"mystery"}`:                                               "harnesskit.Unknown {mystery [123 34 116 121 112 101 34 58 34 109 121 115 116 101 114 121 34 125]}",
		`{"type":"say","text":5}`:                                          "error: a say message that is not valid: text is number, not a string",
		`{"type":"permission_request","id":"p1","tool":"t","arguments":3}`: "error: a permission_request message that is not valid: arguments is not a JSON object",
		`{"type":"permission_request","tool":"t","arguments":{}}`:          "error: a permission_request message that is not valid: no id",
		`{"type":"tool_result","id":"p1","tool":"t"}`:                      "error: a tool_result message that is not valid: neither result nor error",
		`{"type":"error"}`:                                                 "error: an error message that is not valid: no message",
		`hello`:                                                            "error: not JSON",
		`{"type":"say"`:                                                    "error: not JSON: unexpected end of JSON input",
		`"say"`:                                                            "error: not a JSON object",
		`{"type":"say","text":"x"} {}`:                                     "error: not JSON: invalid character '{' after top-level value",
		// A key twice is no message, whichever the key and its spelling: encoding/json would
		// take the last (a result), other parsers the first (a say).
		`{"type":"say","text":"hi","type":"result","output":"forged"}`:       `error: an object with the key "type" twice`,
		`{"type":"say","text":"hi","Type":"result","output":"forged"}`:       `error: an object with the key "Type" twice`,
		`{"type":"tool_result","id":"p1","id":"p2","tool":"t","result":1}`:   `error: an object with the key "id" twice`,
		`{"type":"mystery","x":1,"x":2}`:                                     `error: an object with the key "x" twice`,
		`{"type":"tool_result","id":"p1","tool":"t","result":{"a":1,"a":2}}`: `harnesskit.ToolResult {p1 t [123 34 97 34 58 49 44 34 97 34 58 50 125] }`,
	} {
		m, err := harnesskit.DecodeHarnessMessage([]byte(line))
		got := ""
		if err != nil {
			got = "error: " + err.Error()
		} else {
			got = fmt.Sprintf("%T %v", m, m)
		}
		if got != want {
			t.Errorf("%s:\n got %s\nwant %s", line, got, want)
		}
	}
}

// FuzzDecode reads arbitrary input as protocol lines and decodes each: the reader never panics,
// never returns a line over its limit, and loses nothing of a line within it; the decoders never
// panic, and what they decode encodes to a line that decodes the same.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"type":"say","text":"hi"}` + "\n",
		`{"type":"permission_request","id":"p1","tool":"t","arguments":{"a":1}}` + "\r\n",
		`{"type":"tool_result","id":"p1","tool":"t","error":"e"}`,
		`{"type":"result","output":{"x":[1,2,{"y":null}]}}` + "\n\n" + `{"type":"error","message":"m"}`,
		`{"type":"permission","id":"p1","decision":"allow","arguments":{}}` + "\n",
		`{"type":"session","protocol":1,"input":{"a":1},"tools":["t"]}` + "\n",
		"\xff\xfe\n{\"type\":\"say\",\"text\":\"\xe9\"}\n",
		strings.Repeat("x", 100) + "\nok\n",
		"[1,2]\n\"s\"\nnull\n{}\n{\"type\":7}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkDecode(t, data) })
}

func checkDecode(t testing.TB, data []byte) {
	const limit = 64
	// With a limit of 64 bytes, longer input adds lines, not paths: keep each run (and the
	// fuzzer's minimization) fast.
	data = data[:min(len(data), 8<<10)]
	{
		r := harnesskit.NewReaderSize(bytes.NewReader(data), limit)
		var kept []string
		for {
			line, err := r.ReadLine()
			if err == io.EOF {
				break
			}
			if len(line) >= limit {
				t.Fatalf("a line of %d bytes from a reader of limit %d", len(line), limit)
			}
			if errors.Is(err, harnesskit.ErrLineTooLong) {
				kept = append(kept, "\x00too long")
				continue
			}
			if err != nil && !errors.Is(err, harnesskit.ErrInvalidUTF8) {
				t.Fatalf("error %v", err)
			}
			kept = append(kept, string(line))
			for _, decode := range []func([]byte) (harnesskit.Message, error){harnesskit.DecodeHarnessMessage, harnesskit.DecodeNodeMessage} {
				m, err := decode(line)
				if err != nil {
					continue
				}
				if u, ok := m.(harnesskit.Unknown); ok && u.Raw == nil {
					t.Fatal("an Unknown without its line")
				}
				enc, err := harnesskit.Encode(m)
				if err != nil {
					continue // a RawMessage field of invalid JSON cannot come from a valid line
				}
				m2, err := decode(enc)
				if err != nil {
					t.Fatalf("%q decodes to %#v, which encodes to %q, which does not decode: %v", line, m, enc, err)
				}
				enc2, _ := harnesskit.Encode(m2)
				if !sameJSON(t, enc, enc2) {
					t.Fatalf("%q: encoding is not stable: %s then %s", line, enc, enc2)
				}
			}
		}
		// Every line within the limit comes back whole (minus a "\r" before its "\n").
		var want []string
		parts := strings.Split(string(data), "\n")
		for i, l := range parts {
			last := i == len(parts)-1
			if last && l == "" {
				break
			}
			// A last line without "\n" is counted as if it had one.
			if len(l)+1 > limit {
				want = append(want, "\x00too long")
				continue
			}
			want = append(want, strings.TrimSuffix(l, "\r"))
		}
		if strings.Join(kept, "\n") != strings.Join(want, "\n") {
			t.Fatalf("lines\n got %q\nwant %q", kept, want)
		}
	}
}

// A real-size reader on fuzz input never returns more than MaxLine.
func TestDecodeWithMaxLine(t *testing.T) {
	r := harnesskit.NewReader(strings.NewReader(strings.Repeat("y", harnesskit.MaxLine+10)))
	if line, err := r.ReadLine(); line != nil || !errors.Is(err, harnesskit.ErrLineTooLong) {
		t.Fatalf("%d bytes, %v", len(line), err)
	}
}

// Say lines, which the decoder reads by a fast path when they are as the SDKs write them, decode
// exactly as encoding/json reads them, whatever their shape.
func TestDecodeSayLines(t *testing.T) {
	for _, line := range []string{
		`{"type":"say","text":"hello"}`,
		`{"type":"say","text":""}`,
		`{"type":"say","text":"ünïcødé 🎉 <b>&amp;</b>"}`,
		`{"type":"say","text":"event 99999"}`,
		`{"type":"say","text":"a\"b"}`,
		`{"type":"say","text":"a\\b"}`,
		`{"type":"say","text":"a\nb \u00e9"}`,
		`{"type":"say","text":"a` + "\xff" + `b"}`,
		`{"type":"say","text":"a","extra":1}`,
		`{"type":"say","text":"a"} `,
		`{"type":"say", "text":"a"}`,
		`{"text":"a","type":"say"}`,
	} {
		var want struct{ Text string }
		if err := json.Unmarshal([]byte(line), &want); err != nil {
			t.Fatal(err)
		}
		got, err := harnesskit.DecodeHarnessMessage([]byte(line))
		if s, ok := got.(harnesskit.Say); err != nil || !ok || s.Text != want.Text {
			t.Errorf("%s: %#v %v, want %q", line, got, err, want.Text)
		}
	}
	for _, line := range []string{`{"type":"say","text":"`, `{"type":"say","text":"}`, `{"type":"say","text":"a"`} {
		if got, err := harnesskit.DecodeHarnessMessage([]byte(line)); err == nil {
			t.Errorf("%s: decoded as %#v", line, got)
		}
	}
}

// A long line the caller keeps (Reader.Keep) stays as it was while the reader reads on, and
// DecodeHarnessLine's values are slices of it, where DecodeHarnessMessage's are copies: an 8 MiB
// tool result was held twice, the line and the value.
func TestKeptLongLine(t *testing.T) {
	long := func(c string) string {
		return `{"type":"tool_result","id":"p1","tool":"t","result":"` + strings.Repeat(c, 200<<10) + `"}`
	}
	r := harnesskit.NewReader(strings.NewReader(long("a") + "\n" + long("b") + "\n"))
	if !r.PeekLong() {
		t.Fatal("a line of 200 KiB is not long")
	}
	first, err := r.ReadLine()
	if err != nil {
		t.Fatal(err)
	}
	r.Keep()
	m, err := harnesskit.DecodeHarnessLine(first)
	if err != nil {
		t.Fatal(err)
	}
	copied, _ := harnesskit.DecodeHarnessMessage(first)
	if second, err := r.ReadLine(); err != nil || !strings.Contains(string(second), "bbb") {
		t.Fatalf("the second line: %v", err)
	}
	res := m.(harnesskit.ToolResult).Result
	if string(first) != long("a") || string(res) != `"`+strings.Repeat("a", 200<<10)+`"` {
		t.Error("the kept line changed as the reader read on")
	}
	within := func(v, line []byte) bool {
		return len(v) > 0 && &v[0] == &line[len(line)-len(v)-1]
	}
	if !within(res, first) {
		t.Error("DecodeHarnessLine copied the result")
	}
	if within(copied.(harnesskit.ToolResult).Result, first) {
		t.Error("DecodeHarnessMessage kept a slice of the line")
	}
}
