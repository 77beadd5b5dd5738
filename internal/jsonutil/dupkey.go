package jsonutil

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DuplicateKey finds an object in b, valid JSON, that has a key twice, at any depth; keys are
// compared as they decode ("te\u0061m" is "team") and with case folded ("Team" is "team": Go's
// encoding/json fills a struct's field from either, the last one). It returns the key and where
// its object is
// (a path such as `.filter[2]`, empty for the top). JSON parsers differ on such an object (Go's
// and Python's take the last value, others the first, some refuse it), so a node that decides on
// one value and hands the text to a tool that reads another would decide one call and run
// another.
func DuplicateKey(b []byte) (key, at string, found bool) {
	return duplicateKey(b, -1)
}

// DuplicateMember is DuplicateKey for the members of the object b is, its top level alone: what
// a protocol line's own keys are ("type", "id", …). Nested values are skipped, not looked into.
func DuplicateMember(b []byte) (key string, found bool) {
	key, _, found = duplicateKey(b, 1)
	return key, found
}

// keyFrame is an object or array duplicateKey is in.
type keyFrame struct {
	object    bool
	expectKey bool     // an object: a key comes next
	keys      []string // an object's folded keys so far (a set past smallKeys of them)
	set       map[string]struct{}
	name      string // an object's key being read: where its value is
	index     int    // an array's element being read
}

// smallKeys is how many keys an object's frame compares one by one before it keeps a set.
const smallKeys = 16

// duplicateKey scans b once, without decoding values (a string value is skipped, not copied),
// looking at objects up to maxDepth levels deep (-1: all). It stops, finding nothing, at what is
// not JSON.
func duplicateKey(b []byte, maxDepth int) (key, at string, found bool) {
	if bytes.IndexByte(b, '{') < 0 {
		return "", "", false
	}
	var stack []keyFrame
	// done marks a value of the innermost container read.
	done := func() {
		if n := len(stack); n > 0 && !stack[n-1].object {
			stack[n-1].index++
		}
	}
	for i := 0; i < len(b); {
		switch c := b[i]; c {
		case ' ', '\t', '\r', '\n', ':':
			i++
		case ',':
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].expectKey = true
			}
			i++
		case '{', '[':
			if maxDepth >= 0 && len(stack) >= maxDepth {
				end := skipContainer(b, i)
				if end < 0 {
					return "", "", false
				}
				i = end
				done()
				continue
			}
			stack = append(stack, keyFrame{object: c == '{', expectKey: c == '{'})
			i++
		case '}', ']':
			if len(stack) == 0 {
				return "", "", false
			}
			stack = stack[:len(stack)-1]
			done()
			i++
		case '"':
			end := stringEnd(b, i)
			if end < 0 {
				return "", "", false
			}
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expectKey {
				f := &stack[n-1]
				k, ok := String(b[i:end])
				if !ok {
					return "", "", false
				}
				if f.seen(foldKey(k)) {
					return k, keyPath(stack[:n-1]), true
				}
				f.name, f.expectKey = k, false
			} else {
				done()
			}
			i = end
		default: // a number, true, false or null
			for i < len(b) && !strings.ContainsRune(",:]} \t\r\n", rune(b[i])) {
				i++
			}
			done()
		}
	}
	return "", "", false
}

// seen adds the folded key k to the object's keys, reporting whether it was there.
func (f *keyFrame) seen(k string) bool {
	if f.set != nil {
		if _, ok := f.set[k]; ok {
			return true
		}
		f.set[k] = struct{}{}
		return false
	}
	for _, have := range f.keys {
		if have == k {
			return true
		}
	}
	f.keys = append(f.keys, k)
	if len(f.keys) > smallKeys {
		f.set = make(map[string]struct{}, 2*len(f.keys))
		for _, have := range f.keys {
			f.set[have] = struct{}{}
		}
		f.keys = nil
	}
	return false
}

// keyPath is where the innermost frame's object is: each outer frame's member or element.
func keyPath(outer []keyFrame) string {
	var p strings.Builder
	for _, f := range outer {
		if f.object {
			p.WriteString("." + f.name)
		} else {
			p.WriteString("[" + strconv.Itoa(f.index) + "]")
		}
	}
	return p.String()
}

// stringEnd is the index after the JSON string that begins at b[i] (a quote), -1 when it does not
// end.
func stringEnd(b []byte, i int) int {
	for j := i + 1; ; {
		q := bytes.IndexByte(b[j:], '"')
		if q < 0 {
			return -1
		}
		j += q
		slashes := 0
		for k := j - 1; k > i && b[k] == '\\'; k-- {
			slashes++
		}
		if slashes%2 == 0 {
			return j + 1
		}
		j++
	}
}

// skipContainer is the index after the object or array that begins at b[i], -1 when it does not
// end.
func skipContainer(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch b[i] {
		case '"':
			end := stringEnd(b, i)
			if end < 0 {
				return -1
			}
			i = end
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
		i++
	}
	return -1
}

// String decodes a JSON string, its quotes included; ok is false when v is not one. A string
// without escapes is taken as it is, without the decoder.
func String(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), true
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// foldKey is k with each rune the smallest of its case-folding orbit: two keys are equal under
// Unicode's simple folding (strings.EqualFold, as encoding/json matches a field) when their
// foldKeys are. An ASCII letter's smallest is its upper case.
func foldKey(k string) string {
	ascii := true
	for i := 0; i < len(k); i++ {
		if k[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToUpper(k)
	}
	var b strings.Builder
	b.Grow(len(k))
	for _, r := range k {
		low := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			low = min(low, f)
		}
		b.WriteRune(low)
	}
	return b.String()
}
