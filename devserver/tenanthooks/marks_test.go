package tenanthooks

import (
	"reflect"
	"testing"
)

// The rules that deny or ask for a tool's calls, as the agents page draws them: by their globs
// and agent conditions; a rule that reads the arguments decides only some calls.
func TestMarks(t *testing.T) {
	s, err := Parse("hooks.yaml", []byte(`hooks:
  - name: exec-by-person
    match: "acme-triage.notify_*"
    when: {arguments: {team: "^(legal|exec)$"}}
    decide: deny
    reason: the exec team is told by a person
  - name: redact
    match: "*.notify_team"
    decide: change
    arguments: {merge: {summary: "[redacted]"}}
  - name: no-refunds
    match: "*.refund"
    decide: deny
  - name: lead-asks
    match: "*.notify_team"
    when: {agent: "^billing-lead$"}
    decide: ask
`))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := s.Marks("acme-triage", "acme-triage", "notify_team")
	want := []RuleMark{{Hook: "exec-by-person", Decision: Deny, Reason: "the exec team is told by a person", Conditional: true}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("notify_team: %+v, want %+v", got, want)
	}
	if got := s.Marks("acme-triage", "acme-triage", "refund"); !reflect.DeepEqual(got, []RuleMark{{Hook: "no-refunds", Decision: Deny}}) {
		t.Errorf("refund: %+v", got)
	}
	if got := s.Marks("billing-lead", "other", "notify_team"); !reflect.DeepEqual(got, []RuleMark{{Hook: "lead-asks", Decision: Ask}}) {
		t.Errorf("billing-lead's notify_team: %+v", got)
	}
	var none *Set
	if none.Marks("a", "h", "t") != nil {
		t.Error("no hooks mark nothing")
	}
}
