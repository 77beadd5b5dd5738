// Command deny-after-hours is an oz0 plugin hook: it refuses (or has a person approve) the calls
// it sees outside working hours, and leaves the others to the next hook. See README.md.
package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // time zones without the system's zoneinfo

	"github.com/orchestrator-zero/oz0/harnesskit/hook"
)

// Config is the hook's config in hooks.yaml.
type Config struct {
	Timezone string   `json:"timezone"` // an IANA zone such as Europe/Paris; default: the host's
	Open     string   `json:"open"`     // HH:MM-HH:MM; default 09:00-18:00; 22:00-06:00 spans midnight; from == to: never
	Days     []string `json:"days"`     // mon … sun; default mon-fri
	Outside  string   `json:"outside"`  // deny (default) or ask
}

type afterHours struct{ now func() time.Time }

func (h afterHours) Decide(_ context.Context, req hook.Request) (hook.Decision, error) {
	cfg := Config{Open: "09:00-18:00", Days: []string{"mon", "tue", "wed", "thu", "fri"}, Outside: "deny"}
	if err := req.BindConfig(&cfg); err != nil {
		return hook.Decision{}, fmt.Errorf("config: %w", err)
	}
	loc := time.Local
	if cfg.Timezone != "" {
		var err error
		if loc, err = time.LoadLocation(cfg.Timezone); err != nil {
			return hook.Decision{}, fmt.Errorf("config: timezone: %w", err)
		}
	}
	from, to, err := parseWindow(cfg.Open)
	if err != nil {
		return hook.Decision{}, fmt.Errorf("config: open: %w", err)
	}
	now := h.now().In(loc)
	day := strings.ToLower(now.Weekday().String()[:3])
	minute := now.Hour()*60 + now.Minute()
	inWindow := (from <= to && minute >= from && minute < to) || (from > to && (minute >= from || minute < to))
	if slices.Contains(cfg.Days, day) && inWindow {
		return hook.Continue(), nil // working hours: the next hook decides
	}
	why := fmt.Sprintf("%s is not called outside working hours (%s on %s, %s); it is %s there",
		req.Name, cfg.Open, strings.Join(cfg.Days, " "), loc, now.Format("Mon 15:04"))
	if cfg.Outside == "ask" {
		return hook.Ask(why), nil
	}
	return hook.Deny(why), nil
}

// parseWindow parses HH:MM-HH:MM into minutes of the day; 24:00 is the end of the day.
func parseWindow(s string) (from, to int, err error) {
	var h1, m1, h2, m2 int
	if _, err := fmt.Sscanf(s, "%d:%d-%d:%d", &h1, &m1, &h2, &m2); err != nil {
		return 0, 0, fmt.Errorf("%q is not HH:MM-HH:MM", s)
	}
	from, to = h1*60+m1, h2*60+m2
	if h1 < 0 || m1 < 0 || m1 > 59 || h2 < 0 || m2 < 0 || m2 > 59 || from > 24*60 || to > 24*60 {
		return 0, 0, fmt.Errorf("%q is not HH:MM-HH:MM", s)
	}
	return from, to, nil
}

func main() { hook.Serve(afterHours{now: time.Now}) }
