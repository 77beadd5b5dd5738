package jsonutil

import "testing"

func TestDuplicateKey(t *testing.T) {
	for _, c := range []struct {
		in, key, at string
		found       bool
	}{
		{`{"team":"exec","team":"billing"}`, "team", "", true},
		{`{"team":"exec","te\u0061m":"billing"}`, "team", "", true},
		{`{"a":1,"b":{"c":[1,{"d":1,"e":{},"d":2}]}}`, "d", ".b.c[1]", true},
		{`{"a":[{"x":1},{"x":2}],"b":{"x":1},"x":{"x":1}}`, "", "", false},
		// Case folded, as encoding/json fills a struct's field (the Kelvin sign folds to k too).
		{`{"team":"billing","Team":"exec"}`, "Team", "", true},
		{`{"kind":"a","\u212aind":"b"}`, "\u212aind", "", true},
		{`{"team":"billing","teams":"exec"}`, "", "", false},
		{`{}`, "", "", false},
		{`[1,2,"{"]`, "", "", false},
		{`{"a":{"b":1},"c":[],"a2":[[{"k":1}],[{"k":1,"k":2}]]}`, "k", ".a2[1][0]", true},
		{`{"s":"{\"t\":1,\"t\":2}"}`, "", "", false},
	} {
		key, at, found := DuplicateKey([]byte(c.in))
		if key != c.key || at != c.at || found != c.found {
			t.Errorf("DuplicateKey(%s) = %q, %q, %v; want %q, %q, %v", c.in, key, at, found, c.key, c.at, c.found)
		}
	}
}
