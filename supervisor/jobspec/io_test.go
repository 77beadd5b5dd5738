package jobspec

import (
	"encoding/json"
	"testing"
)

// TestJSONErrorAt: a syntax error in a job's JSON input is placed at the character that is
// wrong, or just past the end of an input that ends too soon.
func TestJSONErrorAt(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in, want string
	}{
		{"a bare word", "forty-two", "line 1, column 2: invalid character 'o' in literal false (expecting 'a')"},
		{"an unclosed object", `{"order": 42`, "line 1, column 13: unexpected end of JSON input"},
		{"an unclosed object and blank lines", "{\"order\": 42\n\n", "line 1, column 13: unexpected end of JSON input"},
		{"a bad value on line 3", "{\n  \"order\": 42,\n  \"note\": rush\n}", "line 3, column 11: invalid character 'r' looking for beginning of value"},
		{"text after the value", `{"a":1} x`, "line 1, column 9: invalid character 'x' after top-level value"},
		{"a trailing comma", "[1,]", "line 1, column 4: invalid character ']' looking for beginning of value"},
		{"empty", "", "the input is empty"},
		{"white space", " \n", "the input is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := json.Unmarshal([]byte(tc.in), new(json.RawMessage))
			if err == nil {
				t.Fatalf("%q parsed", tc.in)
			}
			if got := jsonErrorAt(tc.in, err); got != tc.want {
				t.Errorf("jsonErrorAt(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
