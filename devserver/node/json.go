package node

import (
	"bytes"
	"encoding/json"

	"github.com/orchestrator-zero/oz0/internal/jsonutil"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func jsonUnmarshal(b []byte) (any, error) { return jsonschema.UnmarshalJSON(bytes.NewReader(b)) }

// sameJSON reports whether two JSON values are equal as values, whatever their spacing and key
// order.
func sameJSON(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	va, err1 := jsonUnmarshal(a)
	vb, err2 := jsonUnmarshal(b)
	if err1 != nil || err2 != nil {
		return bytes.Equal(a, b)
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return bytes.Equal(ja, jb)
}

// member is a member of an event's data: a json.RawMessage value is JSON already, kept as it
// is; any other is encoded.
type member struct {
	key   string
	value any
}

// eventData is an event's data, a JSON object of members in order, made in one buffer of its
// size: a long value (a tool's result, a call's arguments) is copied once, into it, where
// json.Marshal of a map copied it into its buffer, grew it, then copied it out. A JSON value is
// compacted as json.Marshal does it: the live stream sends each event's data on one line, and a
// value from a harness's line may hold a "\r" between its tokens.
func eventData(members ...member) json.RawMessage {
	values := make([][]byte, len(members))
	raw := make([]bool, len(members))
	size := 2
	for i, m := range members {
		v, ok := m.value.(json.RawMessage)
		switch {
		case ok && len(bytes.TrimSpace(v)) == 0:
			v = json.RawMessage("null")
		case !ok:
			v, _ = jsonutil.Marshal(m.value) // strings and booleans: always encode
		}
		values[i], raw[i] = v, ok
		size += len(m.key) + 4 + len(v)
	}
	var b bytes.Buffer
	b.Grow(size)
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + m.key + `":`)
		if !raw[i] || json.Compact(&b, values[i]) != nil {
			b.Write(values[i]) // not JSON: the store refuses it, saying so
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}
