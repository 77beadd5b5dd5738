package devserver

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/tenantfile"
	"github.com/orchestrator-zero/oz0/devserver/api"
	"github.com/orchestrator-zero/oz0/gateway"
)

// The tenant's quotas and kill switches (docs/gateway.md): the quotas are the tenant file in the
// state directory (tenantfile), the kill switches the store's; the gateway enforces both. At the
// start, the gateway's account is given the calls the store metered over the last month, so the
// quotas count across jobs and restarts.

// loadTenant puts the tenant's quotas and kill switches in force, and counts the calls metered
// before this start towards the quotas.
func (s *Server) loadTenant() error {
	cfg, err := tenantfile.Load(s.StateDir)
	if err != nil {
		return err
	}
	s.gw.SetQuotas(cfg.Quotas)
	now := time.Now().UTC()
	// The rolling day, and the calendar month: whichever began first.
	since := now.Add(-24*time.Hour - time.Minute)
	if month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC); month.Before(since) {
		since = month
	}
	calls, err := s.store.MeteredCalls(since)
	if err != nil {
		return fmt.Errorf("cannot read the model calls the tenant's quotas count: %w", err)
	}
	for _, c := range calls {
		if c.Replayed {
			continue // it reached no provider
		}
		u := gateway.Usage{InputTokens: c.Usage.InputTokens, OutputTokens: c.Usage.OutputTokens,
			CacheReadTokens: c.Usage.CacheReadTokens, CacheCreationTokens: c.Usage.CacheCreationTokens}
		s.gw.Charge(c.Record, c.Time, u, c.Usage.CostUSD, c.Step)
	}
	kills, err := s.store.TenantKills()
	if err != nil {
		return err
	}
	for _, k := range kills {
		s.gw.KillTenant(k.Record, k.At)
	}
	return nil
}

// maxTenantKills bounds the kill switches thrown (one a record, and the tenant's): a client with
// the token cannot grow the store's table without end.
const maxTenantKills = 1000

// tenantAdmin is the dev server as api.TenantView and api.TenantAdmin.
type tenantAdmin Server

var (
	_ api.TenantView  = (*tenantAdmin)(nil)
	_ api.TenantAdmin = (*tenantAdmin)(nil)
)

func (t *tenantAdmin) Tenant() (apiv1.Tenant, error) {
	s := (*Server)(t)
	return apiv1.Tenant{Quotas: s.gw.QuotaUse(), Kills: s.gw.TenantKills()}, nil
}

func (t *tenantAdmin) SetQuota(q apiv1.Quota) error {
	s := (*Server)(t)
	cfg, err := tenantfile.Update(s.StateDir, func(c *tenantfile.Config) error {
		if err := c.Set(q); err != nil {
			return fmt.Errorf("%w: %w", api.ErrBadQuota, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.gw.SetQuotas(cfg.Quotas)
	s.say("tenant: quota %s set to %s (oz0 tenant quota list)", q.Label(), fmtQuotaLimit(q))
	return nil
}

func (t *tenantAdmin) RemoveQuota(record, name string) error {
	s := (*Server)(t)
	label := apiv1.Quota{Record: record, Name: name}.Label()
	cfg, err := tenantfile.Update(s.StateDir, func(c *tenantfile.Config) error {
		if !c.Remove(record, name) {
			return fmt.Errorf("%w: the tenant has no quota %s; oz0 tenant quota list shows them", api.ErrNoQuota, label)
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.gw.SetQuotas(cfg.Quotas)
	s.say("tenant: quota %s removed", label)
	return nil
}

func (t *tenantAdmin) KillTenant(record string) (apiv1.TenantKillAnswer, error) {
	s := (*Server)(t)
	kills := s.gw.TenantKills()
	was := slices.ContainsFunc(kills, func(k apiv1.TenantKill) bool { return k.Record == record })
	if !was && len(kills) >= maxTenantKills {
		return apiv1.TenantKillAnswer{}, fmt.Errorf("%w: %d kill switches are thrown, the most there may be; oz0 tenant kill with no --record stops every call", api.ErrBadQuota, maxTenantKills)
	}
	// Recorded first: a kill the store could not keep would be lost at the next start.
	at, err := s.store.KillTenant(record, time.Now())
	if err != nil {
		return apiv1.TenantKillAnswer{}, err
	}
	n := s.gw.KillTenant(record, at)
	k := apiv1.TenantKill{Record: record, At: at}
	s.say("tenant: %s (%s in flight stopped); oz0 tenant resume%s lets them through", killSummary(k), count(n, "call", "calls"), recordFlag(record))
	return apiv1.TenantKillAnswer{Kill: k, Changed: !was, Stopped: n}, nil
}

func (t *tenantAdmin) ResumeTenant(record string) (apiv1.TenantKillAnswer, error) {
	s := (*Server)(t)
	ok, err := s.store.ResumeTenant(record)
	if err != nil {
		return apiv1.TenantKillAnswer{}, err
	}
	ok = s.gw.ResumeTenant(record) || ok
	if ok {
		s.say("tenant: model calls of %s let through again", whose(record))
	}
	return apiv1.TenantKillAnswer{Kill: apiv1.TenantKill{Record: record}, Changed: ok}, nil
}

// TenantUsage groups the calendar month's model calls as the store metered them.
func (t *tenantAdmin) TenantUsage(by string) (apiv1.TenantUsage, error) {
	s := (*Server)(t)
	now := time.Now().UTC()
	since := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	calls, err := s.store.MeteredCalls(since)
	if err != nil {
		return apiv1.TenantUsage{}, err
	}
	rows := map[string]*apiv1.TenantUsageRow{}
	for _, c := range calls {
		var key string
		switch by {
		case "agent":
			key = c.Agent
		case "day":
			key = c.Time.UTC().Format(time.DateOnly)
		default:
			key = c.Record
		}
		r := rows[key]
		if r == nil {
			r = &apiv1.TenantUsageRow{Key: key}
			rows[key] = r
		}
		u := &r.Usage
		u.ModelCalls += c.Usage.ModelCalls
		u.InputTokens += c.Usage.InputTokens
		u.OutputTokens += c.Usage.OutputTokens
		u.CacheReadTokens += c.Usage.CacheReadTokens
		u.CacheCreationTokens += c.Usage.CacheCreationTokens
		u.CostUSD += c.Usage.CostUSD
	}
	out := apiv1.TenantUsage{By: by, Since: since, Rows: []apiv1.TenantUsageRow{}, Quotas: s.gw.QuotaUse()}
	for _, r := range rows {
		out.Rows = append(out.Rows, *r)
	}
	slices.SortFunc(out.Rows, func(a, b apiv1.TenantUsageRow) int { return cmp.Compare(a.Key, b.Key) })
	return out, nil
}

func whose(record string) string {
	if record == "" {
		return "the tenant"
	}
	return "record " + record
}

func recordFlag(record string) string {
	if record == "" {
		return ""
	}
	return " --record " + record
}

// killSummary says a kill switch for the banner and the output.
func killSummary(k apiv1.TenantKill) string {
	return fmt.Sprintf("every model call of %s stopped at %s (oz0 tenant kill%s)", whose(k.Record), k.At.UTC().Format(time.RFC3339), recordFlag(k.Record))
}

func fmtQuotaLimit(q apiv1.Quota) string {
	if q.Whole() {
		return fmt.Sprintf("%.0f", q.Limit)
	}
	return "$" + strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.6f", q.Limit), "0"), ".")
}

// tenantBanner says the tenant's kill switches thrown and its quotas, for the banner.
func (s *Server) tenantBanner() {
	for _, k := range s.gw.TenantKills() {
		s.say("  tenant  %s: jobs' model calls are refused until oz0 tenant resume%s", killSummary(k), recordFlag(k.Record))
	}
	if qs := s.gw.QuotaUse(); len(qs) > 0 {
		var names []string
		for _, q := range qs {
			names = append(names, q.Label()+" "+fmtQuotaLimit(q.Quota))
		}
		s.say("  quotas  %s (oz0 tenant usage)", strings.Join(names, ", "))
	}
}
