package devserver

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// A start that fails leaves no trace: the state directory it made (the plugin's .oz0/dev, or a
// new --state-dir with its parents) goes again, while one that was there stays as it was.
func TestFailedStartLeavesNoStateDir(t *testing.T) {
	plug := goPlugin(t, "hello", "./none")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	kept := t.TempDir()
	if err := os.WriteFile(filepath.Join(kept, "note"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	newDir := filepath.Join(t.TempDir(), "a")
	for _, c := range []struct {
		what string
		cfg  Config
		gone string // a directory that must not exist afterwards
	}{
		{"a busy port", Config{PluginDirs: []string{plug}, Addr: busy.Addr().String()}, filepath.Join(plug, ".oz0")},
		{"a missing --hooks", Config{PluginDirs: []string{plug}, HooksFile: filepath.Join(plug, "nowhere.yaml")}, filepath.Join(plug, ".oz0")},
		{"a new --state-dir and a busy port", Config{PluginDirs: []string{plug}, StateDir: filepath.Join(newDir, "b", "c"), Addr: busy.Addr().String()}, newDir},
		{"an existing --state-dir and a busy port", Config{PluginDirs: []string{plug}, StateDir: kept, Addr: busy.Addr().String()}, ""},
	} {
		t.Run(c.what, func(t *testing.T) {
			c.cfg.Poll = -1
			s, err := Start(c.cfg)
			if err == nil {
				s.Close()
				t.Errorf("%s: started", c.what)
				return
			}
			if c.gone != "" {
				if _, err := os.Stat(c.gone); !os.IsNotExist(err) {
					t.Errorf("%s: %s is left (%v)", c.what, c.gone, err)
				}
			}
		})
	}
	if data, err := os.ReadFile(filepath.Join(kept, "note")); err != nil || string(data) != "mine" {
		t.Errorf("the existing state directory was touched: %q, %v", data, err)
	}
}
