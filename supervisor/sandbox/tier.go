package sandbox

import (
	"fmt"
	"strings"
)

// Tier is how much of the machine a session sees.
type Tier string

// The tiers. docs/sandbox.md says what each hides and allows.
const (
	// None runs the harness as the node's user in a process group of its own, with a minimal
	// environment and directories of its own: no isolation.
	None Tier = "none"
	// Standard runs it in user, mount, PID, IPC and UTS namespaces: it sees the plugin read-only,
	// its own directories and /tmp, and the system's programs; nothing it starts outlives it.
	Standard Tier = "standard"
	// Strict is Standard in a network namespace of its own, where only the gateway is reachable.
	Strict Tier = "strict"
)

// Tiers lists the tiers, least isolated first.
var Tiers = []Tier{None, Standard, Strict}

// TierNames lists the tiers' names, for flag help and shell completion.
func TierNames() []string {
	names := make([]string, len(Tiers))
	for i, t := range Tiers {
		names[i] = string(t)
	}
	return names
}

// ParseTier reads a tier's name; "" is "" (the default, decided by Resolve).
func ParseTier(s string) (Tier, error) {
	switch t := Tier(strings.TrimSpace(s)); t {
	case "", None, Standard, Strict:
		return t, nil
	}
	return "", fmt.Errorf("unknown sandbox tier %q; use none, standard or strict", s)
}

// Isolated reports whether the tier runs sessions in namespaces.
func (t Tier) Isolated() bool { return t == Standard || t == Strict }

// Describe says in a few words what a session of the tier sees, for banners.
func (t Tier) Describe() string {
	switch t {
	case Standard:
		return "user, mount, PID, IPC and UTS namespaces: the plugin read-only, a private /tmp, nothing left when a session ends"
	case Strict:
		return "standard, and a network namespace where only the gateway is reachable"
	}
	return "no isolation: sessions run as you, in a process group of their own"
}
