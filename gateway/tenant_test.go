package gateway

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
)

// fakeClock is the quotas' clock in a test: it moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func withClock(c *fakeClock) envOpt { return withConfig(func(cfg *Config) { cfg.Now = c.now }) }

// faceOf is the URL, body and headers of a call on face.
func (e *env) faceOf(face Format, key string) (string, string, map[string]string) {
	if face == OpenAIChat {
		return e.openaiURL() + "/chat/completions", openaiBody, openaiHeaders(key)
	}
	return e.anthropicURL() + "/v1/messages", anthBody, anthHeaders(key)
}

// A daily token quota of the tenant counts the calls of every job: the call that finds it
// reached is refused in the provider's shape, naming the quota and when it resets, with
// x-should-retry: false; once the day's use has aged out, calls go through again. A record's
// quota counts that record's calls alone, and a month's resets with the month.
func TestTenantDailyTokenQuotaAcrossJobs(t *testing.T) {
	for _, face := range Formats {
		t.Run(string(face), func(t *testing.T) {
			clock := &fakeClock{t: time.Date(2026, 12, 7, 8, 0, 30, 0, time.UTC)}
			e := newEnv(t, helloScript, withClock(clock)) // 40 tokens a call
			e.gw.SetQuotas([]apiv1.Quota{{Name: apiv1.QuotaTokensPerDay, Limit: 100}})
			k1 := e.issue("job_a", "a", Limits{}, Budget{})
			k2 := e.issue("job_b", "b", Limits{}, Budget{})
			for i, k := range []string{k1, k2, k1} { // 40, 80, 120 tokens
				url, body, h := e.faceOf(face, k)
				if r := do(t, "POST", url, h, body); r.status != 200 {
					t.Fatalf("call %d: %d %s", i+1, r.status, r.body)
				}
				clock.add(time.Minute)
			}
			url, body, h := e.faceOf(face, k2)
			r := do(t, "POST", url, h, body)
			if r.status != 429 || r.header.Get("X-Should-Retry") != "false" || r.header.Get("Retry-After") != "" {
				t.Fatalf("over the quota: %d %v %s", r.status, r.header, r.body)
			}
			typ, msg, code := errorShape(t, face, r.body)
			if face == AnthropicMessages && typ != "rate_limit_error" || face == OpenAIChat && (typ != "insufficient_quota" || code != "insufficient_quota") {
				t.Errorf("error shape %s/%s", typ, code)
			}
			// The first call's minute, 08:00, ages out at 08:00 the next day plus a minute: then
			// 80 tokens are left, under 100.
			if want := "the tenant's quota tenant.tokens_per_day of 100 reached (120 used in the last 24 hours); it resets at 2026-12-08T08:01:00Z"; !strings.Contains(msg, want) {
				t.Errorf("message %q, want %q", msg, want)
			}
			calls := e.calls("job_b", 2)
			if calls[1].Refused != "tenant.tokens_per_day" || calls[1].Status != 429 {
				t.Errorf("metered %+v", calls[1])
			}
			use := e.gw.QuotaUse()
			if len(use) != 1 || use[0].Used != 120 {
				t.Errorf("QuotaUse %+v", use)
			}
			clock.add(24*time.Hour - 3*time.Minute + time.Minute) // 08:01 the next day
			if r := do(t, "POST", url, h, body); r.status != 200 {
				t.Errorf("a day later: %d %s", r.status, r.body)
			}

			// A record's quota: of calls of that record only.
			e.gw.SetQuotas([]apiv1.Quota{{Record: "other", Name: apiv1.QuotaTokensPerMonth, Limit: 1}, {Record: e.record.Name, Name: apiv1.QuotaTokensPerMonth, Limit: 250}})
			for i := 0; ; i++ {
				r := do(t, "POST", url, h, body)
				if r.status == 429 {
					_, msg, _ := errorShape(t, face, r.body)
					if want := fmt.Sprintf("record %s's quota record.%s.tokens_per_month of 250 reached (280 used this month); it resets at 2027-01-01T00:00:00Z", e.record.Name, e.record.Name); !strings.Contains(msg, want) || i != 3 {
						t.Errorf("after %d calls: %q, want %q", i, msg, want)
					}
					break
				}
				if i > 5 {
					t.Fatal("the month's quota never refused")
				}
			}
			clock.t = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
			if r := do(t, "POST", url, h, body); r.status != 200 {
				t.Errorf("the next month: %d %s", r.status, r.body)
			}
		})
	}
}

// Charge gives the account calls metered before (a dev server's restart): they count as if they
// had just been through, in their own minutes of the day.
func TestTenantChargeCountsEarlierCalls(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)}
	e := newEnv(t, helloScript, withClock(clock))
	e.gw.SetQuotas([]apiv1.Quota{{Name: apiv1.QuotaTokensPerDay, Limit: 100}, {Record: e.record.Name, Name: apiv1.QuotaRequestsPerMinute, Limit: 2}})
	e.gw.Charge(e.record.Name, clock.t.Add(-25*time.Hour), Usage{InputTokens: 1000}, 0, true) // aged out
	e.gw.Charge(e.record.Name, clock.t.Add(-2*time.Hour), Usage{InputTokens: 60}, 0, true)
	e.gw.Charge(e.record.Name, clock.t.Add(-time.Second), Usage{InputTokens: 1}, 0, true)
	e.gw.Charge(e.record.Name, clock.t, Usage{InputTokens: 1}, 0, true)
	use := e.gw.QuotaUse()
	if use[0].Used != 62 || use[1].Used != 2 {
		t.Errorf("QuotaUse %+v", use)
	}
	key := e.issue("job_c", "a", Limits{}, Budget{})
	r := do(t, "POST", e.anthropicURL()+"/v1/messages", anthHeaders(key), anthBody)
	if r.status != 429 || !strings.Contains(string(r.body), "record.fake.requests_per_minute of 2 reached (2 requests made in the last minute)") {
		t.Errorf("%d %s", r.status, r.body)
	}
}

// A requests-per-minute quota is a rate limit as the providers' are: a bucket of the minute's
// requests that refills as it empties. The call it refuses is a 429 in the provider's rate-limit
// shape with retry-after (and retry-after-ms), not x-should-retry: false, so an SDK retries it
// when the bucket has room; a tokens-per-minute quota the same with the tokens.
func TestTenantRateLimits(t *testing.T) {
	for _, face := range Formats {
		t.Run(string(face), func(t *testing.T) {
			clock := &fakeClock{t: time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)}
			e := newEnv(t, helloScript, withClock(clock))
			e.gw.SetQuotas([]apiv1.Quota{{Record: e.record.Name, Name: apiv1.QuotaRequestsPerMinute, Limit: 2}})
			url, body, h := e.faceOf(face, e.issue("job_r", "a", Limits{}, Budget{}))
			for i := range 2 {
				if r := do(t, "POST", url, h, body); r.status != 200 {
					t.Fatalf("call %d: %d %s", i+1, r.status, r.body)
				}
			}
			clock.add(10 * time.Second)
			r := do(t, "POST", url, h, body)
			if r.status != 429 || r.header.Get("Retry-After") != "20" || r.header.Get("Retry-After-Ms") != "20000" || r.header.Get("X-Should-Retry") != "" {
				t.Fatalf("over the rate: %d %v %s", r.status, r.header, r.body)
			}
			typ, msg, code := errorShape(t, face, r.body)
			if face == AnthropicMessages && typ != "rate_limit_error" || face == OpenAIChat && (typ != "requests" || code != "rate_limit_exceeded") {
				t.Errorf("error shape %s/%s", typ, code)
			}
			// The provider's rate-limit headers, as its own rate limit sends them.
			want := map[string]string{"Anthropic-Ratelimit-Requests-Limit": "2", "Anthropic-Ratelimit-Requests-Remaining": "0",
				"Anthropic-Ratelimit-Requests-Reset": "2026-12-07T08:00:30Z"}
			if face == OpenAIChat {
				want = map[string]string{"X-Ratelimit-Limit-Requests": "2", "X-Ratelimit-Remaining-Requests": "0", "X-Ratelimit-Reset-Requests": "20s"}
			}
			for k, v := range want {
				if got := r.header.Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			if !strings.Contains(msg, "record fake's quota record.fake.requests_per_minute of 2 reached (2 requests made in the last minute); retry in 20s") {
				t.Errorf("message %q", msg)
			}
			clock.add(20 * time.Second)
			if r := do(t, "POST", url, h, body); r.status != 200 {
				t.Errorf("after retry-after: %d %s", r.status, r.body)
			}

			// Tokens a minute: 40 a call on 60 a minute.
			e.gw.SetQuotas([]apiv1.Quota{{Record: e.record.Name, Name: apiv1.QuotaTokensPerMinute, Limit: 60}})
			clock.add(time.Minute)
			for i, want := range []int{200, 200, 429} {
				r := do(t, "POST", url, h, body)
				if r.status != want {
					t.Fatalf("tokens, call %d: %d %s", i+1, r.status, r.body)
				}
				if want == 429 {
					_, msg, _ := errorShape(t, face, r.body)
					// 80 used of 60: 21 to drain at a token a second.
					if r.header.Get("Retry-After") != "21" || !strings.Contains(msg, "tokens_per_minute of 60 reached (80 used in the last minute)") {
						t.Errorf("%v %q", r.header, msg)
					}
					if face == OpenAIChat {
						if typ, _, _ := errorShape(t, face, r.body); typ != "tokens" {
							t.Errorf("OpenAI type %q", typ)
						}
					}
				}
			}
			clock.add(21 * time.Second)
			if r := do(t, "POST", url, h, body); r.status != 200 {
				t.Errorf("after retry-after: %d %s", r.status, r.body)
			}
		})
	}
}

// 50 calls at once, each of its own job, on a tenant's (or a record's) token or cost quota of
// two calls' worth: the calls in flight reserve against the quota as against a job's budget, so
// it is passed by at most one call's use (its max_tokens of output and its input).
func TestTenantQuotaBoundedUnderConcurrency(t *testing.T) {
	const n = 50
	const perCall = 500 // tokens a call uses: 20 in, 480 out
	prices := &Prices{Input: 3, Output: 15}
	callCost := prices.Cost(Usage{InputTokens: 20, OutputTokens: 480})
	for _, q := range []apiv1.Quota{
		{Name: apiv1.QuotaTokensPerDay, Limit: 2 * perCall},
		{Record: "fake", Name: apiv1.QuotaTokensPerMonth, Limit: 2 * perCall},
		{Name: apiv1.QuotaCostPerMonth, Limit: 0.01},
		{Record: "fake", Name: apiv1.QuotaCostPerDay, Limit: 0.01},
		{Record: "fake", Name: apiv1.QuotaTokensPerMinute, Limit: 2 * perCall},
	} {
		for _, face := range Formats {
			for _, held := range []bool{true, false} {
				name := q.Label() + " " + string(face)
				if !held {
					name += " answered as they come"
				}
				t.Run(name, func(t *testing.T) {
					var e *env
					hold, refused := holdAll(n, held, func(w http.ResponseWriter, r *http.Request) { e.fake.ServeHTTP(w, r) })
					e = newEnv(t, `
rules:
  - reply:
      text: "Hello."
      usage: {input_tokens: 20, output_tokens: 480}
`, withUpstream(hold), withRecord(func(r *Record) { r.Prices = prices }),
						// The clock stands still: a minute's bucket does not drain meanwhile.
						withClock(&fakeClock{t: time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)}))
					e.gw.SetQuotas([]apiv1.Quota{q})
					// Each call its own job: only the tenant's quota holds them back.
					statuses, said := burst(t, n, func(i int) (string, map[string]string, string) {
						key := e.issue(fmt.Sprintf("job_%d", i), "a", Limits{}, Budget{})
						url, h := e.anthropicURL()+"/v1/messages", anthHeaders(key)
						body := `{"model":"fake-model","max_tokens":500,"messages":[{"role":"user","content":"hello"}]}`
						if face == OpenAIChat {
							url, h = e.openaiURL()+"/chat/completions", openaiHeaders(key)
							body = `{"model":"fake-model","max_completion_tokens":500,"messages":[{"role":"user","content":"hello"}]}`
						}
						return url, h, body
					}, refused)
					e.gw.Flush()
					var tokens int64
					var cost float64
					for _, c := range e.meter.Calls() {
						tokens += c.Usage.Total()
						cost += c.CostUSD
					}
					t.Logf("%v; %d tokens used, $%.5f", statuses, tokens, cost)
					if statuses[200]+statuses[429] != n || statuses[200] == 0 {
						t.Fatalf("answers: %v", statuses)
					}
					if q.Whole() && float64(tokens) >= q.Limit+perCall {
						t.Errorf("%d tokens used on a quota of %v: over by a call's %d or more", tokens, q.Limit, perCall)
					}
					if !q.Whole() && cost >= q.Limit+callCost {
						t.Errorf("$%f used on a quota of $%v: over by a call's $%f or more", cost, q.Limit, callCost)
					}
					if held && (!strings.Contains(said, q.Label()+" of ") || !strings.Contains(said, "in flight may")) {
						t.Errorf("a refusal says: %s", said)
					}
				})
			}
		}
	}
}

// The tenant's kill switch stops a stream in flight, of any job, as a job's kill does (an error
// event in the provider's shape that both SDKs end the stream with), refuses every later call
// with a 403 that says how to resume, and lets them through again once resumed. A record's kill
// stops that record's calls alone.
func TestTenantKillClosesLiveStream(t *testing.T) {
	long := strings.Repeat("word ", 400)
	e := newEnv(t, `
rules:
  - reply:
      text: "`+long+`"
      stream_delay: 20ms
`)
	for _, face := range Formats {
		for _, record := range []string{"", "fake"} {
			t.Run(fmt.Sprintf("%s record=%q", face, record), func(t *testing.T) {
				job := "job_tkill_" + string(face) + record
				key := e.issue(job, "a", Limits{}, Budget{})
				first, done := e.streamInBackground(face, key)
				select {
				case <-first:
				case <-time.After(liveness):
					t.Fatal("the stream did not start")
				}
				if n := e.gw.KillTenant(record, time.Time{}); n != 1 {
					t.Errorf("KillTenant stopped %d calls, want 1", n)
				}
				var r streamEnd
				select {
				case r = <-done:
				case <-time.After(liveness):
					t.Fatal("the stream did not end after KillTenant")
				}
				if r.err == nil || !strings.Contains(r.err.Error(), "is stopped (oz0 tenant kill") {
					t.Errorf("the client's stream error: %v", r.err)
				}
				if r.n > 20 {
					t.Errorf("the client got %d events: the stream was not cut", r.n)
				}
				calls := e.calls(job, 1)
				if len(calls) != 1 || !calls[0].Aborted || calls[0].AbortReason != AbortKilled {
					t.Errorf("metered %+v", calls)
				}
				// The next call is refused, the key still good: it is the tenant's stop, not the job's.
				label := (apiv1.TenantKill{Record: record}).Label()
				url, _, h := e.faceOf(face, key)
				body := anthBody
				if face == OpenAIChat {
					body = openaiBody
				}
				resp := do(t, "POST", url, h, body)
				_, msg, _ := errorShape(t, face, resp.body)
				if resp.status != 403 || resp.header.Get("X-Should-Retry") != "false" || !strings.Contains(msg, "oz0 tenant resume") {
					t.Errorf("after KillTenant: %d %s", resp.status, resp.body)
				}
				if got := e.calls(job, 2)[1].Refused; got != label {
					t.Errorf("refused %q, want %q", got, label)
				}
				if kills := e.gw.TenantKills(); len(kills) != 1 || kills[0].Record != record {
					t.Errorf("TenantKills %+v", kills)
				}
				// Another record's kill does not stop this one's calls.
				e.gw.ResumeTenant(record)
				e.gw.KillTenant("other", time.Time{})
				if resp := do(t, "POST", url, h, strings.Replace(body, long, "hi", 1)); resp.status != 200 {
					t.Errorf("after ResumeTenant: %d %s", resp.status, resp.body)
				}
				if !e.gw.ResumeTenant("other") || e.gw.ResumeTenant("other") {
					t.Error("ResumeTenant says wrong whether the kill was thrown")
				}
			})
		}
	}
}
