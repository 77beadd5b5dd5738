package api

import (
	"net/http"
	"testing"

	"github.com/orchestrator-zero/oz0/api/apiv1"
)

// Every answer of the API carries apiv1.ServerHeader, its refusals included: a client tells the
// dev server from another server at the same address by it.
func TestEveryAnswerIsMarked(t *testing.T) {
	a := newTestAPI(t)
	for _, c := range []struct {
		what, method, path string
		header             []string
	}{
		{"a list", "GET", "/api/v1/jobs", nil},
		{"an unknown job", "GET", "/api/v1/jobs/job_aaaaaaaaaaaaaaaaaaaa", nil},
		{"no such call", "GET", "/api/v1/nothing", nil},
		{"no token", "GET", "/api/v1/jobs", []string{"Authorization", ""}},
		{"another Host", "GET", "/api/v1/jobs", []string{"Host", "evil.example"}},
	} {
		t.Run(c.what, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, a.url+c.path, nil)
			req.Header.Set("Authorization", "Bearer "+a.token)
			for i := 0; i+1 < len(c.header); i += 2 {
				if c.header[i] == "Host" {
					req.Host = c.header[i+1]
				} else {
					req.Header.Set(c.header[i], c.header[i+1])
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.Header.Get(apiv1.ServerHeader) != "v1" {
				t.Errorf("%s (%s): no %s header", c.what, resp.Status, apiv1.ServerHeader)
			}
		})
	}
}
