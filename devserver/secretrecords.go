package devserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/devserver/secrets"
	"github.com/orchestrator-zero/oz0/gateway"
)

// provider is a model provider whose record exists once its key is set as a secret.
type provider = gateway.Provider

// providers, in the tenant's order (gateway.Providers).
var providers = gateway.Providers

// fakeSecret is the name under which the gateway finds the fake model's key; not a valid user
// secret name, so it cannot be shadowed.
const fakeSecret = "oz0:fake"

// records is the tenant's provider records: one for each provider whose key is a secret, with an
// upstream base URL the user may override, then the fake. It also fronts the secrets for the API,
// keeping the overrides in providers.json beside them.
type records struct {
	secrets  *secrets.Store
	path     string
	fakeBase string

	defaults map[string]string // secret name → upstream base URL from oz0 dev's environment

	mu        sync.Mutex
	overrides map[string]string // secret name → upstream base URL set with the secret
}

func newRecords(stateDir string, s *secrets.Store, fakeBase string, getenv func(string) string) *records {
	r := &records{secrets: s, path: filepath.Join(stateDir, "providers.json"), fakeBase: fakeBase, overrides: map[string]string{}, defaults: map[string]string{}}
	for _, p := range providers {
		if getenv != nil && getenv(p.Env) != "" {
			r.defaults[p.Secret] = getenv(p.Env)
		}
	}
	if b, err := os.ReadFile(r.path); err == nil {
		_ = json.Unmarshal(b, &r.overrides)
	}
	return r
}

// Records are the records as the secrets are now.
func (r *records) Records() []gateway.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []gateway.Record
	for _, p := range providers {
		if _, err := r.secrets.Get(p.Secret); err != nil {
			continue
		}
		rec := gateway.Record{Name: p.Record, Formats: []gateway.Format{p.Format}, Secret: p.Secret, Model: p.Model}
		if u := r.baseURL(p.Secret); u != "" {
			rec.BaseURLs = map[gateway.Format]string{p.Format: u}
		}
		out = append(out, rec)
	}
	fake := gateway.FakeRecord(r.fakeBase)
	fake.Secret = fakeSecret
	return append(out, fake)
}

// baseURL is a provider's upstream override: the one set with its key, else the environment's.
// r.mu is held.
func (r *records) baseURL(secret string) string {
	if u := r.overrides[secret]; u != "" {
		return u
	}
	return r.defaults[secret]
}

// secret is the gateway's view of the secrets: the tenant's, and the fake model's own key.
func (r *records) secret(fakeKey string) func(context.Context, string) (string, error) {
	return func(_ context.Context, name string) (string, error) {
		if name == fakeSecret {
			return fakeKey, nil
		}
		v, err := r.secrets.Get(name)
		if errors.Is(err, secrets.ErrNotFound) {
			return "", gateway.ErrNoSecret
		}
		return v, err
	}
}

// Set sets a secret; for a provider key, baseURL overrides (or, empty, resets) its upstream.
func (r *records) Set(name, value, baseURL string) error {
	isProvider := false
	for _, p := range providers {
		isProvider = isProvider || p.Secret == name
	}
	if baseURL != "" {
		if !isProvider {
			return fmt.Errorf("%w: --base-url applies to a provider key (ANTHROPIC_API_KEY, OPENAI_API_KEY), not %s", secrets.ErrInvalid, name)
		}
		u, err := url.Parse(baseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%w: --base-url %q is not an http(s) URL", secrets.ErrInvalid, baseURL)
		}
	}
	if err := r.secrets.Set(name, value); err != nil {
		return err
	}
	if !isProvider {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if baseURL == "" {
		delete(r.overrides, name)
	} else {
		r.overrides[name] = baseURL
	}
	return r.saveLocked()
}

// List lists the secrets with the provider overrides.
func (r *records) List() ([]apiv1.SecretMeta, error) {
	list, err := r.secrets.List()
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]apiv1.SecretMeta, len(list))
	for i, m := range list {
		out[i] = apiv1.SecretMeta{Name: m.Name, SetAt: m.SetAt, BaseURL: r.baseURL(m.Name)}
		if p, ok := providerOf(m.Name); ok {
			rec := gateway.Record{BaseURLs: map[gateway.Format]string{p.Format: out[i].BaseURL}}
			out[i].Upstream = rec.BaseURL(p.Format)
		}
	}
	return out, nil
}

// Remove removes a secret and its override.
func (r *records) Remove(name string) error {
	if err := r.secrets.Remove(name); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.overrides[name]; !ok {
		return nil
	}
	delete(r.overrides, name)
	return r.saveLocked()
}

func (r *records) saveLocked() error {
	b, err := json.MarshalIndent(r.overrides, "", "  ")
	if err != nil {
		return err
	}
	tmp := r.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, r.path)
}

// noticedSecrets are the tenant's secrets as the API changes them: a change that moves an agent
// to another model record is said on the dev server's output when it happens, as the banner said
// which record each agent started on, and answered to the client that made it (oz0 secret set
// prints it); so is a provider key that leaves an agent on the fake model, with why.
type noticedSecrets struct{ s *Server }

func (n noticedSecrets) Set(name, value, baseURL string) ([]string, error) {
	return n.changed(name, func() error { return n.s.records.Set(name, value, baseURL) })
}

func (n noticedSecrets) Remove(name string) ([]string, error) {
	return n.changed(name, func() error { return n.s.records.Remove(name) })
}

func (n noticedSecrets) List() ([]apiv1.SecretMeta, error) { return n.s.records.List() }

func (n noticedSecrets) changed(name string, change func() error) ([]string, error) {
	before := map[string]string{}
	for _, a := range n.s.info().Agents {
		before[a.Name] = a.Record
	}
	if err := change(); err != nil {
		return nil, err
	}
	_, isKey := providerOf(name)
	notes := []string{}
	for _, a := range n.s.info().Agents {
		var note string
		switch {
		case before[a.Name] != a.Record:
			note = fmt.Sprintf("agent %s → model record %s (%s), was %s%s", a.Name, a.Record, a.Model, before[a.Name], a.Note)
		case isKey && a.Record == gateway.FakeRecordName:
			note = fmt.Sprintf("agent %s stays on model record %s (%s)%s", a.Name, a.Record, a.Model, a.Note)
		default:
			continue
		}
		n.s.say("%s", strings.Replace(note, "agent ", "agent   ", 1))
		notes = append(notes, note)
	}
	return notes, nil
}

// providerOf is the provider whose key is the secret name.
func providerOf(name string) (provider, bool) {
	for _, p := range providers {
		if p.Secret == name {
			return p, true
		}
	}
	return provider{}, false
}

// recordNote says how an agent came to its record, and how to move it: for the fake model, the
// key of a provider of a format its harness speaks (and, when another provider's key is set,
// why that one does not serve it).
func (s *Server) recordNote(a apiv1.AgentInfo, recs []gateway.Record) string {
	if p, ok := providerByRecord(a.Record); ok {
		return fmt.Sprintf(": the tenant's key (oz0 secret rm %s goes back to the fake model)", p.Secret)
	}
	if a.Record != gateway.FakeRecordName {
		return ""
	}
	scripted := ""
	if s.cfg.FakeScriptFile != "" {
		scripted = ", scripted by " + s.cfg.FakeScriptFile
	}
	var want, set []string
	for _, p := range providers {
		if slices.Contains(a.Formats, string(p.Format)) {
			want = append(want, p.Secret)
		}
		if slices.ContainsFunc(recs, func(r gateway.Record) bool { return r.Name == p.Record }) {
			set = append(set, fmt.Sprintf("%s's record takes %s", p.Secret, p.Format))
		}
	}
	if len(want) == 0 {
		return ": the fake model" + scripted
	}
	mend := "oz0 secret set " + strings.Join(want, " or ")
	if len(set) == 0 {
		return ": the fake model" + scripted + ", as no provider key is set (" + mend + ")"
	}
	return fmt.Sprintf(": the fake model%s, as no key is set for a format its harness speaks (%s); %s (%s)",
		scripted, strings.Join(a.Formats, ", "), strings.Join(set, ", "), mend)
}

// providerByRecord is the provider whose record is named record.
func providerByRecord(record string) (provider, bool) {
	for _, p := range providers {
		if p.Record == record {
			return p, true
		}
	}
	return provider{}, false
}
