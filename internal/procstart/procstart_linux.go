package procstart

import (
	"bytes"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// userHZ is the unit of /proc's process times: USER_HZ, 100 on every Linux architecture Go runs on.
const userHZ = 100

// osStart is the process's start: its starttime (the 22nd field of /proc/self/stat, clock ticks
// since boot) against CLOCK_BOOTTIME now, the clock it is counted on, made a wall time with now.
func osStart(now time.Time) (time.Time, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return time.Time{}, false
	}
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return time.Time{}, false
	}
	return parseStart(b, now, time.Duration(ts.Nano()))
}

// parseStart reads starttime from stat (the text of /proc/PID/stat) and turns it into the wall
// time it was, given that now is uptime after boot.
func parseStart(stat []byte, now time.Time, uptime time.Duration) (time.Time, bool) {
	// The command's name, in parentheses, may hold spaces and parentheses: the fields that
	// follow the last ")" are the 3rd (state) onwards, so starttime is the 20th of them.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return time.Time{}, false
	}
	fields := bytes.Fields(stat[i+1:])
	if len(fields) < 20 {
		return time.Time{}, false
	}
	ticks, err := strconv.ParseInt(string(fields[19]), 10, 64)
	if err != nil || ticks < 0 {
		return time.Time{}, false
	}
	since := time.Duration(ticks) * (time.Second / userHZ)
	if since > uptime {
		return time.Time{}, false
	}
	return now.Add(-(uptime - since)), true
}
