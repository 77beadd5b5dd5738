package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/orchestrator-zero/oz0/plugin"
)

// Format is a model API, as a harness lists it in its formats.
type Format string

// The formats the gateway serves, named as the harness protocol names them.
const (
	AnthropicMessages Format = plugin.FormatAnthropicMessages // Anthropic's Messages API
	OpenAIChat        Format = plugin.FormatOpenAIChat        // OpenAI's Chat Completions API
)

// Formats lists every format the gateway serves.
var Formats = []Format{AnthropicMessages, OpenAIChat}

// The providers' own base URLs, with the meaning of ANTHROPIC_BASE_URL and OPENAI_BASE_URL: the
// gateway appends /v1/messages to an Anthropic base and /chat/completions to an OpenAI base.
const (
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
)

// Record is one of a tenant's provider records: where a format's calls go and with which key.
type Record struct {
	// Name is how jobs, logs and meters name the record, and what model: {use: NAME} picks.
	Name string
	// Formats are the model APIs the record takes (the dev fake record takes both).
	Formats []Format
	// BaseURLs is the upstream base URL per format, as the provider's SDK would take it in
	// ANTHROPIC_BASE_URL or OPENAI_BASE_URL; a format without one goes to the provider's own
	// (DefaultAnthropicBaseURL, DefaultOpenAIBaseURL).
	BaseURLs map[Format]string
	// Secret is the name of the secret holding the tenant's provider key, looked up through
	// Secrets on every call; "" sends no key (the fake).
	Secret string
	// Model is the model a session is told to use when its agent names none; "" for none.
	Model string
	// Models maps a requested model name to the upstream's; a name not in it goes unchanged.
	Models map[string]string
	// Prices, when set, prices every call the record serves; nil: calls are not priced.
	Prices *Prices
}

// Takes reports whether the record takes format f.
func (r *Record) Takes(f Format) bool {
	for _, g := range r.Formats {
		if g == f {
			return true
		}
	}
	return false
}

// BaseURL is the upstream base URL of format f, without a trailing slash.
func (r *Record) BaseURL(f Format) string {
	u := r.BaseURLs[f]
	if u == "" {
		switch f {
		case AnthropicMessages:
			u = DefaultAnthropicBaseURL
		case OpenAIChat:
			u = DefaultOpenAIBaseURL
		}
	}
	return strings.TrimRight(u, "/")
}

// Prices is a record's price table, in US dollars per million tokens. There is no built-in list:
// a tenant states its own.
type Prices struct {
	Input      float64 `json:"input" yaml:"input"`             // input tokens not read from or written to the cache
	Output     float64 `json:"output" yaml:"output"`           // output tokens
	CacheRead  float64 `json:"cache_read" yaml:"cache_read"`   // input tokens read from the prompt cache
	CacheWrite float64 `json:"cache_write" yaml:"cache_write"` // input tokens written to the prompt cache
}

// Cost is the price of usage u, in US dollars.
func (p *Prices) Cost(u Usage) float64 {
	if p == nil {
		return 0
	}
	return (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
		float64(u.CacheReadTokens)*p.CacheRead + float64(u.CacheCreationTokens)*p.CacheWrite) / 1e6
}

// FakeRecordName is the name of the fake model's record.
const FakeRecordName = "fake"

// Provider is a model provider whose record a tenant of oz0 dev has once its key is set as a
// secret.
type Provider struct {
	Record string
	Secret string
	Env    string // the variable of oz0 dev's environment that overrides the upstream by default
	Format Format
	Model  string // the model a session is told to use when its agent names none
}

// Providers, in the tenant's order: `model: {use: default}` picks the first that takes a format
// the harness speaks, and the fake record comes after them, so a set key wins over the fake.
var Providers = []Provider{
	{Record: "anthropic", Secret: "ANTHROPIC_API_KEY", Env: "OZ0_ANTHROPIC_BASE_URL", Format: AnthropicMessages, Model: "claude-sonnet-4-5"},
	{Record: "openai", Secret: "OPENAI_API_KEY", Env: "OZ0_OPENAI_BASE_URL", Format: OpenAIChat, Model: "gpt-4.1-mini"},
}

// KnownUses are the names an agent's model.use may give: the alias default and the records a
// tenant may have (a provider's once its key is set, and the fake).
func KnownUses() []string {
	uses := []string{DefaultUse}
	for _, p := range Providers {
		uses = append(uses, p.Record)
	}
	return append(uses, FakeRecordName)
}

// FakeRecord is the dev record of the fake model API served at baseURL (as its doc says:
// ANTHROPIC_BASE_URL=baseURL, OPENAI_BASE_URL=baseURL/v1): both formats, no key, model fake-model.
func FakeRecord(baseURL string) Record {
	baseURL = strings.TrimRight(baseURL, "/")
	return Record{
		Name:     FakeRecordName,
		Formats:  []Format{AnthropicMessages, OpenAIChat},
		BaseURLs: map[Format]string{AnthropicMessages: baseURL, OpenAIChat: baseURL + "/v1"},
		Model:    "fake-model",
	}
}

// DefaultUse is the model alias that picks the first record taking one of the harness's formats.
const DefaultUse = "default"

// ResolveModel resolves an agent's model: {use: use} against the tenant's records, in the
// tenant's order, for a harness that speaks formats (in its order of preference). use "" or
// "default" picks the first record that takes one of the formats; any other use names a record,
// which must take one of them. It returns the record and the format the session speaks to it:
// the harness's first format that the record takes.
//
// Its errors wrap ErrNoModel: the agent, as written, has no record on this tenant.
func ResolveModel(records []Record, use string, formats []Format) (*Record, Format, error) {
	if len(formats) == 0 {
		return nil, "", noModel("the harness lists no formats; it needs anthropic-messages or openai-chat")
	}
	pick := func(r *Record) (Format, bool) {
		for _, f := range formats {
			if r.Takes(f) {
				return f, true
			}
		}
		return "", false
	}
	if use == "" || use == DefaultUse {
		for i := range records {
			if f, ok := pick(&records[i]); ok {
				return &records[i], f, nil
			}
		}
		return nil, "", noModel("model: {use: default}: no provider record takes %s (records: %s)", formatList(formats), recordList(records))
	}
	for i := range records {
		if records[i].Name != use {
			continue
		}
		if f, ok := pick(&records[i]); ok {
			return &records[i], f, nil
		}
		return nil, "", noModel("model: {use: %s}: the record %s takes %s, and the harness speaks %s",
			use, use, formatList(records[i].Formats), formatList(formats))
	}
	for _, p := range Providers {
		if p.Record == use {
			return nil, "", noModel("model: {use: %s}: the record %s is the tenant's once its key is set (oz0 secret set %s); its records now: %s",
				use, use, p.Secret, recordList(records))
		}
	}
	return nil, "", noModel("model: {use: %s}: there is no model record or alias %s (the alias: %s; the records: %s)",
		use, use, DefaultUse, strings.Join(Uses(records)[1:], ", "))
}

// Uses are the names an agent's model.use may give on a tenant with records: KnownUses, and any
// record of the tenant's besides.
func Uses(records []Record) []string {
	uses := KnownUses()
	for _, r := range records {
		if !slices.Contains(uses, r.Name) {
			uses = append(uses, r.Name)
		}
	}
	return uses
}

// ErrNoModel is why a job of an agent is not made: its model resolves to no record of the tenant.
// ResolveModel's errors are it (errors.Is), each saying why.
var ErrNoModel = errors.New("the agent's model resolves to no record")

type modelError struct{ msg string }

func (e *modelError) Error() string        { return e.msg }
func (e *modelError) Is(target error) bool { return target == ErrNoModel }

func noModel(format string, args ...any) error { return &modelError{fmt.Sprintf(format, args...)} }

func formatList(fs []Format) string {
	if len(fs) == 0 {
		return "no format"
	}
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(f)
	}
	return strings.Join(s, ", ")
}

func recordList(rs []Record) string {
	if len(rs) == 0 {
		return "none"
	}
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.Name
	}
	return strings.Join(s, ", ")
}

// Secrets gives the tenant's secrets by name. The gateway asks on every call, so a rotated key
// is used at once.
type Secrets interface {
	Secret(ctx context.Context, name string) (string, error)
}

// ErrNoSecret is what a Secrets gives for a secret that is not set.
var ErrNoSecret = errors.New("secret not set")

// SecretsFunc is Secrets that is a function, e.g. over the dev server's secret store:
//
//	gateway.SecretsFunc(func(_ context.Context, name string) (string, error) { return store.Get(name) })
type SecretsFunc func(ctx context.Context, name string) (string, error)

// Secret calls f.
func (f SecretsFunc) Secret(ctx context.Context, name string) (string, error) { return f(ctx, name) }

// MapSecrets is Secrets from a fixed map.
type MapSecrets map[string]string

// Secret returns the value of name, or ErrNoSecret.
func (m MapSecrets) Secret(_ context.Context, name string) (string, error) {
	if v, ok := m[name]; ok && v != "" {
		return v, nil
	}
	return "", ErrNoSecret
}
