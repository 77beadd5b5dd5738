package store

import (
	"encoding/json"
	"testing"
)

// scanUsage reads what encoding/json reads, or declines, from valid JSON (prepEvent checks it first).
func FuzzScanUsage(f *testing.F) {
	for _, s := range []string{
		`{"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"endpoint":"messages","format":"anthropic-messages","input_tokens":8,"latency_ms":1.15,"model":"m","output_tokens":3,"record":"anthropic","started_at":"2026-12-01T19:02:27.833Z","status":200,"step":101,"streamed":false,"ttfb_ms":1.12}`,
		`{"cost_usd":0.0012,"input_tokens":10,"refused":"limits.max_steps","error":"a \"quoted\" \\ error"}`,
		`{"INPUT_TOKENS":5}`, `{"input_tokens":1.5}`, `{"input_tokens":"7"}`, `{"refused":""}`, `{"refused":null,"input_tokens":null}`,
		`{}`, ` { "input_tokens" : 4 , "output_tokens":2 } `, `{"a":{"input_tokens":9}}`, `[1]`, `{"input_tokens":1}x`, `{"in\u0070ut_tokens":3}`,
		`{"input_tokens":1,"input_tokens":2}`, `{"cost_usd":1e-3}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		u, refused, ok := scanUsage(data)
		if !ok {
			return
		}
		want := modelCallUsageJSON(data)
		if !refused {
			u.calls = 1
		}
		if u != *want {
			t.Fatalf("%q: scanned %+v, encoding/json reads %+v", data, u, *want)
		}
	})
}

// The usage of a metered call as the dev server writes its model_call event.
func BenchmarkModelCallUsage(b *testing.B) {
	data := []byte(`{"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"endpoint":"messages","format":"anthropic-messages","input_tokens":8,"latency_ms":1.15,"model":"m","output_tokens":3,"record":"anthropic","started_at":"2026-12-01T19:02:27.833Z","status":200,"step":101,"streamed":false,"ttfb_ms":1.12}`)
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			modelCallUsage(data)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			modelCallUsageJSON(data)
		}
	})
}
