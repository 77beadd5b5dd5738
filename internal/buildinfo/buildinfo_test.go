package buildinfo

import (
	"os"
	"runtime/debug"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"}, {Key: "vcs.time", Value: "2026-11-30T12:00:00Z"}}
	dirty := append(append([]debug.BuildSetting(nil), vcs...), debug.BuildSetting{Key: "vcs.modified", Value: "true"})
	for _, c := range []struct {
		name    string
		stamped Stamped
		bi      *debug.BuildInfo
		want    string
		ref     string
	}{
		{"release", Stamped{Version: "0.3.0", Commit: "1a2b3c4d5e6f7a8b9c0d", Date: "2026-11-30T12:00:00Z", Tag: "v0.3.0"}, nil,
			"0.3.0 (commit 1a2b3c4d5e6f, 2026-11-30)", "v0.3.0"},
		{"snapshot", Stamped{Version: "0.3.1-SNAPSHOT-1a2b3c4", Commit: "1a2b3c4d5e6f7a8b9c0d"}, nil,
			"0.3.1-SNAPSHOT-1a2b3c4 (commit 1a2b3c4d5e6f)", DevRef},
		{"snapshot without git", Stamped{Version: "0.0.1-snapshot+none", Commit: "none", Date: "0001-01-01T00:00:00Z"}, nil,
			"0.0.1-snapshot+none", DevRef},
		{"go install of a tag", Stamped{}, &debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}},
			"v0.3.0", "v0.3.0"},
		{"go install of a commit", Stamped{}, &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261130120000-1a2b3c4d5e6f"}},
			"v0.0.0-20261130120000-1a2b3c4d5e6f", DevRef},
		{"go build in a checkout", Stamped{}, &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261130120000-1a2b3c4d5e6f+dirty"}, Settings: dirty},
			"v0.0.0-20261130120000-1a2b3c4d5e6f+dirty", DevRef},
		{"go build, no module version", Stamped{}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: dirty},
			"dev (commit 1a2b3c4d5e6f-dirty, 2026-11-30)", DevRef},
		{"go build, no VCS", Stamped{}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev", DevRef},
		{"tagged checkout", Stamped{}, &debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}, Settings: vcs},
			"v0.3.0 (commit 1a2b3c4d5e6f, 2026-11-30)", "v0.3.0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := read(c.stamped, c.bi)
			if got.String() != c.want || got.Ref != c.ref {
				t.Errorf("%s: %q ref %q, want %q ref %q", c.name, got.String(), got.Ref, c.want, c.ref)
			}
		})
	}
}

// ExecutableKey is the same for the same file and another once the file is rebuilt (here: its
// modification time moved).
func TestExecutableKey(t *testing.T) {
	k1, ok := ExecutableKey()
	if !ok {
		t.Fatal("the test binary's file has no key")
	}
	if k2, _ := ExecutableKey(); k2 != k1 {
		t.Errorf("two keys of one file: %q and %q", k1, k2)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(exe, fi.ModTime(), fi.ModTime().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chtimes(exe, fi.ModTime(), fi.ModTime()) })
	if k3, _ := ExecutableKey(); k3 == k1 {
		t.Errorf("a rebuilt binary (its modification time moved) keeps the key %q", k1)
	}
}
