package sandbox

import "testing"

// On Linux a machine has a key, and the same one each time it is asked.
func TestMachineKeyIsStable(t *testing.T) {
	a, okA := machineKey(Standard)
	b, okB := machineKey(Standard)
	if !okA || !okB {
		t.Fatalf("no key of this machine: the memory is never used here")
	}
	if a != b {
		t.Errorf("two keys of the same machine differ: %q, %q", a, b)
	}
}
