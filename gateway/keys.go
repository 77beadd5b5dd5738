package gateway

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"sync"
)

// Grant is what a session key stands for: the job and agent of the session, the model record its
// calls go to, and the limits and budget they run under. The gateway never changes a Grant.
type Grant struct {
	Job    string
	Agent  string
	Record Record
	Limits Limits // per session (per key)
	Budget Budget // per job (all its keys together)
	// Recording keeps each call that got an answer, or that the gateway refused after reading
	// its body, as Call.Exchange.
	Recording bool
	// Replay, when set, answers the session's calls from a recording instead of upstream.
	Replay Replay
}

// Limits are an agent's limits, which apply to each session: to the calls made with one key.
// Zero means no limit.
type Limits struct {
	MaxSteps   int     // limits.max_steps: the most model calls
	MaxTokens  int64   // limits.max_tokens: the most tokens (input, cached input and output) in all
	MaxCostUSD float64 // limits.max_cost_usd: the most the calls may cost (priced records only)
}

// Budget is a job's budget, over the calls of all its sessions. Zero means no budget.
type Budget struct {
	Tokens  int64   // budget.tokens: the most tokens (input, cached input and output) in all
	CostUSD float64 // budget.cost_usd: the most the calls may cost (priced records only)
}

// Resolver finds the grant of a session key. Resolve is called on every request, so it must be
// fast and safe for concurrent use; an unknown or revoked key gives ErrUnknownKey.
type Resolver interface {
	Resolve(ctx context.Context, key string) (*Grant, error)
}

// JobRevoker is a Resolver that can revoke every key of a job; Gateway.Kill uses it when the
// Resolver has it.
type JobRevoker interface {
	RevokeJob(job string) int
}

// ErrUnknownKey is a Resolver's answer for a key it does not know, or no longer knows.
var ErrUnknownKey = errors.New("unknown or revoked session key")

// KeyPrefix starts every session key MemResolver issues.
const KeyPrefix = "oz0s_"

// MemResolver is an in-memory Resolver, safe for concurrent use: it issues random keys for
// grants and forgets them when revoked.
type MemResolver struct {
	mu   sync.RWMutex
	keys map[string]*Grant
}

// NewMemResolver returns an empty MemResolver.
func NewMemResolver() *MemResolver {
	return &MemResolver{keys: map[string]*Grant{}}
}

const keyAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// newKey returns KeyPrefix and 40 random base-62 characters (about 238 bits).
func newKey() string {
	var b strings.Builder
	b.Grow(len(KeyPrefix) + 40)
	b.WriteString(KeyPrefix)
	var buf [64]byte
	for b.Len() < len(KeyPrefix)+40 {
		rand.Read(buf[:]) // never fails (crypto/rand panics rather)
		for _, c := range buf {
			if c < 248 && b.Len() < len(KeyPrefix)+40 { // 248 = 4*62: no bias
				b.WriteByte(keyAlphabet[c%62])
			}
		}
	}
	return b.String()
}

// Issue returns a new session key for g.
func (m *MemResolver) Issue(g Grant) string {
	k := newKey()
	gc := g
	m.mu.Lock()
	m.keys[k] = &gc
	m.mu.Unlock()
	return k
}

// Resolve returns the grant of key, or ErrUnknownKey.
func (m *MemResolver) Resolve(_ context.Context, key string) (*Grant, error) {
	m.mu.RLock()
	g := m.keys[key]
	m.mu.RUnlock()
	if g == nil {
		return nil, ErrUnknownKey
	}
	return g, nil
}

// Revoke forgets key; it reports whether the key was known.
func (m *MemResolver) Revoke(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.keys[key]
	delete(m.keys, key)
	return ok
}

// RevokeJob forgets every key of job and returns how many there were.
func (m *MemResolver) RevokeJob(job string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, g := range m.keys {
		if g.Job == job {
			delete(m.keys, k)
			n++
		}
	}
	return n
}
