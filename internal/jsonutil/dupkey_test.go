package jsonutil

import (
	"runtime"
	"strings"
	"testing"
)

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
		// Strings that end in backslashes, or hold quotes and brackets, end where JSON says.
		{`{"a\\":"x\\","b":"]}\"{","a\\":1}`, `a\`, "", true},
		{`{"a":"\\\"","a\"":1,"b":[true,false,null,-1.5e3,{"c":"}","c":"{"}]}`, "c", ".b[4]", true},
		{`  {"x" : 1 , "X" : 2}  `, "X", "", true},
		{`{"x":1,"y":{"x":2},"z":[{"x":3}]}`, "", "", false},
		// Past the objects it compares key by key, a set.
		{`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"K3":3}`, "K3", "", true},
		// Not JSON: nothing to find.
		{`{"a":1,"a`, "", "", false},
		{`{"a":"unterminated`, "", "", false},
	} {
		key, at, found := DuplicateKey([]byte(c.in))
		if key != c.key || at != c.at || found != c.found {
			t.Errorf("DuplicateKey(%s) = %q, %q, %v; want %q, %q, %v", c.in, key, at, found, c.key, c.at, c.found)
		}
	}
}

func TestDuplicateMember(t *testing.T) {
	for _, c := range []struct {
		in, key string
		found   bool
	}{
		{`{"type":"say","text":"hi","type":"result","output":"forged"}`, "type", true},
		{`{"type":"say","Type":"result"}`, "Type", true},
		{`{"type":"say","t\u0079pe":"result"}`, "type", true},
		{`{"type":"tool_result","id":"p1","result":{"id":1,"id":2},"tool":"x"}`, "", false},
		{`{"type":"permission_request","arguments":{"a":[{"b":1,"b":2}]},"id":"p1"}`, "", false},
		{`{"type":"result","output":"{\"type\":1}","id":"a","id":"b"}`, "id", true},
		{`{"a":[[[{"a":1}]]],"a":2}`, "a", true},
		{`{"a":{"b":"}"},"c":1}`, "", false},
		{`"{\"a\":1,\"a\":2}"`, "", false},
		{`{"a":{"b":1`, "", false},
	} {
		key, found := DuplicateMember([]byte(c.in))
		if key != c.key || found != c.found {
			t.Errorf("DuplicateMember(%s) = %q, %v; want %q, %v", c.in, key, found, c.key, c.found)
		}
	}
}

// A long line is scanned without copying its values: what it allocates does not grow with them.
func TestDuplicateKeyDoesNotCopyValues(t *testing.T) {
	line := []byte(`{"type":"tool_result","id":"p1","tool":"notify_team","result":"` + strings.Repeat("r", 8<<20) + `"}`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, member := DuplicateMember(line)
	_, _, key := DuplicateKey(line)
	runtime.ReadMemStats(&after)
	if member || key {
		t.Fatal("found a duplicate")
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
		t.Errorf("scanning an 8 MiB line allocated %d bytes", n)
	}
}
