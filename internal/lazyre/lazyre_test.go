package lazyre

import "testing"

func TestNewCompilesOnceOnFirstUse(t *testing.T) {
	re := New(`^a+$`)
	first := re()
	if !first.MatchString("aaa") || first.MatchString("b") {
		t.Fatalf("%v does not match as ^a+$", first)
	}
	if re() != first {
		t.Fatal("a second call compiled again")
	}
}

func TestNewPanicsOnABadExpressionAtFirstUse(t *testing.T) {
	re := New(`(`) // no panic here: nothing is compiled yet
	defer func() {
		if recover() == nil {
			t.Fatal("a bad expression did not panic at its first use")
		}
	}()
	re()
}
