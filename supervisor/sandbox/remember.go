package sandbox

import (
	"slices"
	"strings"

	"github.com/orchestrator-zero/oz0/internal/keptlines"
)

// Check builds a real sandbox, an exec of oz0 as its init: 10–15 ms that oz0 dev's start paid
// before its API answered. What the probe learns holds while nothing it depends on changes, so a
// tier seen to work is remembered, in the user's cache, under a key of what it depends on (see
// machineKey): the boot, the kernel's settings for user namespaces, the user and the oz0 binary.
// Only success is remembered: a tier that failed is checked again at each start, so a fix is
// seen at once.

// ResolveRemembered is Resolve for a start that must not wait for the probe: a tier remembered
// to work under the same key is taken as working without building a sandbox (remembered is then
// true, and the caller checks it again once it is ready: Check, then Forget if it fails). Any
// other tier is checked as Resolve checks it, and remembered if it works.
func ResolveRemembered(requested Tier) (tier Tier, warning string, remembered bool, err error) {
	tier, warning, err = resolve(requested, func(t Tier) error {
		var e error
		remembered, e = checkRemembered(t, memoryPath(), machineKey, Check)
		return e
	})
	return tier, warning, remembered, err
}

// Forget forgets that t works here: the next start checks it again.
func Forget(t Tier) {
	if path := memoryPath(); path != "" {
		forget(path, t)
	}
}

// checkRemembered reports whether t works here: from the memory at path when it holds t under
// key(t)'s value (remembered), else by check, whose success it remembers. An empty path or a key
// that cannot be read remembers nothing.
func checkRemembered(t Tier, path string, key func(Tier) (string, bool), check func(Tier) error) (remembered bool, err error) {
	if !t.Policy().Namespaces {
		return false, check(t)
	}
	k, ok := key(t)
	ok = ok && path != ""
	seen := memoryEntry{t, k}
	if ok && slices.Contains(readMemory(path), seen) {
		return true, nil
	}
	if err := check(t); err != nil {
		return false, err
	}
	if ok {
		remember(path, seen)
	}
	return false, nil
}

// memoryPath is the file of the tiers seen to work; "" where the user has no cache directory.
func memoryPath() string { return keptlines.CachePath("sandbox-works") }

// memoryEntry is a line of the memory, "TIER KEY": the tier worked under the key.
type memoryEntry struct {
	tier Tier
	key  string
}

func (e memoryEntry) line() string { return string(e.tier) + " " + e.key }

// memoryLines bounds the memory: one line a tier and binary (a release and a build of one's own,
// a test binary), the newest kept.
const memoryLines = 16

func memoryAt(path string) keptlines.File { return keptlines.File{Path: path, Max: memoryLines} }

// readMemory reads the memory's lines, oldest first; a file that is missing or unreadable is an
// empty memory (the tiers are checked).
func readMemory(path string) []memoryEntry {
	var m []memoryEntry
	for _, l := range memoryAt(path).Lines() {
		if tier, key, ok := strings.Cut(l, " "); ok {
			m = append(m, memoryEntry{Tier(tier), key})
		}
	}
	return m
}

// remember adds e to the memory, written whole: two starts that write at once lose at most
// one's line, which the next start checks again.
func remember(path string, e memoryEntry) { memoryAt(path).Add(e.line()) }

// forget removes every line of t: whichever binary saw it work, the next start checks it again.
func forget(path string, t Tier) {
	memoryAt(path).Remove(func(l string) bool {
		tier, _, ok := strings.Cut(l, " ")
		return ok && Tier(tier) == t
	})
}
