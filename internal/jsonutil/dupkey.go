package jsonutil

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
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
	if bytes.IndexByte(b, '{') < 0 {
		return "", "", false
	}
	type frame struct {
		keys  map[string]bool // nil for an array
		path  string
		index int  // an array's next element
		key   bool // an object expects a key next
		name  string
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var stack []frame
	// child is the path of the value that comes next in the innermost container.
	child := func() string {
		if len(stack) == 0 {
			return ""
		}
		f := &stack[len(stack)-1]
		if f.keys == nil {
			return f.path + "[" + strconv.Itoa(f.index) + "]"
		}
		return f.path + "." + f.name
	}
	// done marks a value of the innermost container read.
	done := func() {
		if len(stack) == 0 {
			return
		}
		f := &stack[len(stack)-1]
		if f.keys == nil {
			f.index++
		} else {
			f.key = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", "", false // the end, or not JSON: nothing more to find
		}
		if len(stack) > 0 && stack[len(stack)-1].keys != nil && stack[len(stack)-1].key {
			f := &stack[len(stack)-1]
			switch k := tok.(type) {
			case string:
				folded := foldKey(k)
				if f.keys[folded] {
					return k, f.path, true
				}
				f.keys[folded], f.name, f.key = true, k, false
				continue
			case json.Delim: // '}'
				stack = stack[:len(stack)-1]
				done()
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{keys: map[string]bool{}, path: child(), key: true})
		case json.Delim('['):
			stack = append(stack, frame{path: child()})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			done()
		default:
			done()
		}
	}
}

// foldKey is k with each rune the smallest of its case-folding orbit: two keys are equal under
// Unicode's simple folding (strings.EqualFold, as encoding/json matches a field) when their
// foldKeys are.
func foldKey(k string) string {
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
