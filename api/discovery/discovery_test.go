package discovery

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/orchestrator-zero/oz0/api/apiv1"
)

func TestPorts(t *testing.T) {
	a := Ports("/home/me/a", 0)
	if a[0] != DefaultPort || len(a) != FallbackCount+1 {
		t.Fatalf("Ports without a last port: first %d, %d ports; want %d first, %d", a[0], len(a), DefaultPort, FallbackCount+1)
	}
	if !slices.Equal(a, Ports("/home/me/a", 0)) {
		t.Fatal("Ports is not the same for the same plugin")
	}
	if b := Ports("/home/me/b", 0); a[1] == b[1] {
		t.Fatalf("two plugins fall back to the same port %d", a[1])
	}
	for _, p := range a[1:] {
		if p < FallbackFirst || p >= FallbackFirst+FallbackCount {
			t.Fatalf("fallback port %d out of range", p)
		}
	}
	kept := Ports("/home/me/a", a[5])
	if kept[0] != a[5] || kept[1] != DefaultPort || len(kept) != len(a) || slices.Index(kept[1:], a[5]) >= 0 {
		t.Fatalf("Ports with last %d: %v", a[5], kept[:4])
	}
}

func TestKept(t *testing.T) {
	dir := t.TempDir()
	if k := LoadKept(dir); k != (Kept{}) {
		t.Fatalf("no file: %+v", k)
	}
	tok := apiv1.NewToken()
	if err := SaveKept(dir, Kept{Port: 4800, Token: tok}); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Join(dir, KeptFile)); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %o", st.Mode().Perm())
	}
	if k := LoadKept(dir); k.Port != 4800 || k.Token != tok {
		t.Fatalf("loaded %+v", k)
	}
	os.WriteFile(filepath.Join(dir, KeptFile), []byte(`{"port":70000,"token":"oz0t_a b"}`), 0o600)
	if k := LoadKept(dir); k != (Kept{}) {
		t.Fatalf("a bad file is used: %+v", k)
	}
}

func TestFind(t *testing.T) {
	plug := t.TempDir()
	sub := filepath.Join(plug, "a", "b")
	os.MkdirAll(sub, 0o755)
	if _, _, err := Find(sub); !errors.Is(err, ErrNone) {
		t.Fatalf("no plugin: %v", err)
	}
	os.WriteFile(filepath.Join(plug, ManifestFile), []byte("name: x\n"), 0o644)
	if _, dir, err := Find(sub); !errors.Is(err, ErrNone) || dir != plug {
		t.Fatalf("no server: %q %v", dir, err)
	}
	state := StateDir(plug)
	os.MkdirAll(state, 0o700)
	ctx := apiv1.Context{URL: "http://127.0.0.1:4747", Token: apiv1.NewToken()}
	if err := WriteRunning(state, ctx); err != nil {
		t.Fatal(err)
	}
	if got, _, err := Find(sub); err != nil || got != ctx {
		t.Fatalf("Find: %v %v", got, err)
	}

	// A file of a process that is gone.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	writeJSON(filepath.Join(state, RunningFile), Running{Context: ctx.String(), PID: cmd.Process.Pid})
	var stale *StaleError
	if _, _, err := Find(plug); !errors.As(err, &stale) || stale.PID != cmd.Process.Pid {
		t.Fatalf("a stale file: %v", err)
	}
	// Only its own file is removed.
	RemoveRunning(state)
	if _, err := os.Stat(filepath.Join(state, RunningFile)); err != nil {
		t.Fatal("RemoveRunning removed another process's file")
	}
	WriteRunning(state, ctx)
	RemoveRunning(state)
	if _, err := os.Stat(filepath.Join(state, RunningFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("RemoveRunning left its file")
	}
}
