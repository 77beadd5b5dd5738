package sandbox

import (
	"fmt"
	"sync"
)

// Unavailable says why a tier cannot work on this machine, and what to do about it.
type Unavailable struct {
	Tier   Tier
	Reason string
	Mend   string
}

func (u *Unavailable) Error() string {
	return fmt.Sprintf("the %s sandbox cannot work here: %s", u.Tier, u.Reason)
}

var checks sync.Map // Tier → *checkResult

type checkResult struct {
	once sync.Once
	err  error
}

// Check reports whether tier works on this machine: nil, or an *Unavailable. It builds a real
// sandbox once per process and tier (a few milliseconds), so that what it says is what the
// kernel does, not what its settings suggest.
func Check(t Tier) error {
	if !t.Policy().Namespaces {
		return nil
	}
	v, _ := checks.LoadOrStore(t, &checkResult{})
	r := v.(*checkResult)
	r.once.Do(func() { r.err = check(t) })
	return r.err
}

// WarmUp starts tier's init for the first session ahead, in the background, unless one waits
// already. Check does not: a caller that will run sessions calls it once it is ready, so that the
// init's start does not share the CPU with the caller's own (oz0 dev's, before its API answers).
func WarmUp(t Tier) {
	if t.Policy().Namespaces {
		go warmUp(t)
	}
}

// KeepSpare says whether tier keeps an init started ahead of its next session, as it does
// unless told otherwise (each session's end starts the next one's). A node whose sessions all
// fork from fork servers, which none of them takes, keeps none: each waiting init holds 5-6 MB.
// A session then started in the tier starts its init, ~5 ms more.
func KeepSpare(t Tier, keep bool) { keepSpare(t, keep) }

// Resolve decides the tier sessions run in. An explicit tier that cannot work here is an error
// (an *Unavailable); the default ("") is Standard where it works, else None with a warning that
// says why: never a silent fallback.
func Resolve(requested Tier) (tier Tier, warning string, err error) {
	return resolve(requested, Check)
}

func resolve(requested Tier, check func(Tier) error) (tier Tier, warning string, err error) {
	switch _, known := policies[requested]; {
	case known && !requested.Policy().Namespaces:
		return requested, "", nil
	case known:
		if err := check(requested); err != nil {
			return "", "", err
		}
		return requested, "", nil
	case requested == "":
		if err := check(Default); err != nil {
			u, _ := err.(*Unavailable)
			w := fmt.Sprintf("sessions run without a sandbox (tier none): %v", err)
			if u != nil && u.Mend != "" {
				w += "; to have one: " + u.Mend
			}
			return None, w, nil
		}
		return Default, "", nil
	}
	return "", "", fmt.Errorf("unknown sandbox tier %q; use none, standard or strict", requested)
}
