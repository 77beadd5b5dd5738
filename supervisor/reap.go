package supervisor

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// A node that is killed (SIGKILL, a crash, a power cut) cannot clean up after its sessions. So
// every session's directory is named after the node that made it (its pid and start time) and
// holds a record of the session's process group and its leader's start time; a node starting
// later removes the directories of nodes that are gone and kills what their sessions left
// (ReapStale). In a sandboxed tier the kernel has already ended the session's processes with
// its init; the record serves tier none, and every tier's directories.

// sessionPrefix starts the name of every session directory.
const sessionPrefix = "oz0-session-"

// sessionRecord is what a session's directory says of its processes.
type sessionRecord struct {
	PGID  int    `json:"pgid"`
	Start uint64 `json:"start"` // the group leader's start time, in the system's clock ticks since boot
	Boot  string `json:"boot"`  // the boot it ran in: start times mean nothing across boots
	Tier  string `json:"tier"`
}

const recordFile = "session.json"

var (
	selfOnce  sync.Once
	selfStart uint64
)

// sessionDirPattern is the MkdirTemp pattern of this process's session directories.
func sessionDirPattern() string {
	selfOnce.Do(func() { selfStart, _ = processStart(os.Getpid()) })
	return fmt.Sprintf("%s%d-%d-", sessionPrefix, os.Getpid(), selfStart)
}

// writeRecord records the session's process group (best effort: a record that cannot be
// written costs only the clean-up after a crash).
func (s *Session) writeRecord(tier string) {
	start, ok := processStart(s.pid)
	if !ok {
		return
	}
	b, _ := json.Marshal(sessionRecord{PGID: s.pid, Start: start, Boot: bootID(), Tier: tier})
	_ = os.WriteFile(filepath.Join(s.root, recordFile), b, 0o600)
}

// Leftovers is what ReapStale cleaned up.
type Leftovers struct {
	Sessions int // session directories removed
	Killed   int // processes killed
}

// ReapStale cleans up after the nodes that ran sessions in dir (os.TempDir() when "") and are no
// longer running: it kills what their sessions left alive, then removes their directories. A
// session's process is one of the node's user in the session's process group, started no earlier
// than its leader (so a reused id is never killed), or one whose working directory is still in the
// session's directory (a process that left the group). Sessions of running nodes are untouched.
func ReapStale(dir string) (Leftovers, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return Leftovers{}, err
	}
	var left Leftovers
	boot := bootID()
	// A node runs many sessions: each node is asked after once (a /proc read), not each directory.
	type node struct {
		pid   int
		start uint64
	}
	alive := map[node]bool{}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !strings.HasPrefix(name, sessionPrefix) {
			continue
		}
		owner, ownerStart, ok := sessionOwner(name)
		if !ok {
			continue
		}
		n := node{owner, ownerStart}
		live, asked := alive[n]
		if !asked {
			live = ownerAlive(owner, ownerStart)
			alive[n] = live
		}
		if live {
			continue
		}
		root := filepath.Join(dir, name)
		if b, err := os.ReadFile(filepath.Join(root, recordFile)); err == nil {
			var rec sessionRecord
			if json.Unmarshal(b, &rec) == nil && rec.PGID > 1 && rec.Boot == boot {
				for _, pid := range sessionProcesses(rec, root) {
					if syscall.Kill(pid, syscall.SIGKILL) == nil {
						left.Killed++
					}
				}
			}
		}
		if removeAll(root) == nil {
			left.Sessions++
		}
	}
	return left, nil
}

// sessionOwner reads the node's pid and start time from a session directory's name.
func sessionOwner(name string) (pid int, start uint64, ok bool) {
	f := strings.SplitN(strings.TrimPrefix(name, sessionPrefix), "-", 3)
	if len(f) != 3 {
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseUint(f[1], 10, 64)
	return pid, start, err1 == nil && err2 == nil && pid > 0
}

// ownerAlive reports whether the node that made a session directory still runs: its pid is a
// process that started when it did. Where start times cannot be read, any live pid counts.
func ownerAlive(pid int, start uint64) bool {
	if syscall.Kill(pid, 0) == syscall.ESRCH {
		return false
	}
	got, ok := processStart(pid)
	return !ok || start == 0 || got == start
}
