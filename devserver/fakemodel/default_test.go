package fakemodel

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// The byo-agent template's instructions, the system prompt of its model calls.
func templateInstructions(t *testing.T) string {
	data, err := os.ReadFile("../../scaffold/templates/byo-agent/prompts/__name__.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// legacyPrompt is build_prompt() of the template's legacy.py.
func legacyPrompt(ticket string) string {
	return `Sort this support ticket into one of the teams billing, technical, account, general, and answer with a JSON object with the keys "team" and "reply".` +
		"\n\n<ticket>\n" + strings.TrimSpace(ticket) + "\n</ticket>"
}

func TestFakeModelDefaultScriptTriage(t *testing.T) {
	ts := httptest.NewServer(New(nil))
	defer ts.Close()
	system := templateInstructions(t)
	for _, tc := range []struct{ ticket, team, reply string }{
		{"I was charged twice for my order", "billing", "Sorry about the double charge; we have refunded the second one."},
		{"Please refund my last invoice", "billing", ""},
		{"I forgot my password and cannot log in", "account", ""},
		{"The app shows an error and then crashes", "technical", ""},
		{"Do you have a shop in Lisbon?", "general", ""},
	} {
		for _, prompt := range []string{legacyPrompt(tc.ticket), tc.ticket} {
			p, _ := json.Marshal(prompt)
			s, _ := json.Marshal(system)
			var texts []string
			r := anthropic(t, ts, `{"model":"claude-fake-1","max_tokens":1024,"system":`+string(s)+`,"messages":[{"role":"user","content":`+string(p)+`}]}`)
			texts = append(texts, get(obj(t, r.body), "content", 0, "text").(string))
			r = openai(t, ts, `{"model":"gpt-fake","messages":[{"role":"system","content":`+string(s)+`},{"role":"user","content":`+string(p)+`}]}`)
			texts = append(texts, get(obj(t, r.body), "choices", 0, "message", "content").(string))
			r = anthropic(t, ts, `{"model":"claude-fake-1","max_tokens":1024,"stream":true,"system":`+string(s)+`,"messages":[{"role":"user","content":`+string(p)+`}]}`)
			var streamed strings.Builder
			for _, e := range parseSSE(t, r.body) {
				if e.name == "content_block_delta" {
					streamed.WriteString(get(obj(t, []byte(e.data)), "delta", "text").(string))
				}
			}
			texts = append(texts, streamed.String())
			for _, text := range texts {
				var ans struct{ Team, Reply string }
				if err := json.Unmarshal([]byte(text), &ans); err != nil || ans.Team != tc.team || ans.Reply == "" || (tc.reply != "" && ans.Reply != tc.reply) {
					t.Errorf("%q: %s", prompt, text)
				}
			}
		}
	}
	// The guide's ticket, byte for byte.
	p, _ := json.Marshal(legacyPrompt("I was charged twice for my order"))
	s, _ := json.Marshal(system)
	r := anthropic(t, ts, `{"model":"claude-fake-1","max_tokens":1024,"system":`+string(s)+`,"messages":[{"role":"user","content":`+string(p)+`}]}`)
	if got := get(obj(t, r.body), "content", 0, "text"); got != `{"team":"billing","reply":"Sorry about the double charge; we have refunded the second one."}` {
		t.Errorf("the guide's ticket: %v", got)
	}
}

func TestFakeModelDefaultScriptOthers(t *testing.T) {
	ts := httptest.NewServer(New(nil))
	defer ts.Close()
	for _, tc := range []struct{ body, want string }{
		{`{"model":"m","max_tokens":10,"tools":[{"name":"lookup"}],"messages":[{"role":"user","content":"hi"}]}`, "I can answer this without calling a tool."},
		{`{"model":"m","max_tokens":10,"tools":[{"name":"lookup"}],"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"lookup","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"42"}]}]}`, "Done: the tool has answered."},
		{`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, "This is oz0's built-in fake model."},
	} {
		r := anthropic(t, ts, tc.body)
		if got, _ := get(obj(t, r.body), "content", 0, "text").(string); r.status != 200 || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %d %s", tc.body, r.status, r.body)
		}
	}
	if !strings.Contains(string(DefaultScriptYAML()), "rules:") || DefaultScript().Name != "built-in" || DefaultScript() == DefaultScript() {
		t.Errorf("DefaultScript")
	}
}
