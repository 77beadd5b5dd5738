// Package lazyre holds regular expressions compiled on their first use rather than at package
// init, which every oz0 command pays, completion on each Tab press included.
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function that compiles expr on its first call (panicking if it does not compile,
// as regexp.MustCompile) and returns the same *regexp.Regexp on every call.
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
