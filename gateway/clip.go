package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/orchestrator-zero/oz0/internal/jsonutil"
)

// clipBody keeps a request body over budget for people to read: a JSON body with its longest
// strings clipped to one length, the largest that makes the whole fit, each clip marked in its
// text ("…[oz0: 9.5 MiB more not kept]"); keys, their order and every other value are kept. What
// is not JSON, or cannot fit so (a body of many small strings), is kept to its first bytes. It
// returns the kept text and a note of what was cut. It runs only for bodies over the bound.
func clipBody(body []byte, budget int) (string, string) {
	var lens []int
	if err := walkJSON(body, func(s string) string { lens = append(lens, len(s)); return s }, io.Discard); err == nil && len(lens) > 0 {
		// The longest a string may stay: the largest L with the clipped body within budget.
		sorted := append([]int(nil), lens...)
		sort.Sort(sort.Reverse(sort.IntSlice(sorted)))
		fits := func(l int) bool {
			size := len(body)
			for _, n := range sorted {
				if n <= l {
					break
				}
				size -= n - l - clipMarkLen // a little over: escapes are counted as their bytes
			}
			return size <= budget
		}
		lo, hi := 0, sorted[0]
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if fits(mid) {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		if lo >= 1<<10 {
			var out bytes.Buffer
			clipped := 0
			_ = walkJSON(body, func(s string) string {
				if len(s) <= lo {
					return s
				}
				clipped++
				cut := lo
				for cut > 0 && !utf8.RuneStart(s[cut]) {
					cut--
				}
				return s[:cut] + clipMark(len(s)-cut)
			}, &out)
			if out.Len() <= budget {
				return out.String(), fmt.Sprintf("%d string%s longer than %s clipped, each marked where it was cut", clipped, plural(clipped), SizeText(lo))
			}
		}
	}
	cut := budget
	for cut > 0 && !utf8.RuneStart(body[cut]) {
		cut--
	}
	return string(body[:cut]), fmt.Sprintf("kept to its first %s (it is not JSON whose strings can be clipped to fit)", SizeText(cut))
}

// clipMarkLen is about the length of a clip's mark.
const clipMarkLen = 32

func clipMark(n int) string { return "…[oz0: " + SizeText(n) + " more not kept]" }

// walkJSON writes the JSON value b to w with each string value (not key) replaced by str's
// answer, keeping keys, their order and other values as they are.
func walkJSON(b []byte, str func(string) string, w io.Writer) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	type frame struct {
		object bool
		n      int // tokens written in it: in an object, even before a key
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if len(stack) != 0 {
				return io.ErrUnexpectedEOF
			}
			return nil
		}
		if err != nil {
			return err
		}
		isKey := false
		if n := len(stack); n > 0 {
			f := &stack[n-1]
			if d, ok := tok.(json.Delim); !ok || (d != '}' && d != ']') {
				switch {
				case f.object && f.n%2 == 0:
					isKey = true
					if f.n > 0 {
						io.WriteString(w, ",")
					}
				case f.object:
					io.WriteString(w, ":")
				case f.n > 0:
					io.WriteString(w, ",")
				}
				f.n++
			}
		}
		switch v := tok.(type) {
		case json.Delim:
			io.WriteString(w, v.String())
			switch v {
			case '{', '[':
				stack = append(stack, frame{object: v == '{'})
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if !isKey {
				v = str(v)
			}
			q, _ := jsonutil.Marshal(v)
			w.Write(q)
		case json.Number:
			io.WriteString(w, v.String())
		case bool:
			io.WriteString(w, strconv.FormatBool(v))
		case nil:
			io.WriteString(w, "null")
		}
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
