package gateway

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
)

// The tenant's quotas and kill switches: what all of the tenant's jobs together may spend (of
// every record, or of one), and the stop of every model call of the tenant or of one record.
// They are checked where a job's budget and a session's limits are (admit), against the same
// reservations of the calls in flight (reserve.go), so a tenant's token quota is passed by at
// most one call's use, as a job's budget is; and a kill ends the calls in flight as Kill ends a
// job's. The account is kept in memory as calls end; a dev server gives it, at its start, the
// calls its store metered before (Charge), so it holds across restarts.
//
// Windows: a rolling day is the use of the last 1,440 whole minutes and this one (a call's use
// lands in the minute it ended); a month is the calendar month, UTC; a per-minute quota is a
// bucket of the minute's requests or tokens that refills continuously, as the providers count
// their rate limits (a bucket of 60 requests a minute takes a burst of 60, then one a second).

const dayMinutes = 24 * 60

type tenant struct {
	now func() time.Time

	mu     sync.Mutex
	quotas []apiv1.Quota
	kills  map[string]time.Time     // by record; "" the tenant
	scopes map[string]*scopeAccount // by record; "" the tenant, every record together
}

// scopeAccount is the use of the tenant or of one record.
type scopeAccount struct {
	ring        [dayMinutes + 1]minuteUse // the rolling day, by minute
	newest      int64                     // the newest minute the ring holds (Unix minutes)
	dayTokens   int64
	dayCost     float64
	month       int // year*12 + month of monthTokens and monthCost
	monthTokens int64
	monthCost   float64
	flight      inFlight // what the calls in flight may use
	requests    bucket   // requests_per_minute
	tokens      bucket   // tokens_per_minute
}

type minuteUse struct {
	minute int64
	tokens int64
	cost   float64
}

// bucket is a per-minute quota's bucket, as what it lacks of being full: used grows with what
// is taken and drains at the quota's limit a minute.
type bucket struct {
	used float64
	at   time.Time
}

// drain brings b to now at rate a second.
func (b *bucket) drain(now time.Time, rate float64) {
	if !b.at.IsZero() && now.After(b.at) {
		b.used = max(0, b.used-now.Sub(b.at).Seconds()*rate)
	}
	if now.After(b.at) {
		b.at = now
	}
}

func newTenant(now func() time.Time) *tenant {
	if now == nil {
		now = time.Now
	}
	return &tenant{now: now, kills: map[string]time.Time{}, scopes: map[string]*scopeAccount{}}
}

func (t *tenant) scope(record string) *scopeAccount {
	s := t.scopes[record]
	if s == nil {
		s = &scopeAccount{}
		t.scopes[record] = s
	}
	return s
}

// advance ages the rolling day out to now's minute, and starts now's month.
func (s *scopeAccount) advance(now time.Time) {
	m := now.Unix() / 60
	if m > s.newest {
		for i := max(s.newest+1, m-dayMinutes); i <= m; i++ {
			b := &s.ring[i%int64(len(s.ring))]
			if b.minute != i {
				s.dayTokens -= b.tokens
				s.dayCost -= b.cost
				*b = minuteUse{minute: i}
			}
		}
		s.newest = m
		if s.dayTokens == 0 {
			s.dayCost = 0 // no float residue
		}
	}
	if mo := monthOf(now); mo != s.month {
		s.month, s.monthTokens, s.monthCost = mo, 0, 0
	}
}

func monthOf(t time.Time) int {
	t = t.UTC()
	return t.Year()*12 + int(t.Month()) - 1
}

// charge adds a call's use at time at (its end) to s.
func (s *scopeAccount) charge(now, at time.Time, tokens int64, cost float64) {
	s.advance(now)
	if m := at.Unix() / 60; m > s.newest-dayMinutes-1 && m <= s.newest {
		b := &s.ring[m%int64(len(s.ring))]
		if b.minute != m {
			*b = minuteUse{minute: m}
		}
		b.tokens += tokens
		b.cost += cost
		s.dayTokens += tokens
		s.dayCost += cost
	}
	if monthOf(at) == s.month {
		s.monthTokens += tokens
		s.monthCost += cost
	}
}

// quotasOf are the quotas that apply to a call of record: the tenant's, then the record's.
func (t *tenant) quotasOf(record string) []apiv1.Quota {
	var qs []apiv1.Quota
	for _, q := range t.quotas {
		if q.Record == "" || q.Record == record {
			qs = append(qs, q)
		}
	}
	return qs
}

// rate is a per-minute quota's drain a second.
func rate(q apiv1.Quota) float64 { return q.Limit / 60 }

// admit checks the kill switches of a call of record and, for a step (res.calls 1), the quotas;
// an admitted step reserves res against them and takes its request. It returns the refusal and
// what refused, or nil.
func (t *tenant) admit(record string, res inFlight) (*gwError, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range []string{"", record} {
		if at, ok := t.kills[r]; ok {
			k := apiv1.TenantKill{Record: r, At: at}
			return killedRefusal(k), k.Label()
		}
	}
	if res.calls == 0 {
		return nil, ""
	}
	now := t.now()
	qs := t.quotasOf(record)
	for _, q := range qs {
		s := t.scope(q.Record)
		if e := s.check(q, now); e != nil {
			return e, q.Label()
		}
	}
	for _, r := range []string{"", record} {
		s := t.scope(r)
		s.flight.add(res)
		for _, q := range qs {
			if q.Record == r && q.Name == apiv1.QuotaRequestsPerMinute {
				s.requests.drain(now, rate(q))
				s.requests.used++
			}
		}
	}
	return nil, ""
}

// end gives back a step's reservation res, and charges what the call used (a call answered
// from a recording reached no provider: it charges nothing).
func (t *tenant) end(record string, res inFlight, u Usage, cost float64, charge bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	for _, r := range []string{"", record} {
		s := t.scope(r)
		if res.calls > 0 {
			s.flight.sub(res)
		}
		if !charge {
			continue
		}
		s.charge(now, now, u.Total(), cost)
		for _, q := range t.quotas {
			if q.Record == r && q.Name == apiv1.QuotaTokensPerMinute {
				s.tokens.drain(now, rate(q))
				s.tokens.used += float64(u.Total())
			}
		}
	}
}

// check refuses a call against quota q of s, or returns nil.
func (s *scopeAccount) check(q apiv1.Quota, now time.Time) *gwError {
	s.advance(now)
	whose := "the tenant's"
	if q.Record != "" {
		whose = "record " + q.Record + "'s"
	}
	refuse := func(used string, note string, resets time.Time) *gwError {
		return &gwError{status: http.StatusTooManyRequests, kind: "rate_limit", noRetry: true, quota: true,
			msg: fmt.Sprintf("oz0 gateway: %s quota %s of %s reached (%s%s); it resets at %s", whose, q.Label(), fmtLimit(q), used, note, resets.UTC().Format(time.RFC3339))}
	}
	switch q.Name {
	case apiv1.QuotaTokensPerDay:
		if float64(s.dayTokens+s.flight.tokens) >= q.Limit {
			return refuse(fmt.Sprintf("%d used in the last 24 hours", s.dayTokens), s.flight.tokensNote(), s.dayResets(q.Limit, false))
		}
	case apiv1.QuotaCostPerDay:
		if s.dayCost+s.flight.cost >= q.Limit {
			return refuse(fmt.Sprintf("$%s used in the last 24 hours", fmtUSD(s.dayCost)), s.flight.costNote(), s.dayResets(q.Limit, true))
		}
	case apiv1.QuotaTokensPerMonth:
		if float64(s.monthTokens+s.flight.tokens) >= q.Limit {
			return refuse(fmt.Sprintf("%d used this month", s.monthTokens), s.flight.tokensNote(), nextMonth(now))
		}
	case apiv1.QuotaCostPerMonth:
		if s.monthCost+s.flight.cost >= q.Limit {
			return refuse(fmt.Sprintf("$%s used this month", fmtUSD(s.monthCost)), s.flight.costNote(), nextMonth(now))
		}
	case apiv1.QuotaRequestsPerMinute:
		s.requests.drain(now, rate(q))
		if s.requests.used+1 > q.Limit+1e-9 { // past what the float's sums may have added
			wait := secondsOf((s.requests.used + 1 - q.Limit) / rate(q))
			return rateRefusal(q, whose, "requests", fmt.Sprintf("%s made in the last minute", requestsWord(s.requests.used)), wait, now)
		}
	case apiv1.QuotaTokensPerMinute:
		s.tokens.drain(now, rate(q))
		if s.tokens.used+float64(s.flight.tokens) >= q.Limit {
			wait := secondsOf((s.tokens.used + float64(s.flight.tokens) - q.Limit + 1) / rate(q))
			return rateRefusal(q, whose, "tokens", fmt.Sprintf("%.0f used in the last minute%s", math.Ceil(s.tokens.used), s.flight.tokensNote()), wait, now)
		}
	}
	return nil
}

// rateRefusal is a per-minute quota's refusal: a rate limit in the provider's shape, with
// retry-after (and retry-after-ms, which both official SDKs read first), so that an SDK's own
// retries wait for the bucket and then succeed, and the provider's rate-limit headers.
func rateRefusal(q apiv1.Quota, whose, what, used string, wait time.Duration, now time.Time) *gwError {
	return &gwError{status: http.StatusTooManyRequests, kind: "rate_limit", openaiType: what, retryAfter: wait,
		rateLimit: &rateLimitHeaders{what: what, limit: int64(q.Limit), reset: now.Add(wait), wait: wait},
		msg:       fmt.Sprintf("oz0 gateway: %s quota %s of %s reached (%s); retry in %s", whose, q.Label(), fmtLimit(q), used, wait)}
}

// secondsOf is s seconds, rounded up to the millisecond (past what the float's sums may have
// added): a retry that comes then finds the bucket's room made.
func secondsOf(s float64) time.Duration {
	return time.Duration(math.Ceil(s*1000-1e-6)) * time.Millisecond
}

func requestsWord(n float64) string {
	if c := math.Ceil(n); c != 1 {
		return strconv.FormatFloat(c, 'f', 0, 64) + " requests"
	}
	return "1 request"
}

func fmtLimit(q apiv1.Quota) string {
	if q.Whole() {
		return strconv.FormatFloat(q.Limit, 'f', 0, 64)
	}
	return "$" + fmtUSD(q.Limit)
}

// dayResets is when the rolling day, aging out its oldest minutes, frees room under limit: the
// time the call refused now could be admitted, the calls in flight aside.
func (s *scopeAccount) dayResets(limit float64, cost bool) time.Time {
	used, flight := float64(s.dayTokens), float64(s.flight.tokens)
	if cost {
		used, flight = s.dayCost, s.flight.cost
	}
	for m := s.newest - dayMinutes; m <= s.newest; m++ {
		b := s.ring[m%int64(len(s.ring))]
		if b.minute != m {
			continue
		}
		if cost {
			used -= b.cost
		} else {
			used -= float64(b.tokens)
		}
		if used+flight < limit {
			return time.Unix((m+dayMinutes+1)*60, 0)
		}
	}
	return time.Unix((s.newest+1)*60, 0) // the calls in flight hold it: when they end
}

func nextMonth(now time.Time) time.Time {
	now = now.UTC()
	return time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)
}

// killedRefusal is the refusal of a call while kill k is thrown.
func killedRefusal(k apiv1.TenantKill) *gwError {
	return &gwError{status: http.StatusForbidden, kind: "permission", noRetry: true, msg: killMessage(k)}
}

func killMessage(k apiv1.TenantKill) string {
	whose, flag := "the tenant", ""
	if k.Record != "" {
		whose, flag = "record "+k.Record, " --record "+k.Record
	}
	return fmt.Sprintf("oz0 gateway: every model call of %s is stopped (oz0 tenant kill%s, at %s); oz0 tenant resume%s lets them through",
		whose, flag, k.At.UTC().Format(time.RFC3339), flag)
}

// killedError is the cause a kill switch cancels a call with: errKilled, with the kill's message.
type killedError struct{ msg string }

func (e *killedError) Error() string        { return e.msg }
func (e *killedError) Is(target error) bool { return target == errKilled }

// SetQuotas puts the tenant's quotas in force, in place of those before; the use counted so far
// stays.
func (g *Gateway) SetQuotas(qs []apiv1.Quota) {
	t := g.tenant
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	for _, q := range qs {
		// A per-minute quota's bucket drains at the rate of the quota in force: bring it to now
		// at the old rate first.
		for _, old := range t.quotas {
			if old.Label() == q.Label() {
				s := t.scope(q.Record)
				s.requests.drain(now, rate(old))
				s.tokens.drain(now, rate(old))
			}
		}
	}
	t.quotas = slices.Clone(qs)
}

// Charge counts a call that ended at time at, and used u at cost, towards the quotas of the
// tenant and of record, as if it had just been through the gateway (request: it was a step
// that went to the provider). A dev server charges, at its start, the calls its store metered
// over the last month, oldest first, so that the quotas hold across restarts; the quotas must
// be set first (a per-minute bucket drains at its quota's rate).
func (g *Gateway) Charge(record string, at time.Time, u Usage, cost float64, request bool) {
	t := g.tenant
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if at.After(now) {
		at = now
	}
	for _, r := range []string{"", record} {
		s := t.scope(r)
		s.charge(now, at, u.Total(), cost)
		for _, q := range t.quotas {
			switch {
			case q.Record != r:
			case q.Name == apiv1.QuotaRequestsPerMinute && request:
				s.requests.drain(at, rate(q))
				s.requests.used++
			case q.Name == apiv1.QuotaTokensPerMinute:
				s.tokens.drain(at, rate(q))
				s.tokens.used += float64(u.Total())
			}
		}
	}
}

// QuotaUse is each quota with what is used of it now.
func (g *Gateway) QuotaUse() []apiv1.QuotaUse {
	t := g.tenant
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	out := make([]apiv1.QuotaUse, 0, len(t.quotas))
	for _, q := range t.quotas {
		s := t.scope(q.Record)
		s.advance(now)
		u := apiv1.QuotaUse{Quota: q}
		switch q.Name {
		case apiv1.QuotaTokensPerDay:
			u.Used, u.InFlight = float64(s.dayTokens), float64(s.flight.tokens)
			if s.dayTokens > 0 {
				u.Resets = s.dayResets(1, false) // the oldest use's ageing out
			}
		case apiv1.QuotaCostPerDay:
			u.Used, u.InFlight = s.dayCost, s.flight.cost
			if s.dayCost > 0 {
				u.Resets = s.dayResets(math.SmallestNonzeroFloat64, true)
			}
		case apiv1.QuotaTokensPerMonth:
			u.Used, u.InFlight, u.Resets = float64(s.monthTokens), float64(s.flight.tokens), nextMonth(now)
		case apiv1.QuotaCostPerMonth:
			u.Used, u.InFlight, u.Resets = s.monthCost, s.flight.cost, nextMonth(now)
		case apiv1.QuotaRequestsPerMinute:
			s.requests.drain(now, rate(q))
			u.Used = math.Ceil(s.requests.used)
			if s.requests.used > 0 {
				u.Resets = now.Add(secondsOf(s.requests.used / rate(q)))
			}
		case apiv1.QuotaTokensPerMinute:
			s.tokens.drain(now, rate(q))
			u.Used, u.InFlight = math.Ceil(s.tokens.used), float64(s.flight.tokens)
			if s.tokens.used > 0 {
				u.Resets = now.Add(secondsOf(s.tokens.used / rate(q)))
			}
		}
		if !u.Resets.IsZero() {
			u.Resets = u.Resets.UTC()
		}
		out = append(out, u)
	}
	return out
}

// KillTenant throws the kill switch of every model call of record ("" the whole tenant), as at
// time at (when it was thrown; zero: now): the calls in flight are stopped at once, as Kill stops
// a job's (a stream ends with an error event in the provider's shape), and every later call is
// refused until ResumeTenant. It returns how many calls it stopped.
func (g *Gateway) KillTenant(record string, at time.Time) int {
	t := g.tenant
	t.mu.Lock()
	if at.IsZero() {
		at = t.now()
	}
	if old, ok := t.kills[record]; ok {
		at = old // thrown already: when it was
	}
	t.kills[record] = at
	t.mu.Unlock()
	cause := &killedError{msg: killMessage(apiv1.TenantKill{Record: record, At: at})}
	g.mu.Lock()
	jobs := make([]*jobState, 0, len(g.jobs))
	for _, js := range g.jobs {
		jobs = append(jobs, js)
	}
	g.mu.Unlock()
	n := 0
	for _, js := range jobs {
		js.mu.Lock()
		for c := range js.live {
			if record == "" || c.grant.Record.Name == record {
				c.kill(cause)
				n++
			}
		}
		js.mu.Unlock()
	}
	g.log.Warn("gateway: tenant killed", "record", record, "live_calls", n)
	return n
}

// ResumeTenant takes back the kill switch of record ("" the tenant's); false when it was not
// thrown.
func (g *Gateway) ResumeTenant(record string) bool {
	t := g.tenant
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.kills[record]
	delete(t.kills, record)
	if ok {
		g.log.Warn("gateway: tenant resumed", "record", record)
	}
	return ok
}

// TenantKills are the kill switches thrown, the tenant's first.
func (g *Gateway) TenantKills() []apiv1.TenantKill {
	t := g.tenant
	t.mu.Lock()
	defer t.mu.Unlock()
	out := []apiv1.TenantKill{}
	for r, at := range t.kills {
		out = append(out, apiv1.TenantKill{Record: r, At: at})
	}
	slices.SortFunc(out, func(a, b apiv1.TenantKill) int {
		switch {
		case a.Record < b.Record:
			return -1
		case a.Record > b.Record:
			return 1
		}
		return 0
	})
	return out
}
