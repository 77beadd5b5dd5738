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

// Default is the tier sessions run in when none is asked for, where it works (Resolve).
const Default = Standard

// Policy is what a tier means. It is decided here, once per tier, and every place that acts on a
// session's tier (the supervisor, the sandbox's set-up and checks, doctor, the banners) reads its
// Policy rather than comparing tiers: a new tier, or a tier that hides more, is a change here and
// in what the fields drive.
type Policy struct {
	Tier Tier
	// Namespaces: the session runs in user, mount, PID, IPC and UTS namespaces under the sandbox's
	// init, which the supervisor starts, waits for and signals; it sees the plugin read-only, its
	// own directories and /tmp, and the system's programs, so what a wrapper on PATH needs (the
	// user's home) is hidden, and the session's directories belong to the harness's user. Without
	// namespaces the session is a process group of the node's user, and nothing is checked, built
	// or warmed up ahead.
	Namespaces bool
	// OwnNetwork: the session has a network namespace of its own, where the supervisor serves the
	// gateway on loopback listeners inside and nothing else is reachable.
	OwnNetwork bool
	// Summary says in a few words what a session of the tier sees, for banners.
	Summary string
	// Warning, when set, is what a person starting a node of the tier must know it leaves open;
	// the banner says it whether the tier was asked for or fallen back to.
	Warning string
}

var policies = map[Tier]Policy{
	None: {Tier: None,
		Summary: "no isolation: sessions run as you, in a process group of their own",
		Warning: "tier none hides nothing: a session runs as you and can read your files, every oz0 dev's token and state on this machine, and signal or trace your processes; use it only for code you trust"},
	Standard: {Tier: Standard, Namespaces: true,
		Summary: "user, mount, PID, IPC and UTS namespaces: the plugin read-only, a private /tmp, nothing left when a session ends"},
	Strict: {Tier: Strict, Namespaces: true, OwnNetwork: true,
		Summary: "standard, and a network namespace where only the gateway is reachable"},
}

// Policy returns what the tier means; an unknown tier's (ParseTier refuses one) isolates nothing.
func (t Tier) Policy() Policy {
	if p, ok := policies[t]; ok {
		return p
	}
	return Policy{Tier: t}
}
