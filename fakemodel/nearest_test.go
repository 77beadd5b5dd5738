package fakemodel

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A script as oz0 job script writes it: the recorded requests' texts, exactly, and the job's
// input. A request that changed elsewhere than in the input (the system prompt, here) is not
// blamed on the input (the template wraps the input in its own words: the user message holds it),
// and shows what differs from the nearest rule as a diff.
func TestNoMatchOfARecordedScriptShowsTheDiff(t *testing.T) {
	exactly := func(s string) string { return strconv.Quote("^" + regexp.QuoteMeta(s) + "$") }
	_, ts := serve(t, `
input: refund
rules:
  - name: call-1
    match:
      user: `+exactly("Sort this support ticket.\n\n<ticket>refund</ticket>")+`
      system: `+exactly("You sort support tickets for a customer support desk.\n\nRead the support ticket.")+`
      tools: false
      tool_result: false
    reply: {text: billing}
`)
	ask := func(system, user string) string {
		t.Helper()
		r := openai(t, ts, `{"model":"gpt-fake","messages":[{"role":"system","content":`+quote(system)+`},{"role":"user","content":`+quote(user)+`}]}`)
		if r.status != 400 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		return get(obj(t, r.body), "error", "message").(string)
	}
	msg := ask("You sort support tickets for a help desk.\n\nRead the support ticket.", "Sort this support ticket.\n\n<ticket>refund</ticket>")
	want := "the request differs from rule \"call-1\", the nearest:\n  system:\n    - You sort support tickets for a customer support desk.\n    + You sort support tickets for a help desk.\n"
	if strings.Contains(msg, "The script answers the input") || !strings.HasSuffix(msg+"\n", want) {
		t.Errorf("a changed system prompt:\n%s\nwant it to end with\n%s", msg, want)
	}
	msg = ask("You sort support tickets for a customer support desk.\n\nRead the support ticket.", "Sort this support ticket.\n\n<ticket>login</ticket>")
	if !strings.Contains(msg, `The script answers the input "refund": run with that input`) || !strings.HasSuffix(msg, "  user:\n    - <ticket>refund</ticket>\n    + <ticket>login</ticket>") {
		t.Errorf("another input:\n%s", msg)
	}
}

func quote(s string) string {
	b := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
	return `"` + b + `"`
}

func TestLiteral(t *testing.T) {
	for _, c := range []struct {
		re   string
		want string
		ok   bool
	}{
		{"^" + regexp.QuoteMeta(`a.b\c$d (e)`) + "$", `a.b\c$d (e)`, true},
		{`^a.b$`, "", false},
		{`^ab\$`, "", false},
		{`ab`, "", false},
		{`^(?i)ab$`, "", false},
	} {
		got, ok := literal(regexp.MustCompile(c.re))
		if ok != c.ok || ok && got != c.want {
			t.Errorf("literal(%s) = %q, %v", c.re, got, ok)
		}
	}
}
