package fakemodel

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// serve starts a Server for the script text on a real listener.
func serve(t *testing.T, script string) (*Server, *httptest.Server) {
	t.Helper()
	s, err := ParseScript("test.yaml", []byte(script))
	if err != nil {
		t.Fatalf("ParseScript: %v", err)
	}
	srv := New(s)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return srv, ts
}

type response struct {
	status  int
	header  http.Header
	body    []byte
	readErr error
}

var anthHeaders = map[string]string{"anthropic-version": "2023-06-01", "x-api-key": "sk-ant-test", "content-type": "application/json"}
var openaiHeaders = map[string]string{"Authorization": "Bearer sk-test", "content-type": "application/json"}

func do(t *testing.T, method, url string, headers map[string]string, body string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, rerr := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: data, readErr: rerr}
}

func anthropic(t *testing.T, ts *httptest.Server, body string) response {
	t.Helper()
	return do(t, "POST", ts.URL+"/v1/messages", anthHeaders, body)
}

func openai(t *testing.T, ts *httptest.Server, body string) response {
	t.Helper()
	return do(t, "POST", ts.URL+"/v1/chat/completions", openaiHeaders, body)
}

// obj decodes JSON into a generic value, failing the test on bad JSON.
func obj(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, data)
	}
	return m
}

// get walks a path of keys and indexes through a decoded JSON value.
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

type sseEvent struct {
	name string
	data string
}

// parseSSE reads server-sent events back, strictly: every event is "event:" (optional) and
// "data:" lines ended by a blank line.
func parseSSE(t *testing.T, data []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data == "" {
				t.Fatalf("an event without data in:\n%s", data)
			}
			out = append(out, cur)
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected SSE line %q in:\n%s", line, data)
		}
	}
	if cur.data != "" || cur.name != "" {
		out = append(out, cur) // an unterminated event: a cut stream
	}
	return out
}

func names(evs []sseEvent) string {
	var ns []string
	for _, e := range evs {
		ns = append(ns, e.name)
	}
	return strings.Join(ns, " ")
}

const anthBody = `{"model":"claude-fake-1","max_tokens":1024,"system":"You sort support tickets.","messages":[{"role":"user","content":"hello there"}]}`
const anthStream = `{"model":"claude-fake-1","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"hello there"}]}`
const openaiBody = `{"model":"gpt-fake","messages":[{"role":"system","content":"You sort support tickets."},{"role":"user","content":"hello there"}]}`
const openaiStream = `{"model":"gpt-fake","stream":true,"messages":[{"role":"user","content":"hello there"}]}`
const openaiStreamUsage = `{"model":"gpt-fake","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hello there"}]}`
