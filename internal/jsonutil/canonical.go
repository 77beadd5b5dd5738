package jsonutil

import (
	"bytes"
	"encoding/json"
	"io"
)

// Canonical is the JSON text b with its strings decoded and written again as Marshal writes them
// ("sk\u002dant" becomes "sk-ant"), compact, its numbers, keys and their order as they were; ok is
// false when b is not JSON.
func Canonical(b []byte) (_ []byte, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	type frame struct {
		obj bool
		n   int // tokens in it so far
	}
	var stack []frame
	var out bytes.Buffer
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			out.WriteByte(byte(d))
			stack = stack[:len(stack)-1]
			continue
		}
		if len(stack) > 0 {
			f := &stack[len(stack)-1]
			switch {
			case f.obj && f.n%2 == 1:
				out.WriteByte(':')
			case f.n > 0:
				out.WriteByte(',')
			}
			f.n++
		}
		switch v := tok.(type) {
		case json.Delim:
			out.WriteByte(byte(v))
			stack = append(stack, frame{obj: v == '{'})
		case string:
			s, _ := Marshal(v)
			out.Write(s)
		case json.Number:
			out.WriteString(v.String())
		case bool:
			if v {
				out.WriteString("true")
			} else {
				out.WriteString("false")
			}
		case nil:
			out.WriteString("null")
		}
	}
	if len(stack) != 0 {
		return nil, false
	}
	return out.Bytes(), true
}

// MaskDecoded masks what shows in the JSON text b only once its strings are decoded: a secret
// escaped in it ("sk\u002dant…") that mask (a masker of the bytes as written) does not find in b.
// When b's canonical text holds one, that text, masked, is returned and changed is true; else b
// itself, byte for byte. A b that is not JSON is returned as it is.
//
// mask must find a secret written with JSON's named escapes (\" \\ \n \r \t \b \f), as the
// secret store's masker does: a b without a \u or \/ escape, which no other escape can hide a
// secret in, is then not decoded at all (decoding 7 MiB takes about twice json.Compact's time).
func MaskDecoded(b []byte, mask func([]byte) []byte) (_ []byte, changed bool) {
	if mask == nil || !bytes.Contains(b, []byte(`\u`)) && !bytes.Contains(b, []byte(`\/`)) {
		return b, false
	}
	c, ok := Canonical(b)
	if !ok || bytes.Equal(c, b) {
		return b, false
	}
	if m := mask(c); !bytes.Equal(m, c) {
		return m, true
	}
	return b, false
}
