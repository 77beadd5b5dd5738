package jsonutil

import (
	"bytes"
	"testing"
)

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		`{ "b" : "sk\u002dant", "a":[1, 2.50, true,null, {"x":"<\u00e9>"}] }`: `{"b":"sk-ant","a":[1,2.50,true,null,{"x":"<é>"}]}`,
		`"a\"b"`: `"a\"b"`,
		`[]`:     `[]`,
	} {
		if got, ok := Canonical([]byte(in)); !ok || string(got) != want {
			t.Errorf("Canonical(%s) = %s, %v; want %s", in, got, ok, want)
		}
	}
	for _, bad := range []string{`{"a":`, `not json`, `[1,]`} {
		if _, ok := Canonical([]byte(bad)); ok {
			t.Errorf("Canonical(%s): ok", bad)
		}
	}
}

func TestMaskDecoded(t *testing.T) {
	mask := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("hunter2-secret"), []byte("***")) }
	plain := "{\n  \"content\": \"caf\\u00e9\"\n}"
	if got, changed := MaskDecoded([]byte(plain), mask); changed || string(got) != plain {
		t.Errorf("nothing to mask: %s, %v", got, changed)
	}
	if got, changed := MaskDecoded([]byte(`{"content":"pw hunter2\u002Dsecret, caf\u00e9"}`), mask); !changed || string(got) != `{"content":"pw ***, café"}` {
		t.Errorf("escaped: %s, %v", got, changed)
	}
	if got, changed := MaskDecoded([]byte(`not json hunter2\u002dsecret`), mask); changed || string(got) != `not json hunter2\u002dsecret` {
		t.Errorf("not JSON: %s, %v", got, changed)
	}
	if got, changed := MaskDecoded([]byte(`{"k":"hunter2\/secret"}`), func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("hunter2/secret"), []byte("***")) }); !changed || string(got) != `{"k":"***"}` {
		t.Errorf(`a \/ escape: %s, %v`, got, changed)
	}
}
