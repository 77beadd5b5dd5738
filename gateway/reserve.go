package gateway

import "fmt"

// Token and cost limits under concurrency. Usage is known only once a call is answered, so a limit
// checked against what calls have used alone admitted every call made at once: 50 parallel calls
// on limits.max_tokens: 1000 were all admitted and used 25 times the limit. So a call is admitted
// against the limit less what the session's (the job's, for a budget) calls in flight may still
// use: each reserves, from its admission to its end, its request's max_tokens of output and its
// input, estimated at bytesPerToken bytes of its body a token (what a call's input tokens are is
// known only from its answer). The call itself is admitted while that sum is below the limit, as
// before, so the limit is passed by at most the use of the last call admitted (its input and its
// max_tokens), give or take what the estimate of the input of the calls in flight missed; the
// calls refused meanwhile are told what the calls in flight may use. A call answered from a
// recording reserves the same: whether it is, and what it costs, is known only at its end.

const (
	// bytesPerToken is the estimate of a request's input tokens: about 4 bytes of its JSON a
	// token, as text tokenizes (base64 images and documents count far fewer tokens than that).
	bytesPerToken = 4
	// defaultMaxOutput is reserved for a call whose request says no max_tokens (OpenAI's
	// max_completion_tokens and max_tokens are optional; a model then writes up to its own
	// maximum).
	defaultMaxOutput = 4096
)

// inFlight is what admitted calls not yet ended may use at most: of a job, of a session, of one
// call.
type inFlight struct {
	calls  int
	tokens int64
	cost   float64
}

func (f *inFlight) add(r inFlight) {
	f.calls, f.tokens, f.cost = f.calls+r.calls, f.tokens+r.tokens, f.cost+r.cost
}

func (f *inFlight) sub(r inFlight) {
	f.calls, f.tokens, f.cost = f.calls-r.calls, f.tokens-r.tokens, f.cost-r.cost
	if f.calls == 0 {
		*f = inFlight{} // no float residue of the sums
	}
}

// reservation is what a call of request info and a body of n bytes may use, priced by prices
// (nil: unpriced).
func reservation(info reqInfo, n int, prices *Prices) inFlight {
	out := info.maxOutput
	if out <= 0 {
		out = defaultMaxOutput
	}
	u := Usage{InputTokens: int64((n + bytesPerToken - 1) / bytesPerToken), OutputTokens: out}
	return inFlight{calls: 1, tokens: u.Total(), cost: prices.Cost(u)}
}

// tokensNote and costNote say what calls in flight may use, after what was used, in a refusal.
func (f inFlight) tokensNote() string {
	if f.calls == 0 {
		return ""
	}
	return fmt.Sprintf(", and %s in flight may use %d more", callsWord(f.calls), f.tokens)
}

func (f inFlight) costNote() string {
	if f.calls == 0 {
		return ""
	}
	return fmt.Sprintf(", and %s in flight may cost $%s more", callsWord(f.calls), fmtUSD(f.cost))
}

func callsWord(n int) string {
	if n == 1 {
		return "1 call"
	}
	return fmt.Sprintf("%d calls", n)
}
