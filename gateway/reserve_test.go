package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// 50 calls at once on a token or cost limit of two calls' worth: the calls in flight reserve what
// they may use (their max_tokens and their input's estimate), so the limit is passed by at most
// one call's use, and the calls refused are told what the calls in flight may use. The upstream
// holds every answer until each call has arrived or been refused, so all 50 are in flight
// together; then again with the answers as they come, calls ending while others are admitted.
// Before, all 50 were admitted and used 25 times the limit.
func TestLimitsBoundedUnderConcurrency(t *testing.T) {
	const n = 50
	const perCall = 500 // tokens a call uses: 20 in, 480 out
	prices := &Prices{Input: 3, Output: 15}
	callCost := prices.Cost(Usage{InputTokens: 20, OutputTokens: 480})
	for _, tc := range []struct {
		name   string
		lim    Limits
		bud    Budget
		refuse string
	}{
		{"limits.max_tokens", Limits{MaxTokens: 2 * perCall}, Budget{}, "limits.max_tokens of 1000 reached"},
		{"budget.tokens", Limits{}, Budget{Tokens: 2 * perCall}, "budget.tokens of 1000 reached"},
		{"limits.max_cost_usd", Limits{MaxCostUSD: 0.01}, Budget{}, "limits.max_cost_usd of $0.01 reached"},
		{"budget.cost_usd", Limits{}, Budget{CostUSD: 0.01}, "budget.cost_usd of $0.01 reached"},
	} {
		for _, face := range Formats {
			for _, held := range []bool{true, false} {
				name := tc.name + " " + string(face)
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
`, withUpstream(hold), withRecord(func(r *Record) { r.Prices = prices }))
					job := "job_many"
					key := e.issue(job, "a", tc.lim, tc.bud)
					url, h := e.anthropicURL()+"/v1/messages", anthHeaders(key)
					body := `{"model":"fake-model","max_tokens":500,"messages":[{"role":"user","content":"hello"}]}`
					if face == OpenAIChat {
						url, h = e.openaiURL()+"/chat/completions", openaiHeaders(key)
						body = `{"model":"fake-model","max_completion_tokens":500,"messages":[{"role":"user","content":"hello"}]}`
					}
					statuses, said := burst(t, n, func(int) (string, map[string]string, string) { return url, h, body }, refused)
					e.gw.Flush()
					u := e.gw.JobUsage(job)
					t.Logf("%v; %d tokens used, $%.5f", statuses, u.Usage.Total(), u.CostUSD)
					if statuses[200]+statuses[429] != n || statuses[200] == 0 {
						t.Fatalf("answers: %v", statuses)
					}
					// Passed by less than one call's use.
					if tc.lim.MaxTokens+tc.bud.Tokens > 0 && u.Usage.Total() >= tc.lim.MaxTokens+tc.bud.Tokens+perCall {
						t.Errorf("%d tokens used on a limit of %d: over by a call's %d or more", u.Usage.Total(), tc.lim.MaxTokens+tc.bud.Tokens, perCall)
					}
					if tc.lim.MaxCostUSD+tc.bud.CostUSD > 0 && u.CostUSD >= tc.lim.MaxCostUSD+tc.bud.CostUSD+callCost {
						t.Errorf("$%f used on a limit of $%v: over by a call's $%f or more", u.CostUSD, tc.lim.MaxCostUSD+tc.bud.CostUSD, callCost)
					}
					if held && (!strings.Contains(said, tc.refuse) || !strings.Contains(said, "in flight may")) {
						t.Errorf("a refusal says: %s", said)
					}
				})
			}
		}
	}
}

// A request's max_tokens is what it reserves of output: OpenAI's max_completion_tokens before its
// max_tokens; none said reserves defaultMaxOutput. Its input is reserved at about 4 bytes a token.
func TestReservation(t *testing.T) {
	prices := &Prices{Input: 1e6, Output: 2e6} // $1 an input token, $2 an output token
	for _, tc := range []struct {
		face Format
		body string
		out  int64
	}{
		{AnthropicMessages, `{"model":"m","max_tokens":300,"messages":[]}`, 300},
		{OpenAIChat, `{"model":"m","max_tokens":300,"max_completion_tokens":200,"messages":[]}`, 200},
		{OpenAIChat, `{"model":"m","max_completion_tokens":200,"max_tokens":300,"messages":[]}`, 200},
		{OpenAIChat, `{"model":"m","messages":[]}`, defaultMaxOutput},
		{OpenAIChat, `{"model":"m","max_tokens":"lots","messages":[]}`, defaultMaxOutput},
	} {
		_, info := planRequest([]byte(tc.body), tc.face, nil)
		in := int64((len(tc.body) + 3) / 4)
		want := inFlight{calls: 1, tokens: in + tc.out, cost: float64(in) + 2*float64(tc.out)}
		if got := reservation(info, len(tc.body), prices); got != want {
			t.Errorf("%s: reserved %+v, want %+v", tc.body, got, want)
		}
	}
	if got := (inFlight{calls: 2, tokens: 1060, cost: 0.5}).tokensNote(); got != ", and 2 calls in flight may use 1060 more" {
		t.Errorf("tokensNote %q", got)
	}
	f := inFlight{}
	f.add(inFlight{1, 10, 0.1})
	f.add(inFlight{1, 20, 0.2})
	f.sub(inFlight{1, 10, 0.1})
	f.sub(inFlight{1, 20, 0.2})
	if f != (inFlight{}) {
		t.Errorf("after every call ended: %+v", f)
	}
}
