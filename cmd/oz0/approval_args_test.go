package main

import (
	"encoding/json"
	"testing"

	"github.com/orchestrator-zero/oz0/api/apiv1"
)

// TestApprovalArguments: arguments a list clipped show their start, their size and where they are
// whole, not a quoted JSON string.
func TestApprovalArguments(t *testing.T) {
	if got := approvalArguments(apiv1.Approval{Arguments: json.RawMessage(`{"team": "billing"}`), ArgumentsBytes: 19}); got != `{"team":"billing"}` {
		t.Errorf("whole arguments: %s", got)
	}
	clipped := apiv1.Approval{Job: "job_1", Arguments: json.RawMessage(`"{\"body\":\"xxx…"`), ArgumentsBytes: 184332, ArgumentsClipped: true}
	if got, want := approvalArguments(clipped), `{"body":"xxx… (184332 bytes in all: oz0 job show job_1 has them whole)`; got != want {
		t.Errorf("clipped arguments: %s, want %s", got, want)
	}
}
