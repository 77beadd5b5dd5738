package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestCheckRemembered(t *testing.T) {
	path := filepath.Join(t.TempDir(), "oz0", "sandbox-works")
	key := "boot-1"
	keyOf := func(Tier) (string, bool) { return key, true }
	var checks int
	works := func(Tier) error { checks++; return nil }
	refused := func(t Tier) error { checks++; return &Unavailable{Tier: t, Reason: "refused"} }

	steps := []struct {
		name       string
		tier       Tier
		key        string
		check      func(Tier) error
		remembered bool
		checked    bool
		fails      bool
	}{
		{"first start: checked, and remembered", Standard, "boot-1", works, false, true, false},
		{"next start: remembered, not checked", Standard, "boot-1", works, true, false, false},
		{"another tier: checked", Strict, "boot-1", works, false, true, false},
		{"the key changed (a reboot, a setting, a new oz0): checked again", Standard, "boot-2", works, false, true, false},
		{"a refusal is not remembered", Strict, "boot-3", refused, false, true, true},
		{"so a refused tier is checked at each start", Strict, "boot-3", refused, false, true, true},
		{"none: asked of check as it is (it needs no sandbox), never remembered", None, "boot-3", works, false, true, false},
	}
	for _, s := range steps {
		key = s.key
		checks = 0
		remembered, err := checkRemembered(s.tier, path, keyOf, s.check)
		if remembered != s.remembered || (checks > 0) != s.checked || (err != nil) != s.fails {
			t.Errorf("%s: remembered %t, checked %d times, err %v; want remembered %t, checked %t, failing %t",
				s.name, remembered, checks, err, s.remembered, s.checked, s.fails)
		}
	}
	for _, e := range readMemory(path) {
		if e.tier == None {
			t.Errorf("none is remembered: %v", readMemory(path))
		}
	}
	var u *Unavailable
	if _, err := checkRemembered(Strict, path, keyOf, refused); !errors.As(err, &u) {
		t.Errorf("a refusal's error is %v, not the check's *Unavailable", err)
	}

	key = "boot-4"
	if _, err := checkRemembered(Standard, path, keyOf, works); err != nil {
		t.Fatal(err)
	}
	forget(path, Standard)
	checks = 0
	if remembered, _ := checkRemembered(Standard, path, keyOf, works); remembered || checks != 1 {
		t.Errorf("after forget: remembered %t, checked %d times; want checked again", remembered, checks)
	}
}

func TestCheckRememberedWithoutMemory(t *testing.T) {
	var checks int
	works := func(Tier) error { checks++; return nil }
	noKey := func(Tier) (string, bool) { return "", false }
	path := filepath.Join(t.TempDir(), "sandbox-works")
	for range 2 {
		if remembered, err := checkRemembered(Standard, path, noKey, works); remembered || err != nil {
			t.Fatalf("remembered %t, err %v without a key", remembered, err)
		}
	}
	if checks != 2 {
		t.Errorf("checked %d times in 2 starts without a key; want each", checks)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("without a key the memory was written: %v", err)
	}
	checks = 0
	key := func(Tier) (string, bool) { return "k", true }
	for range 2 {
		if remembered, _ := checkRemembered(Standard, "", key, works); remembered {
			t.Fatal("remembered without a memory file")
		}
	}
	if checks != 2 {
		t.Errorf("checked %d times in 2 starts without a cache directory; want each", checks)
	}
}

func TestMemoryIgnoresGarbage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sandbox-works")
	if err := os.WriteFile(path, []byte("garbage\n\nstandard\x00 k\nstrict k2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := []memoryEntry{{Standard + "\x00", "k"}, {Strict, "k2"}}
	if m := readMemory(path); !slices.Equal(m, want) {
		t.Errorf("readMemory = %v; want %v (a line without a space is skipped; a tier that is not one matches none)", m, want)
	}
}

// Binaries that share the memory (a release and a build of one's own, a test binary) each keep
// their line: one does not make another check again. The memory keeps the newest lines.
func TestMemoryOfSeveralBinaries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sandbox-works")
	var checks int
	works := func(Tier) error { checks++; return nil }
	keyOf := func(k string) func(Tier) (string, bool) { return func(Tier) (string, bool) { return k, true } }
	checkRemembered(Standard, path, keyOf("release"), works)
	checkRemembered(Standard, path, keyOf("build"), works)
	checks = 0
	if remembered, _ := checkRemembered(Standard, path, keyOf("release"), works); !remembered || checks != 0 {
		t.Errorf("the release's line was lost to the build's: remembered %t, checked %d times", remembered, checks)
	}
	for i := range memoryLines {
		checkRemembered(Strict, path, keyOf(fmt.Sprint("other-", i)), works)
	}
	if m := readMemory(path); len(m) != memoryLines || m[len(m)-1] != (memoryEntry{Strict, fmt.Sprint("other-", memoryLines-1)}) {
		t.Errorf("the memory holds %d lines, the newest last: %v", len(m), m)
	}
}
