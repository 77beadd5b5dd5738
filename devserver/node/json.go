package node

import (
	"bytes"
	"encoding/json"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func jsonUnmarshal(b []byte) (any, error) { return jsonschema.UnmarshalJSON(bytes.NewReader(b)) }

// sameJSON reports whether two JSON values are equal as values, whatever their spacing and key
// order.
func sameJSON(a, b json.RawMessage) bool {
	va, err1 := jsonUnmarshal(a)
	vb, err2 := jsonUnmarshal(b)
	if err1 != nil || err2 != nil {
		return bytes.Equal(a, b)
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return bytes.Equal(ja, jb)
}
