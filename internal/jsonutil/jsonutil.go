// Package jsonutil is encoding/json as oz0 writes JSON everywhere: without HTML escaping, so <, >
// and & stay as they are, as the providers' APIs, Python's json and the harness protocol write
// them (encoding/json escapes them by default, for embedding in HTML).
package jsonutil

import (
	"bytes"
	"encoding/json"
	"io"
)

// Marshal is json.Marshal without HTML escaping.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := NewEncoder(&buf).Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// NewEncoder is json.NewEncoder without HTML escaping: one value a line.
func NewEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

// IsObject reports whether r, valid JSON, is an object.
func IsObject(r json.RawMessage) bool {
	r = bytes.TrimLeft(r, " \t\r\n")
	return len(r) > 0 && r[0] == '{'
}
