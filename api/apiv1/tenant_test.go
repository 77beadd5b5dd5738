package apiv1

import (
	"math"
	"strings"
	"testing"
)

func TestQuotaCheck(t *testing.T) {
	for _, tc := range []struct {
		q    Quota
		want string // "" is valid
	}{
		{Quota{Name: QuotaTokensPerDay, Limit: 1}, ""},
		{Quota{Record: "anthropic", Name: QuotaCostPerMonth, Limit: 0.5}, ""},
		{Quota{Name: "tokens_per_week", Limit: 1}, `quota "tokens_per_week" is not one oz0 knows; use one of tokens_per_day,`},
		{Quota{Record: "Anthropic", Name: QuotaTokensPerDay, Limit: 1}, `record "Anthropic" is not a model record's name`},
		{Quota{Name: QuotaRequestsPerMinute, Limit: 0}, "the limit of tenant.requests_per_minute must be a number above 0"},
		{Quota{Name: QuotaCostPerDay, Limit: math.NaN()}, "must be a number above 0"},
		{Quota{Name: QuotaCostPerDay, Limit: math.Inf(1)}, "must be a number above 0"},
		{Quota{Record: "openai", Name: QuotaTokensPerMinute, Limit: 1.5}, "the limit of record.openai.tokens_per_minute counts tokens: give a whole number"},
		{Quota{Name: QuotaRequestsPerMinute, Limit: 1e16}, "counts requests: give a whole number up to 10^15"},
	} {
		err := tc.q.Check()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.q, err, tc.want)
		}
	}
	if l := (TenantKill{Record: "openai"}).Label(); l != "record.openai.kill" {
		t.Errorf("kill label %q", l)
	}
}
