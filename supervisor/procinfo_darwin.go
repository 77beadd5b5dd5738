package supervisor

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// processStart is when pid started, in microseconds since the epoch.
func processStart(pid int) (uint64, bool) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || kp.Proc.P_pid != int32(pid) {
		return 0, false
	}
	tv := kp.Proc.P_starttime
	return uint64(tv.Sec)*1e6 + uint64(tv.Usec), true
}

// bootID names this boot of the machine: its boot time.
func bootID() string {
	tv, err := unix.SysctlTimeval("kern.boottime")
	if err != nil {
		return ""
	}
	return strconv.FormatInt(unix.TimevalToNsec(*tv), 10)
}

// sessionProcesses lists the live processes a dead node's session left in its process group: see
// ReapStale (a process's working directory is not read here).
func sessionProcesses(rec sessionRecord, root string) []int {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.pgrp", rec.PGID)
	if err != nil {
		return nil
	}
	self, uid := os.Getpid(), uint32(os.Getuid())
	var pids []int
	for _, kp := range kps {
		pid := int(kp.Proc.P_pid)
		tv := kp.Proc.P_starttime
		start := uint64(tv.Sec)*1e6 + uint64(tv.Usec)
		if pid == self || kp.Eproc.Ucred.Uid != uid || kp.Proc.P_stat == 5 /* SZOMB */ || start < rec.Start {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// pipeHolders: reading another process's files needs libproc here; nothing is found.
func pipeHolders(files ...*os.File) []int { return nil }
