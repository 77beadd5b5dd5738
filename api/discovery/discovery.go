// Package discovery is how the commands find the dev server of the plugin they run in without
// OZ0_CONTEXT, and how a restarted `oz0 dev` comes back where it was. oz0 dev keeps two files in
// its state directory, both readable by their owner only (they hold the bearer token; the state
// directory is hidden from sessions):
//
//   - running.json while it runs: its OZ0_CONTEXT and its pid; removed when it stops. A file whose
//     pid is gone was left by an oz0 dev that crashed or was killed: Find says so and ignores it.
//   - server.json across restarts: the port and token it had, so that a restarted server is at
//     the same address with the same token and a command following a job goes on.
package discovery

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"syscall"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/internal/atomicfile"
)

const (
	// RunningFile holds the context of the oz0 dev that runs on the state directory.
	RunningFile = "running.json"
	// KeptFile holds the port and token a restarted oz0 dev takes again.
	KeptFile = "server.json"
	// ManifestFile marks a plugin's root (lint.ManifestFile; not imported, to keep the client's
	// dependencies small).
	ManifestFile = "oz0-plugin.yaml"

	// DefaultPort is where oz0 dev listens without --addr, as LangGraph's dev server is on 2024
	// and wrangler's on 8787: a port to remember and bookmark.
	DefaultPort = 4747
	// FallbackFirst and FallbackCount are the ports a plugin's server takes when DefaultPort is
	// busy (another plugin's oz0 dev): one picked from the plugin's path, so each plugin comes back
	// on its own; below the ephemeral range (32768 and up on Linux, 49152 on macOS), where
	// outgoing connections would take them.
	FallbackFirst = 4748
	FallbackCount = 252 // 4748 to 4999
)

// StateDir is the default state directory of the plugin in dir.
func StateDir(pluginDir string) string { return filepath.Join(pluginDir, ".oz0", "dev") }

// Running is the content of RunningFile.
type Running struct {
	Context string `json:"context"` // OZ0_CONTEXT's value
	PID     int    `json:"pid"`
}

// WriteRunning writes RunningFile into stateDir for this process.
func WriteRunning(stateDir string, ctx apiv1.Context) error {
	return writeJSON(filepath.Join(stateDir, RunningFile), Running{Context: ctx.String(), PID: os.Getpid()})
}

// RemoveRunning removes RunningFile from stateDir, if it is this process's.
func RemoveRunning(stateDir string) {
	path := filepath.Join(stateDir, RunningFile)
	var r Running
	if readJSON(path, &r) == nil && r.PID == os.Getpid() {
		os.Remove(path)
	}
}

// Kept is the content of KeptFile.
type Kept struct {
	Port  int    `json:"port,omitempty"`
	Token string `json:"token"`
}

// LoadKept reads KeptFile of stateDir; a missing or unreadable one is the zero Kept (a new token
// is made, a port chosen afresh).
func LoadKept(stateDir string) Kept {
	var k Kept
	if readJSON(filepath.Join(stateDir, KeptFile), &k) != nil {
		return Kept{}
	}
	if !apiv1.ValidToken(k.Token) {
		k.Token = ""
	}
	if k.Port < 1 || k.Port > 65535 {
		k.Port = 0
	}
	return k
}

// SaveKept writes KeptFile into stateDir.
func SaveKept(stateDir string, k Kept) error {
	return writeJSON(filepath.Join(stateDir, KeptFile), k)
}

// Ports are the ports oz0 dev tries, in order, for the plugin in pluginDir without --addr: the
// one it had last time (last, 0 for none), DefaultPort, then every port of the fallback range,
// starting at one picked from the plugin's path.
func Ports(pluginDir string, last int) []int {
	ports := make([]int, 0, FallbackCount+2)
	if last != 0 && last != DefaultPort {
		ports = append(ports, last)
	}
	ports = append(ports, DefaultPort)
	h := fnv.New32a()
	h.Write([]byte(pluginDir))
	start := int(h.Sum32() % FallbackCount)
	for i := range FallbackCount {
		p := FallbackFirst + (start+i)%FallbackCount
		if p != last {
			ports = append(ports, p)
		}
	}
	return ports
}

// ErrNone is Find's error when no plugin, or no running oz0 dev of it, is found.
var ErrNone = errors.New("no running oz0 dev found for this folder")

// StaleError is Find's error for a RunningFile left by an oz0 dev that is gone.
type StaleError struct {
	File string
	PID  int
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("%s was left by an oz0 dev (pid %d) that is no longer running (it crashed or was killed), so it is ignored; start `oz0 dev` in the plugin, or export the %s line a running one printed", e.File, e.PID, apiv1.ContextEnv)
}

// Find looks for the plugin dir is in (dir or a folder above it with an oz0-plugin.yaml) and the
// oz0 dev running on its default state directory. It returns that server's context and the
// plugin's directory, ErrNone when there is no plugin or no oz0 dev runs on it, or a
// *StaleError.
func Find(dir string) (apiv1.Context, string, error) {
	dir, ok := PluginRoot(dir)
	if !ok {
		return apiv1.Context{}, "", ErrNone
	}
	path := filepath.Join(StateDir(dir), RunningFile)
	var r Running
	if err := readJSON(path, &r); errors.Is(err, os.ErrNotExist) {
		return apiv1.Context{}, dir, ErrNone
	} else if err != nil {
		return apiv1.Context{}, dir, fmt.Errorf("cannot read %s (%v); export the %s line `oz0 dev` printed", path, err, apiv1.ContextEnv)
	}
	if !alive(r.PID) {
		return apiv1.Context{}, dir, &StaleError{File: path, PID: r.PID}
	}
	ctx, err := apiv1.ParseContext(r.Context)
	if err != nil {
		return apiv1.Context{}, dir, fmt.Errorf("%s does not hold a dev server's context; stop and start `oz0 dev` again", path)
	}
	return ctx, dir, nil
}

// PluginRoot is the plugin that dir is in: dir or the nearest folder above it that has an
// oz0-plugin.yaml (absolute), and whether there is one.
func PluginRoot(dir string) (string, bool) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	for {
		if st, err := os.Stat(filepath.Join(dir, ManifestFile)); err == nil && !st.IsDir() {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// alive reports whether the process pid exists (EPERM: it does, another user's).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// writeJSON writes v to path at once, mode 0600: it holds the token.
func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(b, '\n'), 0o600)
}
