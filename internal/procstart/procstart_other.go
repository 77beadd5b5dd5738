//go:build !linux

package procstart

import "time"

// osStart is not known here: Time falls back to the package's initialisation.
func osStart(time.Time) (time.Time, bool) { return time.Time{}, false }
