package devserver

import (
	"testing"

	"github.com/orchestrator-zero/oz0/diag"
)

// The reload notes count in words: "1 agent", "2 agents"; "1 error; fix it", "2 errors; fix them".
func TestReloadWording(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0 agents"}, {1, "1 agent"}, {2, "2 agents"}} {
		if got := count(tc.n, "agent", "agents"); got != tc.want {
			t.Errorf("count(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	errs := func(sev ...diag.Severity) *diag.Report {
		r := &diag.Report{}
		for _, s := range sev {
			r.Diagnostics = append(r.Diagnostics, diag.Diagnostic{Severity: s})
		}
		return r
	}
	for _, tc := range []struct {
		rep  *diag.Report
		want string
	}{
		{errs(diag.Error), "1 error; fix it and save again"},
		{errs(diag.Error, diag.Error), "2 errors; fix them and save again"},
		{errs(diag.Error, diag.Warning), "1 error, 1 warning; fix them and save again"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			t.Run(tc.want, func(t *testing.T) {
				if got := problemsToFix(tc.rep); got != tc.want {
					t.Errorf("got %q, want %q", got, tc.want)
				}
			})
		})
	}
}
