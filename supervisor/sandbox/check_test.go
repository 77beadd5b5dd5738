package sandbox

import (
	"errors"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	works := func(Tier) error { return nil }
	refused := func(t Tier) error {
		return &Unavailable{Tier: t, Reason: "user namespaces are disabled", Mend: "sudo sysctl -w user.max_user_namespaces=15000"}
	}
	for _, tc := range []struct {
		name      string
		requested Tier
		check     func(Tier) error
		want      Tier
		warning   string
		err       string
	}{
		{"default works", "", works, Standard, "", ""},
		{"default refused", "", refused, None, "sessions run without a sandbox (tier none): the standard sandbox cannot work here: user namespaces are disabled; to have one: sudo sysctl -w user.max_user_namespaces=15000", ""},
		{"none", None, refused, None, "", ""},
		{"strict works", Strict, works, Strict, "", ""},
		{"strict refused", Strict, refused, "", "", "the strict sandbox cannot work here: user namespaces are disabled"},
		{"unknown tier", "tight", works, "", "", `unknown sandbox tier "tight"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, warning, err := resolve(tc.requested, tc.check)
			if got != tc.want || warning != tc.warning || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("resolve(%q) = %q, %q, %v; want %q, %q, %q", tc.requested, got, warning, err, tc.want, tc.warning, tc.err)
			}
			var u *Unavailable
			if tc.err != "" && tc.requested != "tight" && !errors.As(err, &u) {
				t.Errorf("resolve(%q): the error is not an *Unavailable, which carries the mend", tc.requested)
			}
		})
	}
}

// Every tier has a policy, and the tiers are ordered by what they hide: each isolates at least
// what the one before it does.
func TestPolicies(t *testing.T) {
	var prev Policy
	for _, tier := range Tiers {
		p := tier.Policy()
		if p.Tier != tier || p.Summary == "" {
			t.Errorf("tier %s has no policy of its own: %+v", tier, p)
		}
		if prev.Namespaces && !p.Namespaces || prev.OwnNetwork && !p.OwnNetwork {
			t.Errorf("tier %s isolates less than %s", tier, prev.Tier)
		}
		if p.OwnNetwork && !p.Namespaces {
			t.Errorf("tier %s has a network of its own without namespaces", tier)
		}
		prev = p
	}
	if !Default.Policy().Namespaces {
		t.Errorf("the default tier %s isolates nothing", Default)
	}
	if p := Tier("bogus").Policy(); p.Namespaces || p.OwnNetwork {
		t.Errorf("an unknown tier's policy isolates: %+v", p)
	}
}
