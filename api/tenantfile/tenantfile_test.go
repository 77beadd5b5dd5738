package tenantfile

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/orchestrator-zero/oz0/api/apiv1"
)

func TestUpdateAndLoad(t *testing.T) {
	dir := t.TempDir() + "/state" // made by Update
	if c, err := Load(dir); err != nil || len(c.Quotas) != 0 {
		t.Fatalf("no file: %+v %v", c, err)
	}
	day := apiv1.Quota{Name: apiv1.QuotaTokensPerDay, Limit: 1000}
	rpm := apiv1.Quota{Record: "anthropic", Name: apiv1.QuotaRequestsPerMinute, Limit: 50}
	for _, q := range []apiv1.Quota{rpm, day, {Name: apiv1.QuotaTokensPerDay, Limit: 2000}} {
		if _, err := Update(dir, func(c *Config) error { return c.Set(q) }); err != nil {
			t.Fatal(err)
		}
	}
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The tenant's first; a quota set again replaces the one of its label.
	if len(c.Quotas) != 2 || c.Quotas[0].Limit != 2000 || c.Quotas[1] != rpm {
		t.Errorf("quotas %+v", c.Quotas)
	}
	if st, err := os.Stat(Path(dir)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the file's mode: %v %v", st.Mode(), err)
	}
	if _, err := Update(dir, func(c *Config) error {
		if !c.Remove("anthropic", apiv1.QuotaRequestsPerMinute) || c.Remove("anthropic", apiv1.QuotaRequestsPerMinute) {
			t.Error("Remove says wrong whether it removed")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if c, _ := Load(dir); len(c.Quotas) != 1 {
		t.Errorf("after Remove: %+v", c.Quotas)
	}
}

// Writers in parallel (oz0 dev's API and the CLI) each see the other's quota: none is lost.
func TestUpdateUnderALock(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			q := apiv1.Quota{Record: fmt.Sprintf("r%d", i), Name: apiv1.QuotaTokensPerDay, Limit: 1}
			if _, err := Update(dir, func(c *Config) error { return c.Set(q) }); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if c, err := Load(dir); err != nil || len(c.Quotas) != 20 {
		t.Errorf("%d quotas, want 20: %v", len(c.Quotas), err)
	}
}

// A file that does not read says where and how to mend it, and is not overwritten.
func TestBadFile(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{`{"quotas": [{"name": "tokens_per_day", "limit": 1, "extra": 1}]}`, `unknown field "extra"); mend it, or remove it`},
		{`{"quotas": [{"name": "tokens_per_week", "limit": 1}]}`, `quota "tokens_per_week" is not one oz0 knows`},
		{`{"quotas": [{"name": "tokens_per_day", "limit": 0}]}`, "must be a number above 0"},
		{`{"quotas": [{"name": "tokens_per_day", "limit": 1}, {"name": "tokens_per_day", "limit": 2}]}`, "tenant.tokens_per_day is there twice; keep one"},
		{`not json`, "does not read"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(Path(dir), []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), Path(dir)) {
			t.Errorf("%s: %v, want %q", tc.file, err, tc.want)
		}
		if _, err := Update(dir, func(c *Config) error { return nil }); err == nil {
			t.Errorf("%s: Update wrote over a file that does not read", tc.file)
		}
		if b, _ := os.ReadFile(Path(dir)); string(b) != tc.file {
			t.Errorf("%s: the file was changed to %s", tc.file, b)
		}
	}
}

func TestSetBounded(t *testing.T) {
	var c Config
	for i := range MaxQuotas {
		if err := c.Set(apiv1.Quota{Record: fmt.Sprintf("r%d", i), Name: apiv1.QuotaTokensPerDay, Limit: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Set(apiv1.Quota{Name: apiv1.QuotaTokensPerDay, Limit: 1}); err != ErrTooMany {
		t.Errorf("one past the most: %v", err)
	}
	if err := c.Set(apiv1.Quota{Record: "r0", Name: apiv1.QuotaTokensPerDay, Limit: 2}); err != nil || c.Quotas[0].Limit != 2 {
		t.Errorf("one set again: %v", err)
	}
}
