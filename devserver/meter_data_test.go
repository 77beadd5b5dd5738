package devserver

import (
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/gateway"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
)

// A model_call event's data is the map it was once encoded from, keys in order (started_at since).
func TestModelCallData(t *testing.T) {
	for _, c := range []gateway.Call{
		{Record: "fake", Format: gateway.AnthropicMessages, Endpoint: gateway.EndpointMessages, Model: "m", Status: 200,
			Usage:   gateway.Usage{InputTokens: 3, OutputTokens: 4, CacheReadTokens: 5, CacheCreationTokens: 6},
			Latency: 1234567 * time.Nanosecond, TTFB: 999 * time.Microsecond, Streamed: true, Step: 2,
			Start: time.Date(2026, 12, 1, 4, 5, 6, 789_000_000, time.FixedZone("CET", 3600))},
		{Record: "anthropic", Status: 429, Priced: true, Refused: "limits.max_steps", Error: `a <b> & "c"`},
		{Record: "openai", Priced: true, CostUSD: 0.0125, Aborted: true, AbortReason: gateway.AbortClient, Replayed: true},
	} {
		// The map, as the dev server built it before.
		d := map[string]any{
			"record": c.Record, "format": c.Format, "endpoint": c.Endpoint, "model": c.Model,
			"status": c.Status, "input_tokens": c.Usage.InputTokens, "output_tokens": c.Usage.OutputTokens,
			"cache_read_input_tokens": c.Usage.CacheReadTokens, "cache_creation_input_tokens": c.Usage.CacheCreationTokens,
			"latency_ms": float64(c.Latency.Microseconds()) / 1000, "ttfb_ms": float64(c.TTFB.Microseconds()) / 1000,
			"streamed": c.Streamed, "step": c.Step,
		}
		if !c.Start.IsZero() {
			d["started_at"] = c.Start.UTC()
		}
		if c.Priced {
			d["cost_usd"] = c.CostUSD
		}
		if c.Aborted {
			d["aborted"] = c.AbortReason
		}
		if c.Refused != "" {
			d["refused"] = c.Refused
		}
		if c.Error != "" {
			d["error"] = c.Error
		}
		if c.Replayed {
			d["replayed"] = true
		}
		want, _ := jsonutil.Marshal(d)
		got, err := modelCallData(c)
		if err != nil || string(got) != string(want) {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}
