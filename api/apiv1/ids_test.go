package apiv1

import (
	"strings"
	"testing"
)

func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{
		"job_4k2vaaaaaaaaaaaaaaaa": true, "job_a": true, "job_": false, "": false, "job_A": false,
		"job_1": false, "apr_abc": false, "job_../x": false, "job_" + strings.Repeat("a", 65): false,
	} {
		if got := ValidID(JobIDPrefix, id); got != want {
			t.Errorf("ValidID(job_, %q) = %v", id, got)
		}
	}
}
