package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/orchestrator-zero/oz0/api/apiv1"
)

// TenantView reads the tenant's quotas, their use and its kill switches: the dev server.
type TenantView interface {
	Tenant() (apiv1.Tenant, error)
	// TenantUsage is the calendar month's model calls, grouped by record, agent or day.
	TenantUsage(by string) (apiv1.TenantUsage, error)
}

// TenantAdmin changes the tenant's quotas and throws its kill switches: the dev server. Its
// errors wrapping ErrBadQuota are the caller's (400), ErrNoQuota a quota it does not have (404).
type TenantAdmin interface {
	SetQuota(q apiv1.Quota) error
	RemoveQuota(record, name string) error
	KillTenant(record string) (apiv1.TenantKillAnswer, error)
	ResumeTenant(record string) (apiv1.TenantKillAnswer, error)
}

// ErrBadQuota and ErrNoQuota are wrapped by a TenantAdmin's errors.
var (
	ErrBadQuota = errors.New("the quota is refused")
	ErrNoQuota  = errors.New("no such quota")
)

func (b *Backend) tenant(w http.ResponseWriter, r *http.Request) {
	t, err := b.Tenant.Tenant()
	if err != nil {
		writeError(w, http.StatusInternalServerError, apiv1.CodeInternal, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, t)
}

func (b *Backend) tenantUsage(w http.ResponseWriter, r *http.Request) {
	by := r.URL.Query().Get("by")
	if by == "" {
		by = "record"
	}
	if !slices.Contains(apiv1.TenantUsageBy, by) {
		writeError(w, http.StatusBadRequest, apiv1.CodeBadRequest, fmt.Sprintf("by=%s is not a way to group the usage; use one of %s", by, strings.Join(apiv1.TenantUsageBy, ", ")))
		return
	}
	u, err := b.Tenant.TenantUsage(by)
	if err != nil {
		writeError(w, http.StatusInternalServerError, apiv1.CodeInternal, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, u)
}

// quotaError answers a TenantAdmin's error.
func quotaError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrBadQuota):
		status = http.StatusBadRequest
	case errors.Is(err, ErrNoQuota):
		status = http.StatusNotFound
	}
	writeError(w, status, apiv1.CodeBadQuota, err.Error())
}

func (b *Backend) setQuota(w http.ResponseWriter, r *http.Request) {
	var q apiv1.Quota
	if !decodeBody(w, r, maxSmallBody, &q, "a JSON quota", false) {
		return
	}
	if err := q.Check(); err != nil {
		quotaError(w, fmt.Errorf("%w: %w", ErrBadQuota, err))
		return
	}
	if err := b.TenantAdmin.SetQuota(q); err != nil {
		quotaError(w, err)
		return
	}
	b.tenant(w, r)
}

// removeQuota removes the quota {name} of ?record= (none: the tenant's).
func (b *Backend) removeQuota(w http.ResponseWriter, r *http.Request) {
	q := apiv1.Quota{Record: r.URL.Query().Get("record"), Name: r.PathValue("name"), Limit: 1}
	if err := q.Check(); err != nil {
		quotaError(w, fmt.Errorf("%w: %w", ErrBadQuota, err))
		return
	}
	if err := b.TenantAdmin.RemoveQuota(q.Record, q.Name); err != nil {
		quotaError(w, err)
		return
	}
	b.tenant(w, r)
}

func (b *Backend) killTenant(w http.ResponseWriter, r *http.Request) {
	b.tenantSwitch(w, r, b.TenantAdmin.KillTenant)
}

func (b *Backend) resumeTenant(w http.ResponseWriter, r *http.Request) {
	b.tenantSwitch(w, r, b.TenantAdmin.ResumeTenant)
}

func (b *Backend) tenantSwitch(w http.ResponseWriter, r *http.Request, fn func(string) (apiv1.TenantKillAnswer, error)) {
	var body apiv1.TenantKillRequest
	if !decodeBody(w, r, maxSmallBody, &body, "a JSON kill switch", true) {
		return
	}
	if body.Record != "" && !apiv1.ValidRecordName(body.Record) {
		quotaError(w, fmt.Errorf("%w: record %q is not a model record's name; use lowercase letters, digits, - and _, like anthropic", ErrBadQuota, body.Record))
		return
	}
	a, err := fn(body.Record)
	if err != nil {
		quotaError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}
