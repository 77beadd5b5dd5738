package secrets

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
)

func open(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSetGetListRemove(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".oz0", "dev")
	s := open(t, dir)
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("state dir: %v %v", fi, err)
	}
	if _, err := os.Stat(s.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open created the file: %v", err)
	}
	if l, err := s.List(); err != nil || len(l) != 0 {
		t.Fatalf("List of none: %v %v", l, err)
	}
	if _, err := s.Get("ANTHROPIC_API_KEY"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of none: %v", err)
	}
	before := time.Now().Add(-time.Second)
	for name, v := range map[string]string{"ANTHROPIC_API_KEY": "sk-ant-123456", "OPENAI_API_KEY": "sk-openai-9", "X": "ünïcødé \"q\"\n"} {
		if err := s.Set(name, v); err != nil {
			t.Fatal(err)
		}
	}
	s.Set("OPENAI_API_KEY", "sk-openai-10") // replaces
	if v, err := s.Get("OPENAI_API_KEY"); err != nil || v != "sk-openai-10" {
		t.Fatalf("Get: %q %v", v, err)
	}
	l, _ := s.List()
	var names []string
	for _, m := range l {
		names = append(names, m.Name)
		if m.SetAt.Before(before) || m.SetAt.After(time.Now().Add(time.Second)) {
			t.Errorf("%s set at %v", m.Name, m.SetAt)
		}
	}
	if !slices.Equal(names, []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "X"}) {
		t.Fatalf("List: %v", names)
	}
	if err := s.Remove("OPENAI_API_KEY"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("OPENAI_API_KEY"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second Remove: %v", err)
	}
	// A new Store reads what this one wrote.
	s2 := open(t, dir)
	if v, err := s2.Get("X"); err != nil || v != "ünïcødé \"q\"\n" {
		t.Fatalf("reopened: %q %v", v, err)
	}
	if _, err := s2.Get("OPENAI_API_KEY"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("removed secret is back: %v", err)
	}
	if len(s2.Warnings()) != 0 {
		t.Errorf("warnings: %v", s2.Warnings())
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("left a temporary file: %s", e.Name())
		}
	}
}

func TestInvalid(t *testing.T) {
	s := open(t, t.TempDir())
	for _, name := range []string{"", "lower", "1ABC", "A-B", "A B", "É", strings.Repeat("A", 129)} {
		if err := s.Set(name, "value"); !errors.Is(err, ErrInvalid) {
			t.Errorf("name %q: %v", name, err)
		}
	}
	if err := s.Set(strings.Repeat("A", 128), "value"); err != nil {
		t.Errorf("128 characters: %v", err)
	}
	for what, v := range map[string]string{"empty": "", "too long": strings.Repeat("x", apiv1.MaxSecretValue+1), "not UTF-8": "\xff\xfe"} {
		if err := s.Set("K", v); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", what, err)
		}
	}
	if err := s.Set("K", strings.Repeat("x", apiv1.MaxSecretValue)); err != nil {
		t.Errorf("64 KiB: %v", err)
	}
}

func TestBadFile(t *testing.T) {
	for what, content := range map[string]string{
		"not JSON":  "ANTHROPIC_API_KEY=sk",
		"bad name":  `{"version":1,"secrets":{"lower":{"value":"x"}}}`,
		"empty val": `{"version":1,"secrets":{"K":{"value":""}}}`,
		"newer":     `{"version":9,"secrets":{}}`,
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, FileName)
		os.WriteFile(path, []byte(content), 0o600)
		_, err := Open(dir)
		if !errors.Is(err, ErrFile) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v", what, err)
		}
		if b, _ := os.ReadFile(path); string(b) != content {
			t.Errorf("%s: the file was changed", what)
		}
	}
	// A file that goes bad under a running store: Set refuses and leaves it alone.
	dir := t.TempDir()
	s := open(t, dir)
	s.Set("K", "value")
	os.WriteFile(s.Path(), []byte("garbage"), 0o600)
	if err := s.Set("L", "value"); !errors.Is(err, ErrFile) {
		t.Fatalf("Set over a bad file: %v", err)
	}
	if b, _ := os.ReadFile(s.Path()); string(b) != "garbage" {
		t.Fatal("Set overwrote a file it could not read")
	}
	// Removed from under it: the store follows.
	os.Remove(s.Path())
	if l, err := s.List(); err != nil || len(l) != 0 {
		t.Fatalf("after the file was removed: %v %v", l, err)
	}
}

func TestConcurrent(t *testing.T) {
	dir := t.TempDir()
	a, b := open(t, dir), open(t, dir) // two stores on one file: as two processes would be
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			s := a
			if g%2 == 1 {
				s = b
			}
			for i := range 10 {
				if err := s.Set(fmt.Sprintf("K_%d_%d", g, i), fmt.Sprintf("value-%d-%d", g, i)); err != nil {
					t.Error(err)
				}
				s.Get("K_0_0")
				s.List()
			}
		})
	}
	wg.Wait()
	for _, s := range []*Store{a, b, open(t, dir)} {
		l, err := s.List()
		if err != nil || len(l) != 80 {
			t.Fatalf("%d secrets, %v; want 80: a write was lost", len(l), err)
		}
		if v, _ := s.Get("K_7_9"); v != "value-7-9" {
			t.Fatalf("K_7_9 = %q", v)
		}
	}
	// The masker of a follows b's changes once a has looked at the file.
	b.Set("FROM_B", "only-b-knows-this")
	a.Reload()
	if got := string(a.Masker()([]byte("x only-b-knows-this x"))); got != "x *** x" {
		t.Fatalf("a's masker: %q", got)
	}
}

// Get sees another process's change within GetRecheck, and at once after Reload; its own at once.
func TestGetSeesOtherWriters(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	if err := s.Set("K", "one"); err != nil {
		t.Fatal(err)
	}
	other := open(t, dir)
	if err := other.Set("K", "two"); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Get("K"); v != "two" {
		t.Fatalf("after Reload: %q", v)
	}
	if err := other.Set("K", "three"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * GetRecheck)
	for {
		if v, _ := s.Get("K"); v == "three" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Get did not see another writer's change in %s", 10*GetRecheck)
		}
		time.Sleep(GetRecheck / 10)
	}
	if err := s.Set("K", "four"); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Get("K"); v != "four" {
		t.Fatalf("its own change: %q", v)
	}
}
