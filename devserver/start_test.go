package devserver

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/diag"
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

// The plugins are linted while the state directory opens: a plugin with findings still stops the
// start, with its findings as the error, whatever the state's open said; and a plugin directory
// that does not exist is said so, not made by the state directory's open inside it.
func TestLintBesideState(t *testing.T) {
	plug := goPlugin(t, "hello", "./none")
	if err := os.WriteFile(filepath.Join(plug, "oz0-plugin.yaml"), []byte("name: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []Config{
		{PluginDirs: []string{plug}, Poll: -1},
		{PluginDirs: []string{plug}, Ephemeral: true, Poll: -1},
		{PluginDirs: []string{plug}, StateDir: notADir, Poll: -1},
	} {
		s, err := Start(cfg)
		if err == nil {
			s.Close()
			t.Fatalf("%+v: a plugin with findings started", cfg)
		}
		var re *diag.ReportError
		if !errors.As(err, &re) {
			t.Errorf("state dir %q: the error is %v, not the plugin's findings", cfg.StateDir, err)
		}
	}
	if _, err := os.Stat(filepath.Join(plug, ".oz0")); !os.IsNotExist(err) {
		t.Errorf("a start that failed left %s (%v)", filepath.Join(plug, ".oz0"), err)
	}

	missing := filepath.Join(t.TempDir(), "nowhere")
	_, err := Start(Config{PluginDirs: []string{missing}, Poll: -1})
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("a missing plugin directory: %v", err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("the missing plugin directory was made (%v)", err)
	}
}

// The warm-ups (the tier's first init, the interpreter question, the fake model's script, the
// imports' check) wait for the API's first answer, so as not to take the cores from it; without a
// request they start after a delay.
func TestWarmUpsWaitForTheFirstAnswer(t *testing.T) {
	dir := goPlugin(t, "gosay", "true")
	started := func(s *Server) bool {
		select {
		case <-s.warming:
			return true
		default:
			return false
		}
	}
	waitStarted := func(t *testing.T, s *Server) {
		t.Helper()
		select {
		case <-s.warming:
		case <-time.After(30 * time.Second):
			t.Fatal("the warm-ups did not start")
		}
	}

	t.Run("after the first answer", func(t *testing.T) {
		s, err := Start(Config{PluginDirs: []string{dir}, Ephemeral: true, Poll: -1, warmUpDelay: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if started(s) {
			t.Fatal("the warm-ups started before any request")
		}
		if _, err := client.New(s.Context()).Info(context.Background()); err != nil {
			t.Fatal(err)
		}
		waitStarted(t, s)
	})
	t.Run("without a request, after the delay", func(t *testing.T) {
		s, err := Start(Config{PluginDirs: []string{dir}, Ephemeral: true, Poll: -1, warmUpDelay: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		waitStarted(t, s)
	})
	t.Run("not once stopped", func(t *testing.T) {
		s, err := Start(Config{PluginDirs: []string{dir}, Ephemeral: true, Poll: -1, warmUpDelay: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		s.warmUp() // as a request's end or the timer could, racing with the stop
		if started(s) {
			t.Error("the warm-ups started after the stop")
		}
	})
}
