package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
)

// A small scanner over the top level of a JSON object. The gateway reads a few top-level fields
// of requests (model, stream, stream_options) and responses (usage) without decoding the rest:
// skipping a value is a byte scan that allocates nothing, which keeps the added latency flat as
// conversations grow.

var errNotObject = errors.New("not a JSON object")

// member is one top-level member of an object: its key and the byte range of its value.
type member struct {
	key        []byte // raw, between the quotes (escapes not decoded)
	start, end int    // body[start:end] is the value
}

// keyIs reports whether the member's key is name (decoding escapes when there are any).
func (m member) keyIs(name string) bool {
	if bytes.IndexByte(m.key, '\\') < 0 {
		return string(m.key) == name
	}
	var s string
	q := make([]byte, 0, len(m.key)+2)
	q = append(append(append(q, '"'), m.key...), '"')
	return json.Unmarshal(q, &s) == nil && s == name
}

// topLevel calls fn for each member of the JSON object in data, in order, until fn returns false.
// It checks the structure only as far as it needs to find where values end; a body it cannot
// scan gives an error and the caller forwards it untouched, for the upstream to judge.
func topLevel(data []byte, fn func(member) bool) error {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return errNotObject
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return nil
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return errNotObject
		}
		kend, ok := skipString(data, i)
		if !ok {
			return errNotObject
		}
		key := data[i+1 : kend-1]
		i = skipSpace(data, kend)
		if i >= len(data) || data[i] != ':' {
			return errNotObject
		}
		i = skipSpace(data, i+1)
		vend, ok := skipValue(data, i)
		if !ok {
			return errNotObject
		}
		if !fn(member{key: key, start: i, end: vend}) {
			return nil
		}
		i = skipSpace(data, vend)
		if i >= len(data) {
			return errNotObject
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return nil
		default:
			return errNotObject
		}
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just past the string that starts at data[i] == '"'.
func skipString(data []byte, i int) (int, bool) {
	i++
	for i < len(data) {
		j := bytes.IndexByte(data[i:], '"')
		if j < 0 {
			return 0, false
		}
		q := i + j
		// The quote ends the string unless an odd number of backslashes escape it. The run of
		// backslashes cannot reach back past i: data[i-1] is a quote.
		n := 0
		for k := q - 1; k >= i && data[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, true
		}
		i = q + 1
	}
	return 0, false
}

// skipValue returns the index just past the value that starts at data[i].
func skipValue(data []byte, i int) (int, bool) {
	if i >= len(data) {
		return 0, false
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				end, ok := skipString(data, i)
				if !ok {
					return 0, false
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	default:
		start := i
		for i < len(data) {
			switch data[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i, i > start
			}
			i++
		}
		return i, i > start
	}
}

// edit replaces body[start:end] with text.
type edit struct {
	start, end int
	text       []byte
}

// atoi parses a JSON integer (a non-negative one: token counts); ok is false for anything else.
func atoi(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// member returns the value of the top-level member key of the JSON object data; nil when absent.
func memberValue(data []byte, key string) []byte {
	var v []byte
	topLevel(data, func(m member) bool {
		if m.keyIs(key) {
			v = data[m.start:m.end]
			return false
		}
		return true
	})
	return v
}
