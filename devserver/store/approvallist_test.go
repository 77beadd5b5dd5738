package store

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestApprovalListsClipLongArguments: a list holds at most ListArgumentBytes of an approval's
// arguments (a JSON string of their start), whatever a harness sent; the one approval has them
// whole.
func TestApprovalListsClipLongArguments(t *testing.T) {
	s := newStore(t)
	j := newJob(t, s)
	long := json.RawMessage(`{"body":"` + strings.Repeat("x", 180<<10) + `","team":"billing"}`)
	short := json.RawMessage(`{"team":"billing"}`)
	big, err := s.CreateApproval(Approval{Job: j.ID, Harness: "h", Tool: "t", Request: "p1", Arguments: long})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateApproval(Approval{Job: j.ID, Harness: "h", Tool: "t", Request: "p2", Arguments: short}); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListApprovals(ApprovalPending)
	if err != nil || len(list) != 2 {
		t.Fatalf("list: %d, %v", len(list), err)
	}
	// Newest first, as jobs are listed.
	if list[0].Request != "p2" {
		t.Errorf("the list starts with %s; the newest is p2", list[0].Request)
	}
	list[0], list[1] = list[1], list[0]
	sum, err := s.ApprovalSummary(big.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []Approval{list[0], sum} {
		var preview string
		if err := json.Unmarshal(a.Arguments, &preview); err != nil || !a.ArgumentsClipped || a.ArgumentsBytes != len(long) ||
			len(a.Arguments) > ListArgumentBytes || !strings.HasPrefix(preview, `{"body":"xxx`) || !strings.HasSuffix(preview, "x…") {
			t.Errorf("a long approval in a list: %d bytes, clipped %v, of %d (%v)", len(a.Arguments), a.ArgumentsClipped, a.ArgumentsBytes, err)
		}
	}
	if a := list[1]; string(a.Arguments) != string(short) || a.ArgumentsClipped || a.ArgumentsBytes != len(short) {
		t.Errorf("a short approval in a list: %s %v %d", a.Arguments, a.ArgumentsClipped, a.ArgumentsBytes)
	}
	whole, err := s.GetApproval(big.ID)
	if err != nil || string(whole.Arguments) != string(long) || whole.ArgumentsClipped || whole.ArgumentsBytes != len(long) {
		t.Errorf("the one approval: %d bytes, clipped %v, %v", len(whole.Arguments), whole.ArgumentsClipped, err)
	}
}
