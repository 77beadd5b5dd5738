package devserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/gateway"
)

// What is kept of a job's calls is bounded: past MaxRecordingBytes its later calls are kept
// without their request and answer, saying why; another job's are not touched.
func TestKeptCallsBoundedPerJob(t *testing.T) {
	s := &Server{}
	ex := &gateway.Exchange{Method: "POST", Path: "/anthropic/v1/messages", Request: strings.Repeat("x", 7<<20), Status: 200, Body: "{}", Usage: &gateway.Usage{InputTokens: 3}}
	read := func(job string) gateway.Exchange {
		var got gateway.Exchange
		if err := json.Unmarshal(s.exchangeData(job, ex), &got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	for i := range MaxRecordingBytes / (7 << 20) {
		if got := read("job_a"); got.Truncated || len(got.Request) != 7<<20 {
			t.Fatalf("call %d, within the bound: truncated %v, %d bytes", i+1, got.Truncated, len(got.Request))
		}
	}
	got := read("job_a")
	if !got.Truncated || got.Request != "" || got.Body != "" || got.Usage == nil || got.Path != ex.Path ||
		got.Cut != "the job's kept model calls reached the bound of 64 MiB a job, so this call's request and answer were not kept" {
		t.Errorf("past the bound: %+v", got)
	}
	if got := read("job_b"); got.Truncated {
		t.Error("another job's call was cut")
	}
	s.recorded.forget("job_a")
	if got := read("job_a"); got.Truncated {
		t.Error("a forgotten job's count was kept")
	}
}
