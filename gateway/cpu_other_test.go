//go:build !unix

package gateway

import "time"

// cpuTime is not measured here.
func cpuTime() time.Duration { return 0 }
