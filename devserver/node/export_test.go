package node

import "time"

// SetGateClock sets the clock of the core gate's pace until the test's cleanup calls the function
// it returns. Set it before the node starts.
func SetGateClock(clock func() time.Time) (restore func()) {
	now = clock
	return func() { now = time.Now }
}
