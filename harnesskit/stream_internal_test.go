package harnesskit

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// chunky returns its input in pieces of random sizes, as a pipe does: escapes and characters of
// several bytes come cut at every place.
type chunky struct {
	r   io.Reader
	rnd *rand.Rand
}

func (c *chunky) Read(p []byte) (int, error) {
	return c.r.Read(p[:min(len(p), 1+c.rnd.IntN(9000))])
}

// The text read in pieces is the text encoding/json decodes from the line, for random texts of
// escapes (named, \u, surrogate pairs and lone halves, upper and lower hex), characters of one to
// four bytes, and plain runs, whatever the pieces the input comes in.
func TestReadStringAsEncodingJSON(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	atoms := []string{`a`, `plain text `, `é`, `€`, `😀`, `\n`, `\"`, `\\`, `\/`, `\b`, `\f`, `\r`, `\t`,
		`\u00e9`, `\u20AC`, `\ud83d\ude00`, `\uD83D\uDE00`, `\ud83d`, `\ude00`, `\ud83dx`, `\ud83d\u0041`, "\u2028", `<&>`}
	for i := range 40 {
		var b strings.Builder
		b.WriteString(`{"type":"say","text":"`)
		for b.Len() < 70000+rnd.IntN(200000) {
			b.WriteString(atoms[rnd.IntN(len(atoms))])
		}
		b.WriteString(`"}`)
		line := b.String()
		var want struct{ Text string }
		if err := json.Unmarshal([]byte(line), &want); err != nil {
			t.Fatalf("text %d: %v", i, err)
		}
		r := NewReader(&chunky{strings.NewReader(line + "\n" + `{"type":"result","output":1}` + "\n"), rnd})
		head, long := r.peekLong()
		if !long {
			t.Fatalf("text %d: a line of %d bytes is not long", i, len(line))
		}
		h, ok := streamHead(head)
		if !ok {
			t.Fatalf("text %d: the head is not streamable", i)
		}
		var got bytes.Buffer
		tr := &textReader{r: r, take: func(int64) string { return "" }, piece: func(p []byte) {
			if len(p) > PieceSize {
				t.Errorf("text %d: a piece of %d bytes", i, len(p))
			}
			got.Write(p)
		}}
		if err := tr.consume(h.n); err != nil {
			t.Fatal(err)
		}
		if err := tr.readString(); err != nil {
			t.Fatalf("text %d: %v", i, err)
		}
		got.Write(tr.out)
		rest, err := tr.rest(nil)
		if err != nil || string(rest) != "}" {
			t.Fatalf("text %d: the rest of the line %q, %v", i, rest, err)
		}
		if got.String() != want.Text {
			t.Fatalf("text %d: %d bytes read in pieces, not the %d encoding/json reads (first difference at %d)", i, got.Len(), len(want.Text), firstDifference(got.String(), want.Text))
		}
		if tr.size != int64(len(line)+1) {
			t.Errorf("text %d: %d bytes counted, the line has %d", i, tr.size, len(line)+1)
		}
		if next, err := r.ReadLine(); err != nil || string(next) != `{"type":"result","output":1}` {
			t.Fatalf("text %d: the next line %q, %v", i, next, err)
		}
	}
}

func firstDifference(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
