package telemetry

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/orchestrator-zero/oz0/api/apiv1"
)

// SpanData is the data of a span event (apiv1.EventSpan): a span a session sent, as the store
// keeps it and the UI's timeline reads it.
type SpanData struct {
	TraceID       string         `json:"trace_id"`
	SpanID        string         `json:"span_id"`
	ParentSpanID  string         `json:"parent_span_id,omitempty"`
	Name          string         `json:"name"`
	Kind          string         `json:"kind,omitempty"` // internal, server, client, producer, consumer
	Start         time.Time      `json:"start"`
	End           time.Time      `json:"end"`
	Service       string         `json:"service,omitempty"` // the resource's service.name
	Scope         string         `json:"scope,omitempty"`   // the instrumentation scope: the framework's tracer
	Status        string         `json:"status,omitempty"`  // ok, error; unset is left out
	StatusMessage string         `json:"status_message,omitempty"`
	Attributes    map[string]any `json:"attributes,omitempty"`
	Events        []SpanEvent    `json:"events,omitempty"`
}

// SpanEvent is an event of a SpanData.
type SpanEvent struct {
	Name       string         `json:"name"`
	Time       time.Time      `json:"time"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

var kinds = map[tracepb.Span_SpanKind]string{
	tracepb.Span_SPAN_KIND_INTERNAL: "internal", tracepb.Span_SPAN_KIND_SERVER: "server",
	tracepb.Span_SPAN_KIND_CLIENT: "client", tracepb.Span_SPAN_KIND_PRODUCER: "producer",
	tracepb.Span_SPAN_KIND_CONSUMER: "consumer",
}

// SpansData turns received spans into the data of their span events, in the order they came.
func SpansData(rs []*tracepb.ResourceSpans) []SpanData {
	var out []SpanData
	for _, r := range rs {
		service := serviceName(r)
		for _, ss := range r.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				out = append(out, spanData(service, ss.GetScope().GetName(), sp))
			}
		}
	}
	return out
}

// serviceName is the service.name of r's resource.
func serviceName(r *tracepb.ResourceSpans) string {
	service := ""
	for _, kv := range r.GetResource().GetAttributes() {
		if kv.GetKey() == "service.name" {
			service = kv.GetValue().GetStringValue()
		}
	}
	return service
}

// spanData is the data of sp's span event, sp of service and scope.
func spanData(service, scope string, sp *tracepb.Span) SpanData {
	d := SpanData{
		TraceID: hex.EncodeToString(sp.GetTraceId()), SpanID: hex.EncodeToString(sp.GetSpanId()),
		Name: sp.GetName(), Kind: kinds[sp.GetKind()],
		Start:   time.Unix(0, int64(sp.GetStartTimeUnixNano())).UTC(),
		End:     time.Unix(0, int64(sp.GetEndTimeUnixNano())).UTC(),
		Service: service, Scope: scope,
		Attributes: attrMap(sp.GetAttributes()),
	}
	if p := sp.GetParentSpanId(); len(p) > 0 {
		d.ParentSpanID = hex.EncodeToString(p)
	}
	switch sp.GetStatus().GetCode() {
	case tracepb.Status_STATUS_CODE_OK:
		d.Status = "ok"
	case tracepb.Status_STATUS_CODE_ERROR:
		d.Status = "error"
	}
	d.StatusMessage = sp.GetStatus().GetMessage()
	for _, ev := range sp.GetEvents() {
		d.Events = append(d.Events, SpanEvent{Name: ev.GetName(), Time: time.Unix(0, int64(ev.GetTimeUnixNano())).UTC(), Attributes: attrMap(ev.GetAttributes())})
	}
	return d
}

func attrMap(kvs []*commonpb.KeyValue) map[string]any {
	if len(kvs) == 0 {
		return nil
	}
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = anyValue(kv.GetValue())
	}
	return m
}

func anyValue(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		if math.IsInf(x.DoubleValue, 0) || math.IsNaN(x.DoubleValue) {
			return nil
		}
		return x.DoubleValue
	case *commonpb.AnyValue_ArrayValue:
		out := make([]any, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, anyValue(e))
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		return attrMap(x.KvlistValue.GetValues())
	case *commonpb.AnyValue_BytesValue:
		return base64.StdEncoding.EncodeToString(x.BytesValue)
	}
	return nil
}

// toAnyValue is anyValue's inverse, for the JSON a span event holds.
func toAnyValue(v any) *commonpb.AnyValue {
	switch x := v.(type) {
	case string:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: x}}
	case bool:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: x}}
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(x)}}
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: x}}
	case []any:
		arr := &commonpb.ArrayValue{}
		for _, e := range x {
			arr.Values = append(arr.Values, toAnyValue(e))
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}
	case map[string]any:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: toKeyValues(x)}}}
	}
	return &commonpb.AnyValue{}
}

func toKeyValues(m map[string]any) []*commonpb.KeyValue {
	keys := slices.Sorted(maps.Keys(m))
	out := make([]*commonpb.KeyValue, 0, len(m))
	for _, k := range keys {
		out = append(out, &commonpb.KeyValue{Key: k, Value: toAnyValue(m[k])})
	}
	return out
}

// spanEventsPB turns a job's span events back into OTLP, a ResourceSpans a service, a ScopeSpans
// a scope, in the order they came.
func spanEventsPB(events []apiv1.Event) []*tracepb.ResourceSpans {
	var out []*tracepb.ResourceSpans
	byService := map[string]*tracepb.ResourceSpans{}
	byScope := map[[2]string]*tracepb.ScopeSpans{}
	for _, ev := range events {
		if ev.Type != apiv1.EventSpan {
			continue
		}
		var d SpanData
		if json.Unmarshal(ev.Data, &d) != nil {
			continue
		}
		rs := byService[d.Service]
		if rs == nil {
			rs = &tracepb.ResourceSpans{Resource: &resourcepb.Resource{Attributes: toKeyValues(map[string]any{"service.name": d.Service})}}
			byService[d.Service] = rs
			out = append(out, rs)
		}
		ss := byScope[[2]string{d.Service, d.Scope}]
		if ss == nil {
			ss = &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: d.Scope}}
			byScope[[2]string{d.Service, d.Scope}] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		sp := &tracepb.Span{Name: d.Name, Attributes: toKeyValues(d.Attributes),
			StartTimeUnixNano: uint64(d.Start.UnixNano()), EndTimeUnixNano: uint64(d.End.UnixNano())}
		sp.TraceId, _ = hex.DecodeString(d.TraceID)
		sp.SpanId, _ = hex.DecodeString(d.SpanID)
		sp.ParentSpanId, _ = hex.DecodeString(d.ParentSpanID)
		for k, name := range kinds {
			if name == d.Kind {
				sp.Kind = k
			}
		}
		switch d.Status {
		case "ok":
			sp.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK}
		case "error":
			sp.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: d.StatusMessage}
		}
		for _, e := range d.Events {
			sp.Events = append(sp.Events, &tracepb.Span_Event{Name: e.Name, TimeUnixNano: uint64(e.Time.UnixNano()), Attributes: toKeyValues(e.Attributes)})
		}
		ss.Spans = append(ss.Spans, sp)
	}
	return out
}

// collectClient is an OTLP client that keeps what it is given: the SDK's own transform, without
// a network.
type collectClient struct {
	mu sync.Mutex
	rs []*tracepb.ResourceSpans
}

func (c *collectClient) Start(context.Context) error { return nil }
func (c *collectClient) Stop(context.Context) error  { return nil }
func (c *collectClient) UploadTraces(_ context.Context, rs []*tracepb.ResourceSpans) error {
	c.mu.Lock()
	c.rs = append(c.rs, rs...)
	c.mu.Unlock()
	return nil
}

// Request is rec's job's trace as an OTLP export request: the job's spans (Emit), then the spans
// its session sent.
func Request(rec Record, opts Options, serviceVersion string) (*collectorpb.ExportTraceServiceRequest, error) {
	c := &collectClient{}
	exp, err := otlptrace.New(context.Background(), c)
	if err != nil {
		return nil, err
	}
	res := resource.NewSchemaless(attribute.String("service.name", "oz0"), attribute.String("service.version", serviceVersion))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithMaxQueueSize(1<<20), sdktrace.WithBlocking()),
		sdktrace.WithResource(res), sdktrace.WithIDGenerator(idGenerator{}), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	Emit(tp.Tracer("github.com/orchestrator-zero/oz0/devserver"), rec, opts)
	if err := tp.Shutdown(context.Background()); err != nil {
		return nil, err
	}
	rs := mergeResourceSpans(c.rs)
	session := spanEventsPB(rec.Events)
	if !opts.Content {
		StripContent(session)
	}
	return &collectorpb.ExportTraceServiceRequest{ResourceSpans: append(rs, session...)}, nil
}

// mergeResourceSpans puts the batches' spans of one resource and scope together.
func mergeResourceSpans(batches []*tracepb.ResourceSpans) []*tracepb.ResourceSpans {
	if len(batches) == 0 {
		return nil
	}
	first := batches[0]
	scopes := map[string]*tracepb.ScopeSpans{}
	merged := &tracepb.ResourceSpans{Resource: first.Resource, SchemaUrl: first.SchemaUrl}
	for _, b := range batches {
		for _, ss := range b.ScopeSpans {
			into := scopes[ss.GetScope().GetName()]
			if into == nil {
				into = &tracepb.ScopeSpans{Scope: ss.Scope, SchemaUrl: ss.SchemaUrl}
				scopes[ss.GetScope().GetName()] = into
				merged.ScopeSpans = append(merged.ScopeSpans, into)
			}
			into.Spans = append(into.Spans, ss.Spans...)
		}
	}
	for _, ss := range merged.ScopeSpans {
		sort.SliceStable(ss.Spans, func(i, j int) bool { return ss.Spans[i].StartTimeUnixNano < ss.Spans[j].StartTimeUnixNano })
	}
	return []*tracepb.ResourceSpans{merged}
}

// WriteJSON writes req as OTLP JSON: protojson with the IDs in hex and the enums as numbers, as
// the OTLP/HTTP JSON encoding has them (a collector's or a backend's file import reads it).
func WriteJSON(w io.Writer, req *collectorpb.ExportTraceServiceRequest) error {
	b, err := protojson.MarshalOptions{UseEnumNumbers: true}.Marshal(req)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	recodeIDs(v, func(s string) string {
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return s
		}
		return hex.EncodeToString(raw)
	})
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// ReadJSON reads an OTLP JSON export request (IDs in hex).
//
// protojson reads the request in one pass, without a copy: OTLP JSON writes the trace and span IDs
// in hex where protojson reads bytes as base64. The 2n hex digits of an n-byte ID are valid base64
// of 3n/2 bytes, which written back in base64 are the same digits (2n is a multiple of 4: no
// padding, no bits left over), so the ID is read again from them (hexID). An ID sent in base64, as
// protojson writes it, has its own length and stays as read.
func ReadJSON(b []byte) (*collectorpb.ExportTraceServiceRequest, error) {
	req := &collectorpb.ExportTraceServiceRequest{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, req); err != nil {
		return nil, err
	}
	for _, r := range req.ResourceSpans {
		for _, ss := range r.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				sp.TraceId, sp.SpanId, sp.ParentSpanId = hexID(sp.TraceId, 16), hexID(sp.SpanId, 8), hexID(sp.ParentSpanId, 8)
				for _, l := range sp.GetLinks() {
					l.TraceId, l.SpanId = hexID(l.TraceId, 16), hexID(l.SpanId, 8)
				}
			}
		}
	}
	return req, nil
}

// hexID is the n-byte ID whose hex digits protojson read as base64 into b (ReadJSON); b itself
// when it is not such a reading.
func hexID(b []byte, n int) []byte {
	if len(b) != n*3/2 {
		return b
	}
	id, err := hex.DecodeString(base64.StdEncoding.EncodeToString(b))
	if err != nil {
		return b
	}
	return id
}

// recodeIDs rewrites the values of the trace, span and parent span IDs in v, an OTLP request as
// JSON.
func recodeIDs(v any, f func(string) string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && (k == "traceId" || k == "spanId" || k == "parentSpanId") {
				x[k] = f(s)
				continue
			}
			recodeIDs(e, f)
		}
	case []any:
		for _, e := range x {
			recodeIDs(e, f)
		}
	}
}

// contentKeys are the attributes that hold prompt and completion contents, by the GenAI
// conventions (old and new) and the frameworks' own: not sent unless the user asks.
var contentKeys = []string{
	"gen_ai.prompt", "gen_ai.completion", "gen_ai.input.messages", "gen_ai.output.messages",
	"gen_ai.system_instructions", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result",
	"gen_ai.tool.definitions", "llm.input_messages", "llm.output_messages", "input.value", "output.value",
	"gcp.vertex.agent.llm_request", "gcp.vertex.agent.llm_response", "gcp.vertex.agent.tool_call_args",
	"gcp.vertex.agent.tool_response", "gcp.vertex.agent.data",
}

// contentEvents are the span events that carry messages (the GenAI conventions' older form).
var contentEvents = []string{"gen_ai.user.message", "gen_ai.assistant.message", "gen_ai.system.message",
	"gen_ai.tool.message", "gen_ai.choice", "gen_ai.client.inference.operation.details"}

func isContentKey(k string) bool {
	for _, c := range contentKeys {
		if k == c || strings.HasPrefix(k, c+".") {
			return true
		}
	}
	return false
}

// StripContent removes prompt and completion contents from spans: the attributes that hold them
// and the events that carry messages.
func StripContent(rs []*tracepb.ResourceSpans) {
	strip := func(kvs []*commonpb.KeyValue) []*commonpb.KeyValue {
		out := kvs[:0]
		for _, kv := range kvs {
			if !isContentKey(kv.GetKey()) {
				out = append(out, kv)
			}
		}
		return out
	}
	for _, r := range rs {
		for _, ss := range r.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				sp.Attributes = strip(sp.Attributes)
				evs := sp.Events[:0]
				for _, ev := range sp.Events {
					if !containsStr(contentEvents, ev.GetName()) {
						ev.Attributes = strip(ev.Attributes)
						evs = append(evs, ev)
					}
				}
				sp.Events = evs
			}
		}
	}
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Mask applies mask to every text of spans: names, attribute values, events, status messages.
func Mask(rs []*tracepb.ResourceSpans, mask func([]byte) []byte) {
	if mask == nil {
		return
	}
	str := func(s string) string { return string(mask([]byte(s))) }
	var val func(v *commonpb.AnyValue)
	kvs := func(l []*commonpb.KeyValue) {
		for _, kv := range l {
			val(kv.GetValue())
		}
	}
	val = func(v *commonpb.AnyValue) {
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			x.StringValue = str(x.StringValue)
		case *commonpb.AnyValue_ArrayValue:
			for _, e := range x.ArrayValue.GetValues() {
				val(e)
			}
		case *commonpb.AnyValue_KvlistValue:
			kvs(x.KvlistValue.GetValues())
		}
	}
	for _, r := range rs {
		kvs(r.GetResource().GetAttributes())
		for _, ss := range r.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				sp.Name = str(sp.Name)
				kvs(sp.Attributes)
				for _, ev := range sp.Events {
					ev.Name = str(ev.Name)
					kvs(ev.Attributes)
				}
				for _, l := range sp.Links {
					kvs(l.Attributes)
				}
				if sp.Status != nil {
					sp.Status.Message = str(sp.Status.Message)
				}
			}
		}
	}
}
