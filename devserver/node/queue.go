package node

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orchestrator-zero/oz0/devserver/store"
)

// What a session costs, for DefaultMaxSessions: a Python session's interpreter start takes about
// 100 ms of a core, and its process 30–60 MiB.
const (
	sessionsPerCore = 4
	memoryPerSlot   = 256 << 20 // room left for each session, with the node's share of it
	minSessions     = 2
	maxDefault      = 64
)

// DefaultMaxSessions is the most sessions a node runs at once unless told otherwise: four a core
// (a session mostly waits for its model, but its start takes a core for a tenth of a second, and
// two hundred started at once on two cores took every one of them past a minute), at most one for
// each 256 MiB of the machine's memory, at least 2 and at most 64.
func DefaultMaxSessions() int {
	n := sessionsPerCore * runtime.NumCPU()
	if mem := totalMemory(); mem > 0 {
		n = min(n, int(mem/memoryPerSlot))
	}
	return max(minSessions, min(n, maxDefault))
}

// totalMemory is the machine's memory in bytes, from /proc/meminfo; 0 where it cannot be read.
func totalMemory() uint64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest) // "24684176 kB"
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseUint(f[0], 10, 64)
				if err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}

// MaxSessions is the most sessions the node runs at once.
func (n *Node) MaxSessions() int { return n.cfg.MaxSessions }

// Cores is how many sessions the node starts however busy the machine is (Config.Cores).
func (n *Node) Cores() int { return n.cfg.Cores }

// The core gate. A session that computes holds a core; one that waits (for its model, a tool's
// answer, a person) holds none. Past one session a core, a queued job starts only while a core
// is free: a burst of jobs that compute (a fake model answers at once) then runs about as many
// sessions as there are cores, which ends it no later (20 LangGraph jobs on 2 cores: 1.1–1.5 s
// with 3 or 4 sessions at once as with 8) and holds a third of the memory (each session's own
// pages, 15 to 20 MiB for a framework's); jobs that wait for a real model still run up to
// MaxSessions at once. While jobs wait for a core, the node looks again every coreRecheck. A
// session just started has not taken its core yet: past one a core, one starts at most every
// coreRecheck, so that a burst's jobs do not all start in the instant before the first compute.
const coreRecheck = 5 * time.Millisecond

// now is the clock of the core gate's pace (a test's own, in export_test.go).
var now = time.Now

// runnableThreads is the count of the machine's threads that run or are ready to, from Linux's
// /proc/loadavg (its fourth field, RUNNING/TOTAL); false elsewhere.
func runnableThreads() (int, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return 0, false
	}
	running, _, ok := strings.Cut(f[3], "/")
	n, err := strconv.Atoi(running)
	return n, ok && err == nil
}

// coreFree says whether a core is free: fewer threads run or are ready to than there are cores,
// this one not counted. True when the machine cannot say.
func (n *Node) coreFree() bool {
	r, ok := n.cfg.Runnable()
	return !ok || r-1 < n.cfg.Cores
}

// dispatchLocked starts the queued jobs there is room for, in the order they came; a job whose
// agent runs as many sessions as its limits.max_concurrent lets the jobs behind it go first.
// n.mu is held.
func (n *Node) dispatchLocked() {
	if n.closed {
		return // Close ends what is queued
	}
	kept := n.queue[:0]
	for i, job := range n.queue {
		if n.active >= n.cfg.MaxSessions {
			kept = append(kept, n.queue[i:]...)
			break
		}
		pastCores := n.active >= n.cfg.Cores
		if pastCores && (now().Sub(n.pastCores) < coreRecheck || !n.coreFree()) {
			if n.recheck == nil {
				n.recheck = time.AfterFunc(coreRecheck, func() {
					n.mu.Lock()
					defer n.mu.Unlock()
					n.recheck = nil
					n.dispatchLocked()
				})
			}
			kept = append(kept, n.queue[i:]...)
			break
		}
		if most := job.Agent.Limits.MaxConcurrent; most > 0 && n.byAgent[job.Agent.Name] >= most {
			kept = append(kept, job)
			continue
		}
		if pastCores {
			n.pastCores = now()
		}
		n.active++
		n.byAgent[job.Agent.Name]++
		go n.run(job)
	}
	clear(n.queue[len(kept):])
	n.queue = kept
	n.queued.Store(int32(len(n.queue)))
}

// release gives back the session's room that job held, and starts what may start now.
func (n *Node) release(job *Job) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.running, job.ID)
	n.active--
	if n.byAgent[job.Agent.Name]--; n.byAgent[job.Agent.Name] <= 0 {
		delete(n.byAgent, job.Agent.Name)
	}
	n.dispatchLocked()
}

// unqueue takes job out of the queue; false when it is not there (its session has started).
// n.mu is held.
func (n *Node) unqueueLocked(job *Job) bool {
	i := slices.Index(n.queue, job)
	if i < 0 {
		return false
	}
	n.queue = slices.Delete(n.queue, i, i+1)
	n.queued.Store(int32(len(n.queue)))
	delete(n.running, job.ID)
	return true
}

// endQueued records the end of a job taken out of the queue, which never started.
func (n *Node) endQueued(job *Job, st store.Status, reason string) {
	defer n.wg.Done()
	n.finish(job.ID, st, reason, nil)
}

// Waiting says why a queued job waits for a session, for a person: the limit that holds it and
// how many jobs are ahead of it; "" when the job is not waiting in the queue.
func (n *Node) Waiting(id string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	i := slices.IndexFunc(n.queue, func(j *Job) bool { return j.ID == id })
	if i < 0 {
		return ""
	}
	job := n.queue[i]
	why := fmt.Sprintf("oz0 dev runs at most %s at once (--max-sessions) and all are taken", plural(n.cfg.MaxSessions, "session"))
	switch most := job.Agent.Limits.MaxConcurrent; {
	case most > 0 && n.byAgent[job.Agent.Name] >= most:
		why = fmt.Sprintf("agent %s runs at most %s at once (its limits.max_concurrent) and all are taken", job.Agent.Name, plural(most, "session"))
	case n.active < n.cfg.MaxSessions:
		why = fmt.Sprintf("every core is busy (oz0 dev runs more sessions than the machine's %s, up to --max-sessions %d, only while a core is free)", plural(n.cfg.Cores, "core"), n.cfg.MaxSessions)
	}
	ahead := "no job is ahead of it"
	switch i {
	case 0:
	case 1:
		ahead = "1 job is ahead of it"
	default:
		ahead = fmt.Sprintf("%d jobs are ahead of it", i)
	}
	return fmt.Sprintf("waiting for a session: %s; %s", why, ahead)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
