package api

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/devserver/store"
)

// TestApprovalListClipsLongArguments: 256 approvals of 180 KB made `oz0 approval list` print 46
// MB. The list (and the feed, which reads the same summary) carries the start of arguments over
// 4 KiB, as a string, with their size; the one approval has them whole.
func TestApprovalListClipsLongArguments(t *testing.T) {
	a := newTestAPI(t)
	ctx := context.Background()
	j, _ := a.client.CreateJob(ctx, apiv1.JobRequest{Agent: "hello", Input: "hi"})
	long := `{"body":"` + strings.Repeat("x", 180<<10) + `"}`
	ap, err := a.st.CreateApproval(store.Approval{Job: j.ID, Harness: "h", Tool: "t", Request: "p1", Arguments: json.RawMessage(long)})
	if err != nil {
		t.Fatal(err)
	}
	status, body := a.call("GET", "/api/v1/approvals", "")
	if status != 200 || len(body) > 8<<10 {
		t.Fatalf("the list: %d, %d bytes", status, len(body))
	}
	var list apiv1.ApprovalList
	if err := json.Unmarshal([]byte(body), &list); err != nil || len(list.Approvals) != 1 {
		t.Fatalf("the list: %s %v", body, err)
	}
	var start string
	if got := list.Approvals[0]; !got.ArgumentsClipped || got.ArgumentsBytes != len(long) || json.Unmarshal(got.Arguments, &start) != nil || !strings.HasPrefix(start, `{"body":"xx`) {
		t.Errorf("the listed approval: clipped %v, %d bytes, %.40s", got.ArgumentsClipped, got.ArgumentsBytes, got.Arguments)
	}
	status, body = a.call("GET", "/api/v1/approvals/"+ap.ID, "")
	var whole apiv1.Approval
	if status != 200 || json.Unmarshal([]byte(body), &whole) != nil || string(whole.Arguments) != long || whole.ArgumentsClipped || whole.ArgumentsBytes != len(long) {
		t.Errorf("the one approval: %d, clipped %v, %d bytes", status, whole.ArgumentsClipped, len(whole.Arguments))
	}
}
