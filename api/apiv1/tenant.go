package apiv1

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// The tenant's quotas and kill switches (oz0 tenant): what all of the tenant's jobs may spend,
// and the stop of every model call of the tenant or of one provider record. The gateway refuses a
// call past a quota in the provider's shape, as it refuses one past a job's limits.

// The quotas a tenant, or one of its provider records, may have.
const (
	QuotaTokensPerDay      = "tokens_per_day"      // a rolling 24 hours
	QuotaTokensPerMonth    = "tokens_per_month"    // the calendar month, UTC
	QuotaCostPerDay        = "cost_usd_per_day"    // a rolling 24 hours; priced records only
	QuotaCostPerMonth      = "cost_usd_per_month"  // the calendar month, UTC
	QuotaRequestsPerMinute = "requests_per_minute" // a bucket of a minute's requests, refilled as it empties
	QuotaTokensPerMinute   = "tokens_per_minute"   // a bucket of a minute's tokens, refilled as it empties
)

// QuotaNames are the quotas, in the order they are listed.
var QuotaNames = []string{QuotaTokensPerDay, QuotaTokensPerMonth, QuotaCostPerDay, QuotaCostPerMonth,
	QuotaRequestsPerMinute, QuotaTokensPerMinute}

// Quota is one of the tenant's quotas: of all its model calls (Record "") or of one provider
// record's.
type Quota struct {
	Record string  `json:"record,omitempty"`
	Name   string  `json:"name"`
	Limit  float64 `json:"limit"`
}

// Label names the quota where a refusal, a metered call and a table name it:
// tenant.tokens_per_day, or record.anthropic.tokens_per_day.
func (q Quota) Label() string {
	if q.Record == "" {
		return "tenant." + q.Name
	}
	return "record." + q.Record + "." + q.Name
}

// Whole reports whether the quota counts whole things (tokens, requests) rather than dollars.
func (q Quota) Whole() bool { return !strings.HasPrefix(q.Name, "cost_usd") }

// Check says what is wrong with q, and how to mend it, or nil.
func (q Quota) Check() error {
	known := false
	for _, n := range QuotaNames {
		known = known || n == q.Name
	}
	if !known {
		return fmt.Errorf("quota %q is not one oz0 knows; use one of %s", q.Name, strings.Join(QuotaNames, ", "))
	}
	if q.Record != "" && !ValidRecordName(q.Record) {
		return fmt.Errorf("record %q is not a model record's name; use lowercase letters, digits, - and _, like anthropic", q.Record)
	}
	switch {
	case math.IsNaN(q.Limit) || math.IsInf(q.Limit, 0) || q.Limit <= 0:
		return fmt.Errorf("the limit of %s must be a number above 0; to lift the quota, remove it", q.Label())
	case q.Whole() && (q.Limit != math.Trunc(q.Limit) || q.Limit > 1e15):
		return fmt.Errorf("the limit of %s counts %s: give a whole number up to 10^15", q.Label(), strings.SplitN(q.Name, "_", 2)[0])
	}
	return nil
}

// ValidRecordName reports whether name can be a provider record's: 1 to 64 of a-z, 0-9, - and _,
// starting with a letter.
func ValidRecordName(name string) bool {
	if len(name) == 0 || len(name) > 64 || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// QuotaUse is a quota with what is used of it now.
type QuotaUse struct {
	Quota
	// Used is what the quota's window holds now: tokens, dollars or requests (a minute's bucket:
	// what it lacks of being full).
	Used float64 `json:"used"`
	// InFlight is what the calls in flight may still use, reserved against the quota until they
	// end.
	InFlight float64 `json:"in_flight,omitempty"`
	// Resets is when the window frees what it holds now: the next calendar month, the time the
	// rolling day's oldest use ages out, or the minute's bucket full again. Zero: nothing is used.
	Resets time.Time `json:"resets,omitzero"`
}

// TenantKill is a kill switch thrown: every model call of the tenant (Record "") or of one record
// is stopped and refused until oz0 tenant resume.
type TenantKill struct {
	Record string    `json:"record,omitempty"`
	At     time.Time `json:"at"`
}

// Label names the kill where a refusal and a metered call name it: tenant.kill, or
// record.anthropic.kill.
func (k TenantKill) Label() string {
	if k.Record == "" {
		return "tenant.kill"
	}
	return "record." + k.Record + ".kill"
}

// Tenant is the answer of GET /api/v1/tenant: the quotas with their use, and the kill switches
// thrown.
type Tenant struct {
	Quotas []QuotaUse   `json:"quotas"`
	Kills  []TenantKill `json:"kills"`
}

// TenantKillRequest is the body of POST /api/v1/tenant/kill and /resume: Record "" is the whole
// tenant.
type TenantKillRequest struct {
	Record string `json:"record,omitempty"`
}

// TenantKillAnswer is the answer of POST /api/v1/tenant/kill and /resume: the kill (when
// thrown), whether it changed anything, and the calls in flight it stopped.
type TenantKillAnswer struct {
	Kill    TenantKill `json:"kill"`
	Changed bool       `json:"changed"`
	Stopped int        `json:"stopped"`
}

// TenantUsageBy are the ways GET /api/v1/tenant/usage?by= groups the month's model calls.
var TenantUsageBy = []string{"record", "agent", "day"}

// TenantUsageRow sums the model calls of one record, agent or day (YYYY-MM-DD, UTC).
type TenantUsageRow struct {
	Key string `json:"key"`
	Usage
}

// TenantUsage is the answer of GET /api/v1/tenant/usage?by=record|agent|day: the model calls of
// the calendar month (UTC) so far, grouped, with the quotas' use.
type TenantUsage struct {
	By     string           `json:"by"`
	Since  time.Time        `json:"since"`
	Rows   []TenantUsageRow `json:"rows"`
	Quotas []QuotaUse       `json:"quotas"`
}
