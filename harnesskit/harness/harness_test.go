package harness_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/orchestrator-zero/oz0/fakemodel"
	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/harnesskit/harness"
	"github.com/orchestrator-zero/oz0/plugin"
)

func request(t testing.TB, mod func(*harnesskit.SessionRequest)) string {
	t.Helper()
	req := harnesskit.SessionRequest{
		Protocol: 1, Job: "job_1", Agent: "acme-triage", Harness: "acme-triage",
		Text: "I was charged twice for my order", Input: json.RawMessage(`"I was charged twice for my order"`),
		Instructions: "You sort support tickets for a customer support desk.",
		Model:        harnesskit.Model{Name: "fake-model", Format: plugin.FormatAnthropicMessages, Record: "fake"},
		Tools:        []string{"notify_team"}, Limits: harnesskit.RequestLimits{MaxSteps: 2},
		Workdir: "/tmp/w", StateDir: "/tmp/s",
	}
	if mod != nil {
		mod(&req)
	}
	line, err := harnesskit.Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	return string(line) + "\n"
}

// serve runs Serve with stdin of input, and returns the lines it wrote.
func serve(t *testing.T, input string, run harness.Func) ([]string, error) {
	t.Helper()
	var out bytes.Buffer
	err := harness.Serve(strings.NewReader(input), &out, run)
	return strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"), err
}

func TestServeResult(t *testing.T) {
	lines, err := serve(t, request(t, nil), func(s *harness.Session) (any, error) {
		s.Say("Sorting the ticket. ")
		s.Log("", "a log line")
		return "billing: done", nil
	})
	want := []string{
		`{"type":"say","text":"Sorting the ticket. "}`,
		`{"type":"log","level":"info","message":"a log line"}`,
		`{"type":"result","output":"billing: done"}`,
	}
	if err != nil || strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("%v\n%s", err, strings.Join(lines, "\n"))
	}
}

func TestServeOutputs(t *testing.T) {
	for want, output := range map[string]any{
		`"text"`:                  "text",
		`{"team":"billing"}`:      map[string]string{"team": "billing"},
		`[1,2]`:                   json.RawMessage(`[1,2]`),
		`null`:                    nil,
		`"a < b & c"`:             "a < b & c",
		`"{1 0x0}"`:               struct{ A, B any }{1, func() {}}, // does not marshal: its fmt.Sprint
		`"\u2028 line separator"`: "\u2028 line separator",
	} {
		lines, err := serve(t, request(t, nil), func(*harness.Session) (any, error) { return output, nil })
		if err != nil || lines[0] != `{"type":"result","output":`+want+`}` {
			if !strings.Contains(want, "0x0") || !strings.HasPrefix(lines[0], `{"type":"result","output":"{1 0x`) {
				t.Errorf("%v: %v %s", output, err, lines[0])
			}
		}
	}
}

func TestServeRefusesOtherProtocols(t *testing.T) {
	for input, want := range map[string]string{
		request(t, func(r *harnesskit.SessionRequest) { r.Protocol = 2 }): "the session asks for protocol 2: this harness speaks protocol 1",
		`{"type":"session"}` + "\n":                                       "the session asks for protocol none: this harness speaks protocol 1",
		"":                                                                "stdin closed before the session request: this harness speaks protocol 1",
		"hello\n":                                                         "the first line is not a JSON session request: this harness speaks protocol 1",
		`{"type":"permission"}` + "\n":                                    "the first line is not a session request: this harness speaks protocol 1",
	} {
		ran := false
		lines, err := serve(t, input, func(*harness.Session) (any, error) { ran = true; return nil, nil })
		var pe *harness.ProtocolError
		if ran || !errors.As(err, &pe) || len(lines) != 1 {
			t.Errorf("%q: ran %v, err %v, lines %q", input, ran, err, lines)
			continue
		}
		var m harnesskit.ErrorMessage
		json.Unmarshal([]byte(lines[0]), &m)
		if m.Message != want {
			t.Errorf("%q: %q, want %q", input, m.Message, want)
		}
	}
}

func TestServeErrorsAndPanics(t *testing.T) {
	lines, err := serve(t, request(t, nil), func(*harness.Session) (any, error) { return nil, errors.New("the ticket system is down") })
	if err == nil || lines[0] != `{"type":"error","message":"the ticket system is down"}` {
		t.Errorf("%v %q", err, lines)
	}
	lines, err = serve(t, request(t, nil), func(*harness.Session) (any, error) { panic("boom") })
	if err == nil || lines[0] != `{"type":"error","message":"panic: boom"}` {
		t.Errorf("%v %q", err, lines)
	}
}

func TestNothingAfterTheLastLine(t *testing.T) {
	var s *harness.Session
	lines, _ := serve(t, request(t, nil), func(sess *harness.Session) (any, error) { s = sess; return "done", nil })
	if err := s.Say("too late"); err == nil {
		t.Error("a say after the result was written")
	}
	if len(lines) != 1 {
		t.Errorf("%q", lines)
	}
}

func TestSessionFields(t *testing.T) {
	serve(t, request(t, func(r *harnesskit.SessionRequest) {
		r.Text = ""
		r.Input = json.RawMessage(`{"order":"A-1"}`)
		r.Options = json.RawMessage(`{"region":"eu"}`)
	}), func(s *harness.Session) (any, error) {
		if s.Text() != `{"order":"A-1"}` || string(s.Input()) != `{"order":"A-1"}` || string(s.Options()) != `{"region":"eu"}` ||
			s.Job() != "job_1" || s.Agent() != "acme-triage" || s.Model().Name != "fake-model" || s.Workdir() != "/tmp/w" ||
			s.StateDir() != "/tmp/s" || s.Instructions() == "" || s.Harness() != "acme-triage" || s.Limits().MaxSteps != 2 {
			t.Errorf("%s: text %q input %s options %s", s, s.Text(), s.Input(), s.Options())
		}
		return nil, nil
	})
	serve(t, request(t, func(r *harnesskit.SessionRequest) { r.Text = ""; r.Input = json.RawMessage(`"as a string"`) }),
		func(s *harness.Session) (any, error) {
			if s.Text() != "as a string" {
				t.Errorf("text %q", s.Text())
			}
			return nil, nil
		})
}

// node is the node's side of an in-process session: it answers permission requests.
type node struct {
	t      *testing.T
	in     *io.PipeWriter
	lines  chan string
	answer func(req harnesskit.PermissionRequest) harnesskit.Permission
}

func runWithNode(t *testing.T, answer func(harnesskit.PermissionRequest) harnesskit.Permission, run harness.Func) []string {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- harness.Serve(inR, outW, run)
		outW.Close()
	}()
	inW.Write([]byte(request(t, nil)))
	var lines []string
	r := harnesskit.NewReader(outR)
	for {
		line, err := r.ReadLine()
		if err != nil {
			break
		}
		lines = append(lines, string(line))
		m, _ := harnesskit.DecodeHarnessMessage(line)
		if pr, ok := m.(harnesskit.PermissionRequest); ok {
			p := answer(pr)
			data, _ := harnesskit.Encode(p)
			inW.Write(append(data, '\n'))
		}
	}
	inW.Close()
	<-done
	return lines
}

func TestCallTool(t *testing.T) {
	var ranWith []string
	lines := runWithNode(t, func(pr harnesskit.PermissionRequest) harnesskit.Permission {
		switch pr.Tool {
		case "notify_team":
			return harnesskit.Permission{ID: pr.ID, Allow: true, Arguments: json.RawMessage(`{"team":"account"}`)}
		case "as_asked":
			return harnesskit.Permission{ID: pr.ID, Allow: true, Arguments: pr.Arguments}
		}
		return harnesskit.Permission{ID: pr.ID, Reason: "no refunds today"}
	}, func(s *harness.Session) (any, error) {
		record := func(args json.RawMessage) (any, error) {
			ranWith = append(ranWith, string(args))
			return "ok", nil
		}
		if _, err := s.CallTool("notify_team", map[string]string{"team": "billing"}, record); err != nil {
			return nil, err
		}
		if _, err := s.CallTool("as_asked", map[string]int{"n": 1}, record); err != nil {
			return nil, err
		}
		_, err := s.CallTool("refund", nil, record)
		var refused *harness.Refused
		if !errors.As(err, &refused) || refused.Reason != "no refunds today" || refused.Tool != "refund" {
			t.Errorf("refund: %v", err)
		}
		_, err = s.CallTool("notify_team", nil, func(json.RawMessage) (any, error) { return nil, errors.New("smtp down") })
		if err == nil || err.Error() != "smtp down" {
			t.Errorf("a failing tool: %v", err)
		}
		if _, err := s.CallTool("bad", []int{1}, record); err == nil {
			t.Error("arguments that are not an object were sent")
		}
		return "done", nil
	})
	want := []string{
		`{"type":"permission_request","id":"p1","tool":"notify_team","arguments":{"team":"billing"}}`,
		`{"type":"tool_result","id":"p1","tool":"notify_team","result":"ok"}`,
		`{"type":"permission_request","id":"p2","tool":"as_asked","arguments":{"n":1}}`,
		`{"type":"tool_result","id":"p2","tool":"as_asked","result":"ok"}`,
		`{"type":"permission_request","id":"p3","tool":"refund","arguments":{}}`,
		`{"type":"permission_request","id":"p4","tool":"notify_team","arguments":{}}`,
		`{"type":"tool_result","id":"p4","tool":"notify_team","error":"smtp down"}`,
		`{"type":"result","output":"done"}`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if strings.Join(ranWith, " ") != `{"team":"account"} {"n":1}` {
		t.Errorf("the tool ran with %v", ranWith)
	}
}

func TestCallToolsAtOnce(t *testing.T) {
	// The node answers in reverse order, once all three are open.
	var mu sync.Mutex
	var open []harnesskit.PermissionRequest
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		harness.Serve(inR, outW, func(s *harness.Session) (any, error) {
			var wg sync.WaitGroup
			results := make([]string, 3)
			for i := range 3 {
				wg.Go(func() {
					r, err := s.CallTool("t", map[string]int{"i": i}, func(args json.RawMessage) (any, error) { return string(args), nil })
					if err != nil {
						results[i] = err.Error()
					} else {
						results[i] = r.(string)
					}
				})
			}
			wg.Wait()
			return results, nil
		})
		outW.Close()
	}()
	inW.Write([]byte(request(t, nil)))
	r := harnesskit.NewReader(outR)
	var result string
	for {
		line, err := r.ReadLine()
		if err != nil {
			break
		}
		m, _ := harnesskit.DecodeHarnessMessage(line)
		switch m := m.(type) {
		case harnesskit.PermissionRequest:
			mu.Lock()
			open = append(open, m)
			if len(open) == 3 {
				for i := 2; i >= 0; i-- {
					data, _ := harnesskit.Encode(harnesskit.Permission{ID: open[i].ID, Allow: true, Arguments: open[i].Arguments})
					inW.Write(append(data, '\n'))
				}
			}
			mu.Unlock()
		case harnesskit.Result:
			result = string(m.Output)
		}
	}
	inW.Close()
	if result != `["{\"i\":0}","{\"i\":1}","{\"i\":2}"]` {
		t.Errorf("result %s", result)
	}
}

func TestNodeClosesBeforeAnswering(t *testing.T) {
	input := request(t, nil) // and then the end of stdin
	lines, _ := serve(t, input, func(s *harness.Session) (any, error) {
		_, err := s.CallTool("notify_team", nil, func(json.RawMessage) (any, error) { return nil, nil })
		return err.Error(), nil
	})
	if last := lines[len(lines)-1]; last != `{"type":"result","output":"the node closed the session before answering"}` {
		t.Errorf("%q", lines)
	}
}

func TestNewSessionOutsideANode(t *testing.T) {
	var buf bytes.Buffer
	s := harness.NewSession(harnesskit.SessionRequest{Text: "hi"}, &buf)
	s.Say("hello")
	_, err := s.CallTool("t", nil, func(json.RawMessage) (any, error) { return nil, nil })
	var refused *harness.Refused
	if !errors.As(err, &refused) || !strings.Contains(refused.Reason, "no node to ask") {
		t.Errorf("%v", err)
	}
	if !strings.HasPrefix(buf.String(), `{"type":"say","text":"hello"}`+"\n") {
		t.Errorf("%q", buf.String())
	}
}

func TestComplete(t *testing.T) {
	model := fakemodel.New(nil)
	ts := httptest.NewServer(model)
	defer ts.Close()
	t.Setenv("ANTHROPIC_BASE_URL", ts.URL+"/")
	t.Setenv("ANTHROPIC_API_KEY", "oz0s_session")
	lines, err := serve(t, request(t, nil), func(s *harness.Session) (any, error) {
		a, err := s.Complete("Sort this support ticket.\n\n<ticket>\nI was charged twice for my order\n</ticket>")
		if err != nil {
			return nil, err
		}
		if _, err := s.Complete("again"); err != nil {
			return nil, err
		}
		_, err = s.Complete("a third time")
		var me *harness.ModelError
		if !errors.Is(err, harness.ErrStepLimit) || !errors.As(err, &me) || me.Status != 429 ||
			err.Error() != "limits.max_steps reached: this session may make 2 model calls and has made 2" || s.Steps() != 2 {
			t.Errorf("past max_steps: %v", err)
		}
		return a, nil
	})
	if err != nil || !strings.Contains(lines[0], `\"team\": \"billing\"`) && !strings.Contains(lines[0], `\"team\":\"billing\"`) {
		t.Errorf("%v %q", err, lines)
	}
	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d calls", len(reqs))
	}
	var body struct {
		Model     string `json:"model"`
		System    string `json:"system"`
		MaxTokens int    `json:"max_tokens"`
		Messages  []struct{ Role, Content string }
	}
	json.Unmarshal(reqs[0].Body, &body)
	h := reqs[0].Header
	if reqs[0].Path != "/v1/messages" || h.Get("x-api-key") != "oz0s_session" || h.Get("anthropic-version") != "2023-06-01" ||
		h.Get("Oz0-Job") != "job_1" || h.Get("Oz0-Agent") != "acme-triage" || body.Model != "fake-model" ||
		body.System != "You sort support tickets for a customer support desk." || body.MaxTokens != 1024 ||
		len(body.Messages) != 1 || body.Messages[0].Role != "user" {
		t.Errorf("the call: %s %v %+v", reqs[0].Path, h, body)
	}
}

func TestCompleteErrors(t *testing.T) {
	var calls atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("content-type", "application/json")
		w.WriteHeader(429)
		w.Write([]byte(`{"type":"error","error":{"type":"rate_limit_error","message":"limits.max_steps: the job may make 10 model calls"}}`))
	}))
	defer ts.Close()
	for base, want := range map[string]string{
		ts.URL:                  "the model API answered 429: rate_limit_error: limits.max_steps: the job may make 10 model calls",
		"":                      "ANTHROPIC_BASE_URL is not set: run the harness from a node (oz0 dev, oz0 plugin test) or set it to a model API",
		"http://127.0.0.1:1/gw": "cannot reach the model API at http://127.0.0.1:1/gw",
	} {
		t.Setenv("ANTHROPIC_BASE_URL", base)
		var got error
		serve(t, request(t, nil), func(s *harness.Session) (any, error) {
			_, got = s.Complete("hi")
			return nil, nil
		})
		if got == nil || !strings.HasPrefix(got.Error(), want) {
			t.Errorf("%s: %v, want %s", base, got, want)
		}
	}
	// An error answer is the harness's to handle: the SDK does not try again (which a clock's
	// bound stood for, and failed on a loaded machine).
	if n := calls.Load(); n != 1 {
		t.Errorf("the model API was called %d times, want once", n)
	}
}
