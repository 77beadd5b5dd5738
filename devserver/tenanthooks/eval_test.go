package tenanthooks

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func mustParse(t *testing.T, doc string) *Set {
	t.Helper()
	s, err := Parse(t.TempDir()+"/hooks.yaml", []byte(doc))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func call(harness, tool, args string) Call {
	return Call{Job: "job_1", Agent: "triage", Harness: harness, Tool: tool, Arguments: json.RawMessage(args)}
}

func eval(s *Set, c Call) Result { return s.Evaluate(context.Background(), c) }

func TestGlob(t *testing.T) {
	cases := []struct {
		name string
		glob string
		yes  []string
		no   []string
	}{
		{"exact", "acme-triage.notify_team", []string{"acme-triage.notify_team"}, []string{"acme-triage.notify_teams", "xacme-triage.notify_team", "acme-triage.notify"}},
		{"any harness", "*.notify_team", []string{"acme-triage.notify_team", "a.notify_team", ".notify_team"}, []string{"acme-triage.notify_teams", "acme-triage.lookup"}},
		{"any tool", "acme-triage.*", []string{"acme-triage.notify_team", "acme-triage."}, []string{"acme.notify_team", "acme-triage2.x"}},
		{"tool prefix", "acme-triage.notify_*", []string{"acme-triage.notify_team", "acme-triage.notify_"}, []string{"acme-triage.lookup"}},
		{"everything", "*", []string{"a.b", "anything"}, nil},
		{"one character", "a?c.x", []string{"abc.x", "a-c.x"}, []string{"ac.x", "abbc.x"}},
		{"class", "a.[lt]ookup", []string{"a.lookup", "a.tookup"}, []string{"a.cookup"}},
		{"negated class", "a.[!l]ookup", []string{"a.tookup"}, []string{"a.lookup"}},
		{"range", "a.[a-c]x", []string{"a.ax", "a.bx", "a.cx"}, []string{"a.dx", "a.-x"}},
		{"dash in class", "a.[-x]", []string{"a.-", "a.x"}, []string{"a.y"}},
		{"escaped star", `a.\*`, []string{"a.*"}, []string{"a.b"}},
		{"regexp characters are literal", "a.b+c", []string{"a.b+c"}, []string{"a.bbc"}},
		{"double star", "**.x", []string{"a.x"}, []string{"a.y"}},
		{"case-sensitive", "A.x", []string{"A.x"}, []string{"a.x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			re, err := compileGlob(c.glob)
			if err != nil {
				t.Errorf("%s: %v", c.glob, err)
				return
			}
			for _, s := range c.yes {
				if !re.MatchString(s) {
					t.Errorf("%s does not match %s", c.glob, s)
				}
			}
			for _, s := range c.no {
				if re.MatchString(s) {
					t.Errorf("%s matches %s", c.glob, s)
				}
			}
		})
	}
	for _, bad := range []string{"a.[", "a.[]", "a.]", `a.\`, "a.[z-a]", `a.[\`} {
		if _, err := compileGlob(bad); err == nil {
			t.Errorf("%q compiles", bad)
		}
	}
}

func TestMatchOnQualifiedName(t *testing.T) {
	s := mustParse(t, `
hooks:
  - name: deny-notify
    match: "*.notify_team"
    decide: deny
  - name: ask-acme
    match: ["other.*", "acme-triage.*"]
    decide: ask
`)
	if r := eval(s, call("acme-triage", "notify_team", `{}`)); r.Decision != Deny || r.By != "hook:deny-notify" {
		t.Errorf("notify_team: %+v", r)
	}
	if r := eval(s, call("acme-triage", "lookup", `{}`)); r.Decision != Ask || r.By != "hook:ask-acme" || r.Reason != "hook ask-acme asks a person" {
		t.Errorf("lookup: %+v", r)
	}
	r := eval(s, call("billing", "lookup", `{"a":1}`))
	if r.Decision != Allow || r.By != ByDefault || len(r.Trail) != 0 || string(r.Arguments) != `{"a":1}` || r.Changed {
		t.Errorf("default: %+v", r)
	}
}

func TestConditions(t *testing.T) {
	s := mustParse(t, `
hooks:
  - name: exec-by-person
    match: "acme-triage.notify_*"
    when: {arguments: {team: "^(legal|exec)$"}}
    decide: deny
    reason: "the exec team is told by a person, not an agent"
  - name: vip
    match: "*.notify_team"
    when: {arguments: {customer.tier: "^vip$", "recipients.0": "@boss\\.example$"}}
    decide: ask
  - name: only-triage-agent
    match: "*.refund"
    unless: {agent: "^triage$"}
    decide: deny
  - name: big-refund
    match: "*.refund"
    when: {arguments: {amount: "^[0-9]{4,}$"}, job: "^job_"}
    decide: ask
  - name: flags
    match: "*.flag"
    when: {arguments: {urgent: "^true$", note: "^null$", tags: "\"x\""}}
    decide: deny
`)
	cases := []struct {
		name string
		c    Call
		want Decision
		by   string
	}{
		{"exec team denied", call("acme-triage", "notify_team", `{"team":"exec"}`), Deny, "hook:exec-by-person"},
		{"executive is not exec", call("acme-triage", "notify_team", `{"team":"executive"}`), Allow, ByDefault},
		{"billing allowed", call("acme-triage", "notify_team", `{"team":"billing"}`), Allow, ByDefault},
		{"absent argument", call("acme-triage", "notify_team", `{}`), Allow, ByDefault}, // absent: no match
		{"vip with a boss recipient", call("acme-triage", "notify_team", `{"customer":{"tier":"vip"},"recipients":["ceo@boss.example"]}`), Ask, "hook:vip"},
		{"vip without recipients", call("acme-triage", "notify_team", `{"customer":{"tier":"vip"},"recipients":[]}`), Allow, ByDefault},
		{"customer not an object", call("acme-triage", "notify_team", `{"customer":"vip","recipients":["ceo@boss.example"]}`), Allow, ByDefault},
		{"literal dotted keys", call("acme-triage", "notify_team", `{"customer.tier":"vip","recipients.0":"x@boss.example"}`), Ask, "hook:vip"}, // a literal key wins
		{"refund by another agent", Call{Agent: "other", Harness: "h", Tool: "refund", Arguments: json.RawMessage(`{}`)}, Deny, "hook:only-triage-agent"},
		{"big refund asked", Call{Job: "job_1", Agent: "triage", Harness: "h", Tool: "refund", Arguments: json.RawMessage(`{"amount":15000}`)}, Ask, "hook:big-refund"},
		{"small refund", Call{Job: "job_1", Agent: "triage", Harness: "h", Tool: "refund", Arguments: json.RawMessage(`{"amount":150}`)}, Allow, ByDefault},
		{"big refund of another job", Call{Job: "x", Agent: "triage", Harness: "h", Tool: "refund", Arguments: json.RawMessage(`{"amount":15000}`)}, Allow, ByDefault},
		{"flags typed", call("h", "flag", `{"urgent":true,"note":null,"tags":["x"]}`), Deny, "hook:flags"},
		{"flags as strings", call("h", "flag", `{"urgent":"true","note":null,"tags":["x"]}`), Deny, "hook:flags"},
		{"flags not matching", call("h", "flag", `{"urgent":false,"note":null,"tags":["x"]}`), Allow, ByDefault},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := eval(s, c.c)
			if r.Decision != c.want || r.By != c.by {
				t.Errorf("%d %s %s: got %s by %s, want %s by %s", i, c.c.Name(), c.c.Arguments, r.Decision, r.By, c.want, c.by)
			}
		})
	}
	r := eval(s, call("acme-triage", "notify_team", `{"team":"legal"}`))
	if r.Reason != "the exec team is told by a person, not an agent" {
		t.Errorf("reason %q", r.Reason)
	}
}

func TestOrderAndFirstDecisiveWins(t *testing.T) {
	s := mustParse(t, `
hooks:
  - name: note
    match: "*"
    decide: continue
    reason: "seen"
  - name: allow-lookup
    match: "*.lookup"
    decide: allow
  - name: deny-all
    match: "*"
    decide: deny
  - name: never-reached
    match: "*"
    decide: allow
`)
	r := eval(s, call("a", "lookup", `{}`))
	if r.Decision != Allow || r.By != "hook:allow-lookup" || len(r.Trail) != 2 || r.Trail[0].Decision != Continue || r.Trail[0].Reason != "seen" {
		t.Errorf("lookup: %+v", r)
	}
	r = eval(s, call("a", "notify", `{}`))
	if r.Decision != Deny || r.By != "hook:deny-all" || r.Reason != "denied by hook deny-all" {
		t.Errorf("notify: %+v", r)
	}
	var names []string
	for _, st := range r.Trail {
		names = append(names, st.Hook)
	}
	if strings.Join(names, ",") != "note,deny-all" {
		t.Errorf("trail %v", names)
	}
}

func TestChange(t *testing.T) {
	s := mustParse(t, `
hooks:
  - name: redact
    match: "*.notify_team"
    decide: change
    reason: "no summaries leave the tenant"
    arguments: {merge: {summary: "[redacted]", meta: {by: oz0, drop: null}, debug: null, n: 3}}
  - name: exec-is-asked
    match: "*.notify_team"
    when: {arguments: {summary: "^\\[redacted\\]$", team: "^exec$"}}
    decide: ask
  - name: page
    match: "*.page"
    decide: change
    arguments: {replace: {who: oncall, big: 12345678901234567890}}
  - name: merge-into-string
    match: "*.bad"
    decide: change
    arguments: {merge: {customer: {tier: redacted}}}
  - name: after-bad
    match: "*.bad"
    decide: allow
`)
	asked := `{"summary":"secret stuff","team":"billing","meta":{"drop":1,"keep":true},"debug":true}`
	r := eval(s, call("acme-triage", "notify_team", asked))
	if r.Decision != Allow || r.By != ByDefault || !r.Changed || string(r.Asked) != asked {
		t.Fatalf("redact: %+v", r)
	}
	want := `{"meta":{"by":"oz0","keep":true},"n":3,"summary":"[redacted]","team":"billing"}`
	if string(r.Arguments) != want {
		t.Errorf("arguments %s, want %s", r.Arguments, want)
	}
	if len(r.Trail) != 1 || r.Trail[0].Decision != Change || string(r.Trail[0].Arguments) != want || r.Trail[0].Reason != "no summaries leave the tenant" {
		t.Errorf("trail %+v", r.Trail)
	}

	// Later hooks see the changed call.
	r = eval(s, call("acme-triage", "notify_team", `{"summary":"x","team":"exec"}`))
	if r.Decision != Ask || r.By != "hook:exec-is-asked" || !r.Changed || len(r.Trail) != 2 {
		t.Errorf("exec: %+v", r)
	}
	if string(r.Arguments) != `{"meta":{"by":"oz0"},"n":3,"summary":"[redacted]","team":"exec"}` {
		t.Errorf("exec arguments %s", r.Arguments)
	}

	// A change to what was asked already is no change.
	same := `{"meta":{"by":"oz0"},"n":3,"summary":"[redacted]"}`
	r = eval(s, call("acme-triage", "notify_team", same))
	if r.Changed || string(r.Arguments) != same || r.Asked != nil || len(r.Trail) != 1 {
		t.Errorf("same: %+v", r)
	}

	// replace, big numbers kept exactly.
	r = eval(s, call("x", "page", `{"who":"me","extra":1}`))
	if !r.Changed || string(r.Arguments) != `{"big":12345678901234567890,"who":"oncall"}` {
		t.Errorf("replace: %+v %s", r, r.Arguments)
	}

	// A merge into a non-object fails closed and names the hook.
	r = eval(s, call("x", "bad", `{"customer":"bob"}`))
	if r.Decision != Deny || r.By != "hook:merge-into-string" || !strings.Contains(r.Reason, "hook merge-into-string failed") ||
		!strings.Contains(r.Reason, "cannot merge a mapping into argument `customer`: it is a string") {
		t.Errorf("bad merge: %+v", r)
	}
	if len(r.Trail) != 1 || r.Trail[0].Error == "" || r.Trail[0].Decision != Deny {
		t.Errorf("bad merge trail: %+v", r.Trail)
	}
	// ... but into an absent or null key it makes the object.
	for _, a := range []string{`{}`, `{"customer":null}`, `{"customer":{"name":"bob"}}`} {
		r = eval(s, call("x", "bad", a))
		if r.Decision != Allow || r.By != "hook:after-bad" || !strings.Contains(string(r.Arguments), `"tier":"redacted"`) {
			t.Errorf("merge into %s: %+v %s", a, r, r.Arguments)
		}
	}
}

func TestMalformedArguments(t *testing.T) {
	s := mustParse(t, "hooks: [{name: a, match: '*', decide: allow}]")
	for _, a := range []string{`[1]`, `"x"`, `{"a":`, `null`, `{} {}`} {
		r := eval(s, call("h", "t", a))
		if r.Decision != Deny || r.By != ByHooks {
			t.Errorf("%s: %+v", a, r)
		}
	}
	for _, a := range []string{``, `  `} {
		r := eval(s, call("h", "t", a))
		if r.Decision != Allow || string(r.Arguments) != `{}` {
			t.Errorf("%q: %+v", a, r)
		}
	}
}

func TestNoHooks(t *testing.T) {
	var nilSet *Set
	if r := nilSet.Evaluate(context.Background(), call("h", "t", `{"a":1}`)); r.Decision != Allow || r.By != ByDefault {
		t.Errorf("nil set: %+v", r)
	}
	nilSet.Close()
	for _, doc := range []string{"", "# nothing\n", "hooks:\n", "hooks: []\n"} {
		s := mustParse(t, doc)
		if s.Len() != 0 {
			t.Errorf("%q: %d hooks", doc, s.Len())
		}
		if r := eval(s, call("h", "t", `{}`)); r.Decision != Allow {
			t.Errorf("%q: %+v", doc, r)
		}
	}
	s, err := Load(t.TempDir() + "/absent.yaml")
	if err != nil || s.Len() != 0 {
		t.Fatalf("absent: %v %v", s, err)
	}
}

func TestResultJSON(t *testing.T) {
	s := mustParse(t, `
hooks:
  - {name: r, match: "*", decide: change, arguments: {merge: {a: 2}}}
  - {name: d, match: "*", decide: deny, reason: no}
`)
	r := eval(s, call("h", "t", `{"a":1}`))
	b, _ := json.Marshal(r)
	want := `{"decision":"deny","arguments":{"a":2},"changed":true,"asked":{"a":1},"reason":"no","by":"hook:d","trail":[{"hook":"r","decision":"change","arguments":{"a":2}},{"hook":"d","decision":"deny","reason":"no"}]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestConcurrentEvaluate(t *testing.T) {
	s := mustParse(t, `
hooks:
  - {name: r, match: "*", decide: change, arguments: {merge: {m: {x: 1}}}}
  - {name: d, match: "*.deny", decide: deny}
`)
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			tool := "ok"
			if i%2 == 0 {
				tool = "deny"
			}
			r := eval(s, call("h", tool, fmt.Sprintf(`{"i":%d,"m":{"y":2}}`, i)))
			want := fmt.Sprintf(`{"i":%d,"m":{"x":1,"y":2}}`, i)
			if string(r.Arguments) != want {
				t.Errorf("got %s, want %s", r.Arguments, want)
			}
		})
	}
	wg.Wait()
}

// TestNumericBounds: the docs' big-refunds hook matched `amount: "^[0-9]{4,}$"` on the JSON text,
// so 10000.0 and 1e4 passed it by. Bounds compare numbers by value, whatever their spelling.
func TestNumericBounds(t *testing.T) {
	s := mustParse(t, `
hooks:
  - name: big-refunds
    match: "*.refund"
    when: {arguments: {amount: {min: 1000}}}
    decide: ask
  - name: band
    match: "*.discount"
    when: {arguments: {percent: {min: 10, max: 50.5}}}
    decide: deny
`)
	for _, c := range []struct {
		tool, args string
		want       Decision
	}{
		{"refund", `{"amount":15000}`, Ask},
		{"refund", `{"amount":10000.0}`, Ask},
		{"refund", `{"amount":1e4}`, Ask},
		{"refund", `{"amount":1E+3}`, Ask},
		{"refund", `{"amount":1000}`, Ask},
		{"refund", `{"amount":1e400}`, Ask}, // beyond float64: +Inf, as a tool reads it
		{"refund", `{"amount":"1e4"}`, Ask}, // a tool that converts strings reads 10000
		{"refund", `{"amount":" 2500.50 "}`, Ask},
		{"refund", `{"amount":999.99}`, Allow},
		{"refund", `{"amount":-1e9}`, Allow},
		// Strings it cannot read as a number in JSON's syntax, some of which a tool reads as
		// 50000 (Python's float: leading zeros, +, _, other scripts' digits): a person decides.
		{"refund", `{"amount":"lots"}`, Ask},
		{"refund", `{"amount":"010000"}`, Ask},
		{"refund", `{"amount":"+50000"}`, Ask},
		{"refund", `{"amount":"50_000"}`, Ask},
		{"refund", `{"amount":"50000."}`, Ask},
		{"refund", `{"amount":".5e5"}`, Ask},
		{"refund", `{"amount":"٥٠٠٠٠"}`, Ask},
		{"discount", `{"percent":"020"}`, Ask},
		{"refund", `{"amount":true}`, Allow},
		{"refund", `{}`, Allow},
		{"discount", `{"percent":10}`, Deny},
		{"discount", `{"percent":50.5}`, Deny},
		{"discount", `{"percent":5.05e1}`, Deny},
		{"discount", `{"percent":50.51}`, Allow},
		{"discount", `{"percent":9.99}`, Allow},
	} {
		if r := eval(s, call("h", c.tool, c.args)); r.Decision != c.want {
			t.Errorf("%s %s: %s by %s, want %s", c.tool, c.args, r.Decision, r.By, c.want)
		}
	}
}
