package supervisor

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// procStat is what /proc/PID/stat says of a process.
type procStat struct {
	state string
	ppid  int
	pgrp  int
	start uint64 // clock ticks since boot
}

func readProcStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime
	// stime cutime cstime priority nice num_threads itrealvalue starttime ...; comm may hold
	// spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return procStat{}, false
	}
	ppid, err0 := strconv.Atoi(f[1])
	pgrp, err1 := strconv.Atoi(f[2])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	return procStat{state: f[0], ppid: ppid, pgrp: pgrp, start: start}, err0 == nil && err1 == nil && err2 == nil
}

// processStart is when pid started, in clock ticks since boot.
func processStart(pid int) (uint64, bool) {
	st, ok := readProcStat(pid)
	return st.start, ok
}

// bootID names this boot of the machine.
func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// ownProcesses lists this user's processes but this one, those keep says yes to.
func ownProcesses(keep func(pid int, ps procStat) bool) []int {
	entries, _ := os.ReadDir("/proc")
	self, uid := os.Getpid(), uint32(os.Getuid())
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		fi, err := os.Stat("/proc/" + e.Name())
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Uid != uid {
			continue
		}
		if ps, ok := readProcStat(pid); ok && keep(pid, ps) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// sessionProcesses lists the live processes a dead node's session left: see ReapStale.
func sessionProcesses(rec sessionRecord, root string) []int {
	return ownProcesses(func(pid int, ps procStat) bool {
		if ps.state == "Z" || ps.state == "X" {
			return false
		}
		inGroup := ps.pgrp == rec.PGID && ps.start >= rec.Start
		cwd, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
		inDir := cwd == root || strings.HasPrefix(cwd, root+string(filepath.Separator))
		return inGroup || inDir
	})
}

// pipeHolders lists the processes of this user that hold one of files' pipes open, but this one
// and its children: a harness this process is starting holds every file of its parent for an
// instant, until its exec closes them.
func pipeHolders(files ...*os.File) []int {
	want := map[string]bool{}
	for _, f := range files {
		fi, err := f.Stat()
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			want["pipe:["+strconv.FormatUint(st.Ino, 10)+"]"] = true
		}
	}
	if len(want) == 0 {
		return nil
	}
	self := os.Getpid()
	return ownProcesses(func(pid int, ps procStat) bool {
		if ps.ppid == self {
			return false
		}
		fdDir := "/proc/" + strconv.Itoa(pid) + "/fd"
		fds, _ := os.ReadDir(fdDir)
		for _, fd := range fds {
			if link, err := os.Readlink(fdDir + "/" + fd.Name()); err == nil && want[link] {
				return true
			}
		}
		return false
	})
}
