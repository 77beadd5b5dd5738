package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/harnesskit/hook"
)

func TestDecide(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) func() time.Time {
		tm, err := time.ParseInLocation("2006-01-02 15:04", s, paris)
		if err != nil {
			t.Fatal(err)
		}
		return func() time.Time { return tm }
	}
	cases := []struct {
		name, now, config string
		want              hook.Verdict
	}{
		{"weekday in hours", "2026-03-04 10:00", `{"timezone":"Europe/Paris"}`, hook.VerdictContinue},
		{"weekday after hours", "2026-03-04 18:00", `{"timezone":"Europe/Paris"}`, hook.VerdictDeny},
		{"weekday before hours", "2026-03-04 08:59", `{"timezone":"Europe/Paris"}`, hook.VerdictDeny},
		{"saturday", "2026-03-07 11:00", `{"timezone":"Europe/Paris"}`, hook.VerdictDeny},
		{"ask outside", "2026-03-07 11:00", `{"timezone":"Europe/Paris","outside":"ask"}`, hook.VerdictAsk},
		{"night shift", "2026-03-04 23:30", `{"timezone":"Europe/Paris","open":"22:00-06:00"}`, hook.VerdictContinue},
		{"night shift day", "2026-03-04 12:00", `{"timezone":"Europe/Paris","open":"22:00-06:00"}`, hook.VerdictDeny},
		{"never open", "2026-03-04 12:00", `{"timezone":"Europe/Paris","open":"00:00-00:00"}`, hook.VerdictDeny},
		{"always open", "2026-03-08 03:00", `{"timezone":"Europe/Paris","open":"00:00-24:00","days":["mon","tue","wed","thu","fri","sat","sun"]}`, hook.VerdictContinue},
		{"other zone", "2026-03-04 10:00", `{"timezone":"America/New_York"}`, hook.VerdictDeny}, // 04:00 there
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := hook.Request{Name: "acme-triage.notify_team", Arguments: json.RawMessage(`{}`), Config: json.RawMessage(c.config)}
			d, err := afterHours{now: at(c.now)}.Decide(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if d.Verdict != c.want {
				t.Fatalf("got %+v, want %s", d, c.want)
			}
			if d.Verdict == hook.VerdictDeny && !strings.Contains(d.Reason, "acme-triage.notify_team is not called outside working hours") {
				t.Errorf("reason %q", d.Reason)
			}
		})
	}
}

func TestBadConfig(t *testing.T) {
	for _, cfg := range []string{`{"timezone":"Mars/Olympus"}`, `{"open":"9-18"}`, `{"open":"09:00-25:00"}`, `{"days":"mon"}`} {
		req := hook.Request{Name: "a.b", Config: json.RawMessage(cfg)}
		if _, err := (afterHours{now: time.Now}).Decide(context.Background(), req); err == nil {
			t.Errorf("%s: no error", cfg)
		}
	}
}
