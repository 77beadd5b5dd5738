package devserver

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/devserver/api"
)

// Everything the port serves, as oz0 dev mounts it, refuses a caller without its credentials: every
// control API call (api.RouteList: a call added later is covered too) without the token, and the
// same calls under the dev UI without its login; the gateway without a session key; the fake
// model without its key; any other path. A Host off loopback is refused everywhere, and a write
// from another origin on every call that writes.
func TestEveryRouteOfThePortGuarded(t *testing.T) {
	s, _ := startLimited(t, portLimits{})
	type probe struct{ method, path string }
	var probes []probe
	for _, rt := range api.RouteList(&api.Backend{Secrets: noticedSecrets{s}}) {
		method, path, _ := strings.Cut(rt.Pattern, " ")
		path = strings.NewReplacer("{id}", "job_nope", "{name}", "NOPE").Replace(path)
		probes = append(probes, probe{method, path})
		if !strings.HasPrefix(path, "/api/v1/secrets") {
			probes = append(probes, probe{method, "/ui" + path})
		}
	}
	probes = append(probes,
		probe{"POST", "/gateway/anthropic/v1/messages"}, probe{"POST", "/gateway/openai/chat/completions"},
		probe{"GET", "/gateway/anthropic/v1/models"}, probe{"POST", "/fake/v1/messages"},
		probe{"GET", "/ui/"}, probe{"GET", "/elsewhere"}, probe{"POST", "/api/v1/nothing"})
	do := func(p probe, edit func(*http.Request)) (int, string) {
		req, err := http.NewRequest(p.method, s.URL+p.path, strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		edit(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, p := range probes {
		if status, body := do(p, func(*http.Request) {}); status != 401 {
			t.Errorf("%s %s without credentials: %d %s", p.method, p.path, status, body)
		}
		status, body := do(p, func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+s.Token)
			r.Host = "oz0.attacker.example"
		})
		if status != 403 || !strings.Contains(body, apiv1.CodeForbiddenHost) {
			t.Errorf("%s %s with a Host off loopback: %d %s", p.method, p.path, status, body)
		}
		if p.method != "GET" && !strings.HasPrefix(p.path, "/gateway/") && !strings.HasPrefix(p.path, "/fake/") {
			status, body := do(p, func(r *http.Request) {
				r.Header.Set("Authorization", "Bearer "+s.Token)
				r.Header.Set("Origin", "http://attacker.example")
			})
			if status != 403 || !strings.Contains(body, apiv1.CodeCrossOrigin) {
				t.Errorf("%s %s from another origin: %d %s", p.method, p.path, status, body)
			}
		}
	}
}

// A session's key works while its job runs, and stops working the moment the job has ended: by
// the time the cancel call answers, the key is refused.
func TestSessionKeyEndsWithItsJob(t *testing.T) {
	s, keyFile := startLimited(t, portLimits{})
	k := startKeyJob(t, s, keyFile)
	call := `{"model":"fake-model","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	if got := sessionCall(t, k, call); got != 200 {
		t.Fatalf("a model call while the job runs: %d", got)
	}
	if status, body := apiCall(t, s, "POST", "/api/v1/jobs/"+k.Job+"/cancel", ""); status != 200 || !strings.Contains(body, `"status":"cancelled"`) {
		t.Fatalf("cancel: %d %s", status, body)
	}
	if got := sessionCall(t, k, call); got != 401 {
		t.Errorf("a model call once the job has ended: %d, want 401", got)
	}
}
