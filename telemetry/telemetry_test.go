package telemetry

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/orchestrator-zero/oz0/api/apiv1"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func ev(seq int64, ms int, typ, data string) apiv1.Event {
	return apiv1.Event{Job: "job_aaaaaaaaaaaaaaaaaaaa", Seq: seq, Time: t0.Add(time.Duration(ms) * time.Millisecond), Type: typ, Data: json.RawMessage(data)}
}

// guideRecord is the guide's job: a say, a model call, a tool call a person allowed, a session's
// own span, the result.
func guideRecord() Record {
	job := apiv1.Job{ID: "job_aaaaaaaaaaaaaaaaaaaa", Agent: "acme-triage", Plugin: "acme-triage", InputText: "I was charged twice",
		ModelRecord: "anthropic", ModelName: "claude-sonnet-4-5", Status: apiv1.StatusSucceeded, Output: json.RawMessage(`"billing: refunded"`),
		CreatedAt: t0, StartedAt: t0.Add(5 * time.Millisecond), EndedAt: t0.Add(900 * time.Millisecond),
		Usage: apiv1.Usage{ModelCalls: 1, InputTokens: 120, OutputTokens: 24}}
	parent := SpanID(job.ID, "")
	events := []apiv1.Event{
		ev(1, 0, "status", `{"status":"queued"}`),
		ev(2, 5, "status", `{"status":"running","from":"queued"}`),
		ev(3, 20, "say", `{"text":"Sorting the ticket."}`),
		ev(4, 300, "model_call", `{"record":"anthropic","model":"claude-sonnet-4-5","format":"anthropic-messages","endpoint":"messages","status":200,"input_tokens":120,"output_tokens":24,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"latency_ms":250,"ttfb_ms":40,"streamed":false,"step":1,"started_at":"2026-12-01T10:00:00.030Z"}`),
		ev(5, 310, "permission_request", `{"id":"p1","tool":"notify_team","arguments":{"team":"billing","summary":"charged twice"}}`),
		ev(6, 320, "status", `{"status":"waiting_for_approval","from":"running"}`),
		ev(7, 700, "status", `{"status":"running","from":"waiting_for_approval"}`),
		ev(8, 700, "permission_decision", `{"id":"p1","tool":"notify_team","decision":"allow","by":"person","arguments":{"team":"billing"},"changed":false}`),
		ev(9, 750, "tool_result", `{"id":"p1","tool":"notify_team","result":"told the billing team"}`),
		ev(10, 760, "span", fmt.Sprintf(`{"trace_id":"%s","span_id":"0102030405060708","parent_span_id":"%s","name":"invoke_agent triage","kind":"internal","start":"2026-12-01T10:00:00.010Z","end":"2026-12-01T10:00:00.760Z","service":"acme-triage","scope":"strands.telemetry.tracer","attributes":{"gen_ai.prompt":"secret prompt","gen_ai.agent.name":"triage","n":3}}`, TraceID(job.ID).String(), parent)),
		ev(11, 800, "log", `{"level":"info","message":"done"}`),
		ev(12, 890, "result", `{"output":"billing: refunded"}`),
		ev(13, 900, "status", `{"status":"succeeded","from":"running"}`),
	}
	conv := &apiv1.Conversation{Format: "anthropic-messages", Messages: []apiv1.Message{{Role: "user", Blocks: []apiv1.Block{{Kind: "text", Text: "I was charged twice"}}}},
		Answer: &apiv1.Answer{Status: 200, Model: "claude-sonnet-4-5-20250929", StopReason: "tool_use"}}
	return Record{Job: job, Events: events, Calls: map[int64]*apiv1.Conversation{4: conv}}
}

type span struct {
	*tracepb.Span
	scope string
	attrs map[string]any
}

func flatten(req *collectorpb.ExportTraceServiceRequest) map[string]span {
	out := map[string]span{}
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				out[sp.Name] = span{sp, ss.GetScope().GetName(), attrMap(sp.Attributes)}
			}
		}
	}
	return out
}

func TestRequestSpans(t *testing.T) {
	rec := guideRecord()
	req, err := Request(rec, Options{}, "test")
	if err != nil {
		t.Fatal(err)
	}
	spans := flatten(req)
	jobSpan, ok := spans["invoke_agent acme-triage"]
	if !ok {
		t.Fatalf("no job span among %v", keys(spans))
	}
	traceID := TraceID(rec.Job.ID)
	if !bytes.Equal(jobSpan.TraceId, traceID[:]) || len(jobSpan.ParentSpanId) != 0 {
		t.Errorf("job span: trace %x parent %x", jobSpan.TraceId, jobSpan.ParentSpanId)
	}
	if want := SpanID(rec.Job.ID, ""); !bytes.Equal(jobSpan.SpanId, want[:]) {
		t.Errorf("job span's id %x, want the one TRACEPARENT names (%s)", jobSpan.SpanId, Traceparent(rec.Job.ID))
	}
	if got := time.Unix(0, int64(jobSpan.StartTimeUnixNano)).UTC(); !got.Equal(t0) {
		t.Errorf("job span starts %v, want %v", got, t0)
	}
	for k, want := range map[string]any{"gen_ai.agent.name": "acme-triage", "oz0.job.status": "succeeded", "gen_ai.usage.input_tokens": int64(120), "oz0.plugin": "acme-triage"} {
		if jobSpan.attrs[k] != want {
			t.Errorf("job span %s = %v, want %v", k, jobSpan.attrs[k], want)
		}
	}
	model, ok := spans["chat claude-sonnet-4-5"]
	if !ok {
		t.Fatalf("no model call span among %v", keys(spans))
	}
	if !bytes.Equal(model.ParentSpanId, jobSpan.SpanId) || model.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("model call span: parent %x kind %v", model.ParentSpanId, model.Kind)
	}
	if d := time.Duration(model.EndTimeUnixNano - model.StartTimeUnixNano); d != 250*time.Millisecond {
		t.Errorf("model call span lasts %v, want its latency 250ms", d)
	}
	for k, want := range map[string]any{"gen_ai.system": "anthropic", "gen_ai.operation.name": "chat", "gen_ai.request.model": "claude-sonnet-4-5",
		"gen_ai.response.model": "claude-sonnet-4-5-20250929", "gen_ai.usage.input_tokens": int64(120), "gen_ai.usage.output_tokens": int64(24),
		"oz0.model_call.record": "anthropic", "oz0.model_call.step": int64(1)} {
		if model.attrs[k] != want {
			t.Errorf("model call span %s = %#v, want %#v", k, model.attrs[k], want)
		}
	}
	if fr, _ := model.attrs["gen_ai.response.finish_reasons"].([]any); len(fr) != 1 || fr[0] != "tool_use" {
		t.Errorf("finish reasons %v", model.attrs["gen_ai.response.finish_reasons"])
	}
	if _, ok := model.attrs["gen_ai.input.messages"]; ok {
		t.Error("the prompt was exported without Content")
	}
	tool, ok := spans["execute_tool notify_team"]
	if !ok {
		t.Fatalf("no tool span among %v", keys(spans))
	}
	if d := time.Duration(tool.EndTimeUnixNano - tool.StartTimeUnixNano); d != 440*time.Millisecond {
		t.Errorf("tool span lasts %v, want from its request to its result (440ms)", d)
	}
	if tool.attrs["oz0.permission.decision"] != "allow" || tool.attrs["oz0.permission.by"] != "person" {
		t.Errorf("tool span's decision: %v", tool.attrs)
	}
	if _, ok := tool.attrs["gen_ai.tool.call.arguments"]; ok {
		t.Error("the tool's arguments were exported without Content")
	}
	wait, ok := spans["permission notify_team"]
	if !ok || !bytes.Equal(wait.ParentSpanId, tool.SpanId) || time.Duration(wait.EndTimeUnixNano-wait.StartTimeUnixNano) != 390*time.Millisecond {
		t.Errorf("the wait for the decision: %v", wait.Span)
	}
	names := []string{}
	for _, e := range jobSpan.Events {
		names = append(names, e.Name)
	}
	if got := strings.Join(names, " "); !strings.Contains(got, "say") || !strings.Contains(got, "log") || strings.Contains(got, "span") {
		t.Errorf("job span's events: %s", got)
	}
	for _, e := range jobSpan.Events {
		if e.Name == "say" {
			if _, ok := attrMap(e.Attributes)["oz0.say.text"]; ok {
				t.Error("a say's text was exported without Content")
			}
		}
	}
	session, ok := spans["invoke_agent triage"]
	if !ok {
		t.Fatalf("the session's span is not in the request: %v", keys(spans))
	}
	if !bytes.Equal(session.ParentSpanId, jobSpan.SpanId) || session.scope != "strands.telemetry.tracer" || session.attrs["n"] != int64(3) {
		t.Errorf("the session's span: %v", session.Span)
	}
	if _, ok := session.attrs["gen_ai.prompt"]; ok {
		t.Error("the session's prompt was exported without Content")
	}

	withContent, err := Request(rec, Options{Content: true}, "test")
	if err != nil {
		t.Fatal(err)
	}
	spans = flatten(withContent)
	if s, _ := spans["chat claude-sonnet-4-5"].attrs["gen_ai.input.messages"].(string); !strings.Contains(s, "charged twice") {
		t.Errorf("with Content, the prompt: %q", s)
	}
	if s, _ := spans["invoke_agent triage"].attrs["gen_ai.prompt"].(string); s != "secret prompt" {
		t.Errorf("with Content, the session's prompt: %q", s)
	}
}

func keys(m map[string]span) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestJSONRoundTrip(t *testing.T) {
	req, err := Request(guideRecord(), Options{}, "test")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, req); err != nil {
		t.Fatal(err)
	}
	tid := TraceID("job_aaaaaaaaaaaaaaaaaaaa")
	if !strings.Contains(buf.String(), `"traceId":"`+hex.EncodeToString(tid[:])+`"`) {
		t.Fatalf("the trace ID is not in hex, as OTLP JSON has it: %.300s", buf.String())
	}
	if !strings.Contains(buf.String(), `"kind":3`) {
		t.Errorf("span kinds are not numbers: %.300s", buf.String())
	}
	back, err := ReadJSON(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(back, req) {
		t.Error("OTLP JSON did not read back as it was written")
	}
}

func TestTraceparent(t *testing.T) {
	tp := Traceparent("job_aaaaaaaaaaaaaaaaaaaa")
	parts := strings.Split(tp, "-")
	if len(parts) != 4 || parts[0] != "00" || len(parts[1]) != 32 || len(parts[2]) != 16 || parts[3] != "01" {
		t.Fatalf("traceparent %q", tp)
	}
	if Traceparent("job_bbbbbbbbbbbbbbbbbbbb") == tp {
		t.Error("two jobs share a trace")
	}
}

func sessionRequest(n int, text string) *collectorpb.ExportTraceServiceRequest {
	ss := &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: "fw"}}
	for i := range n {
		ss.Spans = append(ss.Spans, &tracepb.Span{TraceId: bytes.Repeat([]byte{1}, 16), SpanId: []byte{0, 0, 0, 0, 0, 0, 0, byte(i + 1)},
			Name: "step", StartTimeUnixNano: 1, EndTimeUnixNano: 2,
			Attributes: []*commonpb.KeyValue{{Key: "text", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: text}}}}})
	}
	return &collectorpb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{ss}}}}
}

func TestReceiver(t *testing.T) {
	var mu sync.Mutex
	kept := map[string][][]byte{}
	var notes, forwarded []string
	var forwardedSpans []SpanData
	r := &Receiver{
		Resolve: func(_ context.Context, key string) (string, error) {
			if key == "oz0s_key" {
				return "job_1", nil
			}
			return "", fmt.Errorf("unknown key")
		},
		Keep: func(job string, spans [][]byte) error {
			mu.Lock()
			kept[job] = append(kept[job], spans...)
			mu.Unlock()
			return nil
		},
		Note: func(job, msg string) { notes = append(notes, job+": "+msg) },
		Forward: func(rs []*tracepb.ResourceSpans) {
			forwarded = append(forwarded, attrMap(rs[0].ScopeSpans[0].Spans[0].Attributes)["text"].(string))
			forwardedSpans = append(forwardedSpans, SpansData(rs)...)
		},
		Mask:     func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("s3cret"), []byte("***")) },
		MaxSpans: 3,
	}
	post := func(key, ct string, body []byte) (int, []byte) {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1"+"/gateway"+ReceiverPath, bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		b, _ := io.ReadAll(w.Result().Body)
		return w.Code, b
	}
	body, _ := proto.Marshal(sessionRequest(2, "the s3cret"))
	if code, _ := post("", "application/x-protobuf", body); code != http.StatusUnauthorized {
		t.Errorf("no key: %d", code)
	}
	if code, _ := post("oz0s_other", "application/x-protobuf", body); code != http.StatusUnauthorized {
		t.Errorf("an unknown key: %d", code)
	}
	if code, b := post("oz0s_key", "application/x-protobuf", body); code != http.StatusOK {
		t.Fatalf("protobuf: %d %s", code, b)
	}
	if len(kept["job_1"]) != 2 || !strings.Contains(string(kept["job_1"][0]), `"text":"the ***"`) {
		t.Fatalf("kept: %s", kept["job_1"])
	}
	if len(forwarded) != 1 || forwarded[0] != "the ***" {
		t.Errorf("forwarded: %q (a secret must be masked)", forwarded)
	}
	if code, _ := post("oz0s_key", "text/plain", body); code != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain: %d", code)
	}
	if code, _ := post("oz0s_key", "application/x-protobuf", []byte("not protobuf at all")); code != http.StatusBadRequest {
		t.Errorf("garbage: %d", code)
	}
	// JSON, as the JavaScript exporters send it; past the budget, refused and said once, and
	// not sent on.
	var js bytes.Buffer
	if err := WriteJSON(&js, sessionRequest(2, "x")); err != nil {
		t.Fatal(err)
	}
	code, b := post("oz0s_key", "application/json", js.Bytes())
	if code != http.StatusOK || !strings.Contains(string(b), `"rejectedSpans":"1"`) {
		t.Fatalf("over budget: %d %s", code, b)
	}
	if len(forwarded) != 2 || len(forwardedSpans) != 3 {
		t.Errorf("forwarded %d spans in %d requests, want the 3 kept in 2", len(forwardedSpans), len(forwarded))
	}
	// Then the job's spans are refused before they are read.
	code, b = post("oz0s_key", "application/json", js.Bytes())
	if code != http.StatusForbidden || !strings.Contains(string(b), "the job's spans went past its budget (a job keeps at most 3 spans and 8 MiB of them): its later spans are refused") {
		t.Errorf("past the budget: %d %s", code, b)
	}
	if len(kept["job_1"]) != 3 || len(notes) != 1 {
		t.Errorf("kept %d spans (budget 3), notes %q", len(kept["job_1"]), notes)
	}
}

// logLines collects a slog logger's messages.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.lines = append(l.lines, strings.TrimSpace(string(p)))
	l.mu.Unlock()
	return len(p), nil
}

func (l *logLines) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

func TestExportToBackend(t *testing.T) {
	var mu sync.Mutex
	var got []*collectorpb.ExportTraceServiceRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		req := &collectorpb.ExportTraceServiceRequest{}
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, req) != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, req)
		mu.Unlock()
	}))
	defer srv.Close()
	rec := guideRecord()
	cfg := Config{Endpoint: srv.URL}
	s, err := Resolve(cfg)
	if err != nil || !s.Enabled || s.Protocol != ProtocolHTTP {
		t.Fatalf("Resolve: %+v %v", s, err)
	}
	e, err := New(cfg, s, func(string) (Record, error) { return rec, nil })
	if err != nil {
		t.Fatal(err)
	}
	e.JobEnded(rec.Job.ID)
	e.Forward(sessionRequest(1, "x").ResourceSpans)
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, req := range got {
		for name := range flatten(req) {
			names[name] = true
		}
	}
	for _, want := range []string{"invoke_agent acme-triage", "chat claude-sonnet-4-5", "execute_tool notify_team", "permission notify_team", "step"} {
		if !names[want] {
			t.Errorf("the backend did not get span %q; it got %v", want, names)
		}
	}
	if e.Dropped() != 0 {
		t.Errorf("dropped %d", e.Dropped())
	}
}

func TestExportBackendAway(t *testing.T) {
	// A port nothing listens on: connections are refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var logs logLines
	rec := guideRecord()
	cfg := Config{Endpoint: "http://" + addr, Log: slog.New(slog.NewTextHandler(&logs, nil))}
	s, _ := Resolve(cfg)
	e, err := New(cfg, s, func(string) (Record, error) { return rec, nil })
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 50 {
		e.JobEnded(rec.Job.ID) // never blocks
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("queueing 50 jobs' export took %v", d)
	}
	if err := e.Close(context.Background()); err != nil && !strings.Contains(err.Error(), "deadline") {
		t.Logf("close: %v", err)
	}
	if e.Dropped() == 0 {
		t.Error("nothing counted as dropped")
	}
	if n := logs.count("the backend does not take traces"); n != 1 {
		t.Errorf("the outage was said %d times, want once: %q", n, logs.lines)
	}
	if n := logs.count("spans were dropped"); n != 1 {
		t.Errorf("the dropped count was said %d times, want once: %q", n, logs.lines)
	}
}

func TestResolve(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for _, c := range []struct {
		cfg     Config
		enabled bool
		proto   string
		errs    string
	}{
		{Config{}, false, ProtocolHTTP, ""},
		{Config{Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318"})}, true, ProtocolHTTP, ""},
		{Config{Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://localhost:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})}, true, ProtocolGRPC, ""},
		{Config{Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318", "OTEL_SDK_DISABLED": "true"})}, false, ProtocolHTTP, ""},
		{Config{Endpoint: "http://localhost:4318", Protocol: "http/json"}, false, "", "http/json is not supported"},
		{Config{Endpoint: "localhost:4318"}, false, "", "want a URL"},
		{Config{Endpoint: "http://x:1", Protocol: "udp"}, false, "", "want http/protobuf or grpc"},
	} {
		s, err := Resolve(c.cfg)
		if c.errs != "" {
			if err == nil || !strings.Contains(err.Error(), c.errs) {
				t.Errorf("%+v: err %v, want %q", c.cfg, err, c.errs)
			}
			continue
		}
		if err != nil || s.Enabled != c.enabled || s.Protocol != c.proto {
			t.Errorf("%+v: %+v %v", c.cfg, s, err)
		}
	}
}

// traceService is an OTLP/gRPC backend that keeps what it is sent.
type traceService struct {
	collectorpb.UnimplementedTraceServiceServer
	mu  sync.Mutex
	got []*collectorpb.ExportTraceServiceRequest
}

func (s *traceService) Export(_ context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	s.mu.Lock()
	s.got = append(s.got, req)
	s.mu.Unlock()
	return &collectorpb.ExportTraceServiceResponse{}, nil
}

func TestExportOverGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	svc := &traceService{}
	collectorpb.RegisterTraceServiceServer(srv, svc)
	go srv.Serve(ln)
	defer srv.Stop()
	rec := guideRecord()
	cfg := Config{Endpoint: "http://" + ln.Addr().String(), Protocol: ProtocolGRPC}
	s, err := Resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(cfg, s, func(string) (Record, error) { return rec, nil })
	if err != nil {
		t.Fatal(err)
	}
	e.JobEnded(rec.Job.ID)
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	svc.mu.Lock()
	defer svc.mu.Unlock()
	names := map[string]bool{}
	for _, req := range svc.got {
		for name := range flatten(req) {
			names[name] = true
		}
	}
	if !names["invoke_agent acme-triage"] || !names["chat claude-sonnet-4-5"] || !names["execute_tool notify_team"] {
		t.Errorf("over gRPC the backend got %v", names)
	}
}
