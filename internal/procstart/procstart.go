// Package procstart tells when this process started, for figures such as oz0 dev's "ready in",
// which must include what runs before main (the runtime's start, every package's init).
package procstart

import "time"

// loaded is when this package was initialised, before main: the fallback where the system does
// not say when the process started.
var loaded = time.Now()

// Time is when the process started: on Linux, the kernel's start time of the process (from
// /proc/self/stat, in clock ticks of 10 ms, so up to 10 ms early); elsewhere, or if that cannot be
// read, when this package was initialised, before main (what ran before is not counted).
func Time() time.Time {
	if t, ok := osStart(time.Now()); ok && !t.After(loaded) {
		return t
	}
	return loaded
}
