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
	data, err := os.ReadFile("../scaffold/templates/byo-agent/prompts/__name__.md")
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
	for _, tc := range []struct {
		name                string
		ticket, team, reply string
	}{
		{"double charge", "I was charged twice for my order", "billing", "Sorry about the double charge; we have refunded the second one."},
		{"refund", "Please refund my last invoice", "billing", ""},
		{"password", "I forgot my password and cannot log in", "account", ""},
		{"crash", "The app shows an error and then crashes", "technical", ""},
		{"general", "Do you have a shop in Lisbon?", "general", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
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
		})
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
	for _, tc := range []struct {
		name       string
		body, want string
	}{
		{"after a refused tool", `{"model":"m","max_tokens":10,"tools":[{"name":"lookup"}],"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"lookup","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"refused: billing is told by a person"}]}]}`, "The tool answered: refused: billing is told by a person"},
		{"plain", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, "This is oz0's built-in fake model."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := anthropic(t, ts, tc.body)
			if got, _ := get(obj(t, r.body), "content", 0, "text").(string); r.status != 200 || !strings.HasPrefix(got, tc.want) {
				t.Errorf("%s: %d %s", tc.body, r.status, r.body)
			}
		})
	}
	// Tools offered: the answer calls the first, with arguments its schema takes, in either API.
	r := anthropic(t, ts, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tools":[`+
		`{"name":"lookup_order","input_schema":{"type":"object","properties":{"order_id":{"type":"string"},"detail":{"type":"boolean"},"region":{"enum":["eu","us"]},"n":{"type":"integer","default":3}},"required":["order_id","region","n"]}},`+
		`{"name":"other","input_schema":{"type":"object"}}]}`)
	block := obj(t, r.body)
	if get(block, "stop_reason") != "tool_use" || get(block, "content", 0, "name") != "lookup_order" {
		t.Fatalf("anthropic: %s", r.body)
	}
	if in, _ := json.Marshal(get(block, "content", 0, "input")); string(in) != `{"n":3,"order_id":"example order_id","region":"eu"}` {
		t.Errorf("arguments %s", in)
	}
	r = openai(t, ts, `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"notify_team","parameters":{"type":"object","properties":{"team":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}}}}}]}`)
	call := get(obj(t, r.body), "choices", 0, "message", "tool_calls", 0, "function")
	if m, _ := call.(map[string]any); m["name"] != "notify_team" || m["arguments"] != `{"tags":["example tags"],"team":"example team"}` {
		t.Errorf("openai: %s", r.body)
	}
	// Offered none: a text that says so, not a call of nothing.
	s, err := ParseScript("s.yaml", []byte("rules: [{reply: {call_offered_tool: true}}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	ts2 := httptest.NewServer(New(s))
	defer ts2.Close()
	r = anthropic(t, ts2, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
	if got := get(obj(t, r.body), "content", 0, "text"); got != "(The script calls an offered tool, and the request offers none.)" {
		t.Errorf("none offered: %s", r.body)
	}
	if !strings.Contains(string(DefaultScriptYAML()), "rules:") || DefaultScript().Name != "built-in" || DefaultScript() == DefaultScript() {
		t.Errorf("DefaultScript")
	}
}
