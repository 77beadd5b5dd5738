// Package tenantfile reads and writes the tenant's configuration in a dev server's state
// directory: its quotas (oz0 tenant quota set). oz0 dev reads the file at its start and writes it
// when the API changes a quota; oz0 tenant quota set writes it itself when no oz0 dev runs. Both
// go through Update, under a lock, and the file is written at once, so neither sees the other's
// half.
package tenantfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/internal/atomicfile"
	"github.com/orchestrator-zero/oz0/internal/filelock"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
)

// FileName is the file's name in the state directory.
const FileName = "tenant.json"

// maxFile bounds what is read of the file: a few quotas take a few hundred bytes.
const maxFile = 1 << 20

// MaxQuotas is the most quotas a tenant has: six a record, of far more records than a tenant
// has, and well within maxFile.
const MaxQuotas = 1000

// ErrTooMany is Set's error past MaxQuotas.
var ErrTooMany = fmt.Errorf("the tenant has %d quotas, the most it may; remove some (oz0 tenant quota rm) first", MaxQuotas)

// Config is the file's content.
type Config struct {
	Quotas []apiv1.Quota `json:"quotas"`
}

// Path is the file in stateDir.
func Path(stateDir string) string { return filepath.Join(stateDir, FileName) }

// Load reads the configuration in stateDir; a missing file is no quota. A file that does not
// read says where and how to mend it.
func Load(stateDir string) (Config, error) {
	path := Path(stateDir)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return Config{}, nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("cannot read %s: %w", path, errors.Unwrap(err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return Config{}, fmt.Errorf("cannot read %s: %w", path, err)
	}
	if len(b) > maxFile {
		return Config{}, fmt.Errorf("%s is over 1 MiB, more than a tenant's quotas take; remove it and set them again with oz0 tenant quota set", path)
	}
	var c Config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("%s does not read (%v); mend it, or remove it and set the quotas again with oz0 tenant quota set", path, err)
	}
	seen := map[string]bool{}
	for _, q := range c.Quotas {
		if err := q.Check(); err != nil {
			return Config{}, fmt.Errorf("%s: %w", path, err)
		}
		if seen[q.Label()] {
			return Config{}, fmt.Errorf("%s: %s is there twice; keep one", path, q.Label())
		}
		seen[q.Label()] = true
	}
	return c, nil
}

// Update changes the configuration in stateDir under a lock (against another process changing
// it meanwhile) and writes it at once; fn gets the quotas as the file holds them.
func Update(stateDir string, fn func(*Config) error) (Config, error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return Config{}, fmt.Errorf("cannot make the state directory %s: %w", stateDir, err)
	}
	unlock, err := filelock.Lock(Path(stateDir) + ".lock")
	if err != nil {
		return Config{}, fmt.Errorf("cannot lock %s: %w", Path(stateDir), err)
	}
	defer unlock()
	c, err := Load(stateDir)
	if err != nil {
		return Config{}, err
	}
	if err := fn(&c); err != nil {
		return Config{}, err
	}
	Sort(c.Quotas)
	if c.Quotas == nil {
		c.Quotas = []apiv1.Quota{}
	}
	var b bytes.Buffer
	enc := jsonutil.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(c); err != nil {
		return Config{}, err
	}
	if err := atomicfile.WriteFile(Path(stateDir), b.Bytes(), 0o600); err != nil {
		return Config{}, fmt.Errorf("cannot write %s: %w", Path(stateDir), err)
	}
	return c, nil
}

// Set puts q in c, in place of the quota of the same label; ErrTooMany when it would be one
// past MaxQuotas.
func (c *Config) Set(q apiv1.Quota) error {
	for i := range c.Quotas {
		if c.Quotas[i].Label() == q.Label() {
			c.Quotas[i] = q
			return nil
		}
	}
	if len(c.Quotas) >= MaxQuotas {
		return ErrTooMany
	}
	c.Quotas = append(c.Quotas, q)
	return nil
}

// Remove takes the quota of name (of record, "" the tenant's) out of c; false when it has none.
func (c *Config) Remove(record, name string) bool {
	n := len(c.Quotas)
	c.Quotas = slices.DeleteFunc(c.Quotas, func(q apiv1.Quota) bool { return q.Record == record && q.Name == name })
	return len(c.Quotas) < n
}

// Sort orders quotas as they are listed: the tenant's first, then by record, each in
// apiv1.QuotaNames' order.
func Sort(qs []apiv1.Quota) {
	slices.SortStableFunc(qs, func(a, b apiv1.Quota) int {
		if c := strings.Compare(a.Record, b.Record); c != 0 {
			return c
		}
		return slices.Index(apiv1.QuotaNames, a.Name) - slices.Index(apiv1.QuotaNames, b.Name)
	})
}
