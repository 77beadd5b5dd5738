package render

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/api/apiv1"
)

// A call prints as its meter's line and its conversation; text from the model cannot drive the
// terminal (its control characters print as escapes); a call not kept says so.
func TestCalls(t *testing.T) {
	calls := []apiv1.ModelCall{
		{N: 1, Meter: json.RawMessage(`{"record":"anthropic","model":"claude","format":"anthropic-messages","status":200,"step":1,"input_tokens":12,"output_tokens":5,"cost_usd":0.25,"latency_ms":812.5,"streamed":true}`),
			Exchange: json.RawMessage(`{}`),
			Conversation: &apiv1.Conversation{System: "You sort tickets.\n\nBe brief.", Tools: []apiv1.ToolDef{{Name: "notify_team"}},
				Messages: []apiv1.Message{
					{Role: "user", Blocks: []apiv1.Block{{Kind: "text", Text: "charged twice \x1b]0;pwned\x07\x1b[2J"}}},
					{Role: "assistant", Blocks: []apiv1.Block{{Kind: "tool_call", ID: "tu_1", Name: "notify_team", Input: `{"team":"billing"}`}}},
					{Role: "user", Blocks: []apiv1.Block{{Kind: "tool_result", ID: "tu_1", Text: "told\r\nthe team"}}},
				},
				Answer: &apiv1.Answer{Status: 200, Streamed: true, Events: 9, StopReason: "end_turn", Blocks: []apiv1.Block{{Kind: "text", Text: "Done."}}}}},
		{N: 2, Meter: json.RawMessage(`{"record":"anthropic","model":"claude","format":"anthropic-messages","status":429,"refused":"limits.max_tokens","latency_ms":0.2}`),
			Exchange:     json.RawMessage(`{}`),
			Conversation: &apiv1.Conversation{Messages: []apiv1.Message{}, Answer: &apiv1.Answer{Status: 429, Gateway: true, Error: "rate_limit_error: oz0 gateway: limits.max_tokens of 10 reached"}}},
		{N: 3, Meter: json.RawMessage(`{"record":"fake","model":"m","format":"openai-chat","status":200,"step":2,"latency_ms":1}`)},
	}
	var out strings.Builder
	if err := Calls(&out, calls); err != nil {
		t.Fatal(err)
	}
	want := `model call 1 · step 1 · claude (record anthropic) · anthropic-messages · streamed · status 200 · 12 input, 5 output tokens · $0.25 · 812.5 ms
  system:
    You sort tickets.

    Be brief.
  tools offered: notify_team
  user:
    charged twice \x1b]0;pwned\x07\x1b[2J
  assistant:
    → notify_team {"team":"billing"} [tu_1]
  user:
    ← [tu_1]
      told\r
      the team
  answer (streamed, 9 events), stop reason end_turn:
    Done.

model call 2 · claude (record anthropic) · anthropic-messages · status 429 · refused by limits.max_tokens · 0 input, 0 output tokens · 0.2 ms
  answer (the gateway's, not the model's):
    error: rate_limit_error: oz0 gateway: limits.max_tokens of 10 reached

model call 3 · step 2 · m (record fake) · openai-chat · status 200 · 0 input, 0 output tokens · 1 ms
  (not kept: oz0 dev ran with --no-record, or the job with oz0 run --no-record)
`
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}
