package store

import (
	"encoding/json"
	"testing"
	"time"
)

// The calls the tenant's quotas count are read back from the events, oldest first, with what a
// refused or replayed call is; the kill switches are kept across a reopen.
func TestMeteredCallsAndTenantKills(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Second)
	j := newJob(t, s)
	s.SetStatus(j.ID, StatusRunning, "")
	if _, err := s.AppendBatch(j.ID, []NewEvent{
		{Type: EventModelCall, Data: json.RawMessage(`{"record":"fake","step":1,"input_tokens":100,"output_tokens":20,"cost_usd":0.25}`)},
		{Type: EventModelCall, Data: json.RawMessage(`{"record":"fake","step":2,"status":429,"refused":"tenant.tokens_per_day"}`)},
		{Type: EventModelCall, Data: json.RawMessage(`{"record":"anthropic","step":3,"input_tokens":1,"output_tokens":2,"replayed":true}`)},
		{Type: EventModelCall, Data: json.RawMessage(`{"record":"anthropic","step":0,"input_tokens":7}`)},
		{Type: EventSay, Data: json.RawMessage(`{"text":"not a call"}`)},
	}); err != nil {
		t.Fatal(err)
	}
	calls, err := s.MeteredCalls(before)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 4 {
		t.Fatalf("%d calls: %+v", len(calls), calls)
	}
	c := calls[0]
	if c.Agent != j.Agent || c.Record != "fake" || !c.Step || c.Replayed || c.Usage != (Usage{ModelCalls: 1, InputTokens: 100, OutputTokens: 20, CostUSD: 0.25}) || c.Time.Before(before) {
		t.Errorf("the first call: %+v", c)
	}
	if calls[1].Step || calls[1].Usage.ModelCalls != 0 {
		t.Errorf("a refused call: %+v", calls[1])
	}
	if !calls[2].Replayed || !calls[2].Step {
		t.Errorf("a replayed call: %+v", calls[2])
	}
	if calls[3].Step || calls[3].Usage.InputTokens != 7 {
		t.Errorf("a call that is no step: %+v", calls[3])
	}
	if later, _ := s.MeteredCalls(time.Now().Add(time.Hour)); len(later) != 0 {
		t.Errorf("calls after now: %+v", later)
	}

	at := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	if got, err := s.KillTenant("", at); err != nil || !got.Equal(at) {
		t.Fatalf("KillTenant: %v %v", got, err)
	}
	if got, _ := s.KillTenant("", at.Add(time.Hour)); !got.Equal(at) {
		t.Errorf("thrown again: %v, want the first time", got)
	}
	s.KillTenant("anthropic", at)
	s.Close()
	if s, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	kills, err := s.TenantKills()
	if err != nil || len(kills) != 2 || kills[0] != (TenantKill{"", at}) || kills[1].Record != "anthropic" {
		t.Fatalf("after a reopen: %+v %v", kills, err)
	}
	if ok, err := s.ResumeTenant(""); !ok || err != nil {
		t.Errorf("ResumeTenant: %v %v", ok, err)
	}
	if ok, _ := s.ResumeTenant(""); ok {
		t.Error("resumed twice")
	}
}
