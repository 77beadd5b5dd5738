package telemetry

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/orchestrator-zero/oz0/api/apiv1"
)

// Record is a job's record as `oz0 job trace` and the calls API have it: what a trace is made of.
type Record struct {
	Job    apiv1.Job
	Events []apiv1.Event
	// Calls are the kept model calls read as conversations, by their model_call event's seq:
	// where a span's response model and finish reasons come from (the meter does not keep them).
	Calls map[int64]*apiv1.Conversation
}

// ReadRecord reads a job's trace (the JSON lines `oz0 job trace` prints) and its model calls
// (GET /api/v1/jobs/{id}/calls; nil when not at hand).
func ReadRecord(traceJSONL io.Reader, calls []apiv1.ModelCall) (Record, error) {
	var rec Record
	br := bufio.NewReaderSize(traceJSONL, 64<<10)
	header := false
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return Record{}, fmt.Errorf("trace line %d: %w", line, err)
		}
		if len(bytes.TrimSpace(b)) > 0 {
			if !header {
				var h struct {
					Version int        `json:"oz0_trace"`
					Job     *apiv1.Job `json:"job"`
				}
				if json.Unmarshal(b, &h) != nil || h.Job == nil || h.Version == 0 {
					return Record{}, fmt.Errorf("trace line %d: not an oz0 trace header", line)
				}
				rec.Job, header = *h.Job, true
			} else {
				var e apiv1.Event
				if jerr := json.Unmarshal(b, &e); jerr != nil {
					return Record{}, fmt.Errorf("trace line %d: %v", line, jerr)
				}
				rec.Events = append(rec.Events, e)
			}
		}
		if err == io.EOF {
			break
		}
	}
	if !header {
		return Record{}, errors.New("trace: empty")
	}
	rec.Calls = map[int64]*apiv1.Conversation{}
	for _, c := range calls {
		if c.Conversation != nil {
			rec.Calls[c.Seq] = c.Conversation
		}
	}
	return rec, nil
}

// Options say what spans carry beyond what is always exported.
type Options struct {
	// Content exports prompt and completion contents: a model call's messages and answer, a tool
	// call's arguments and result, the job's input and output, the says. Off, as the GenAI
	// conventions advise: sizes are exported instead.
	Content bool
}

// The attributes' names beyond the GenAI conventions' are oz0's own, under oz0.
const (
	attrJob    = "oz0.job.id"
	attrPlugin = "oz0.plugin"
	attrStatus = "oz0.job.status"
	attrReason = "oz0.job.reason"
)

// modelCall is what a span reads of a model_call event's data.
type modelCall struct {
	Record              string    `json:"record"`
	Model               string    `json:"model"`
	Format              string    `json:"format"`
	Endpoint            string    `json:"endpoint"`
	Status              int       `json:"status"`
	InputTokens         int64     `json:"input_tokens"`
	OutputTokens        int64     `json:"output_tokens"`
	CacheReadTokens     int64     `json:"cache_read_input_tokens"`
	CacheCreationTokens int64     `json:"cache_creation_input_tokens"`
	CostUSD             *float64  `json:"cost_usd"`
	LatencyMS           float64   `json:"latency_ms"`
	TTFBMS              float64   `json:"ttfb_ms"`
	Streamed            bool      `json:"streamed"`
	Step                int       `json:"step"`
	StartedAt           time.Time `json:"started_at"`
	Refused             string    `json:"refused"`
	Aborted             string    `json:"aborted"`
	Error               string    `json:"error"`
	Replayed            bool      `json:"replayed"`
}

type permission struct {
	ID        string          `json:"id"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Decision  string          `json:"decision"`
	By        string          `json:"by"`
	Reason    string          `json:"reason"`
	Changed   bool            `json:"changed"`
	Result    json.RawMessage `json:"result"`
	Error     string          `json:"error"`
}

// toolCall gathers a tool call's events, from its permission request to its result.
type toolCall struct {
	req, decision, result *apiv1.Event
	p                     permission
}

// Emit makes the spans of rec's job with tracer (one of a TracerProvider with this package's
// IDs: NewProvider), on their real times: the job's span and, under it, a span per model call
// and per tool call; says, logs and stray output are the job span's events. The spans a session
// sent (span events) are not made again: they were forwarded as they came.
func Emit(tracer trace.Tracer, rec Record, opts Options) {
	j := rec.Job
	traceID := TraceID(j.ID)
	start, end := jobTimes(rec)
	ctx, root := tracer.Start(withIDs(context.Background(), traceID, SpanID(j.ID, "")), "invoke_agent "+j.Agent,
		trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(jobAttrs(j, opts)...))
	tools := map[string]*toolCall{}
	var order []*toolCall
	for i := range rec.Events {
		ev := &rec.Events[i]
		switch ev.Type {
		case apiv1.EventModelCall:
			emitModelCall(ctx, tracer, j.ID, ev, rec.Calls[ev.Seq], opts)
		case apiv1.EventPermissionRequest, apiv1.EventPermissionDecision, apiv1.EventToolResult:
			var p permission
			if json.Unmarshal(ev.Data, &p) != nil {
				continue
			}
			tc := tools[p.ID]
			if tc == nil {
				tc = &toolCall{}
				tools[p.ID] = tc
				order = append(order, tc)
			}
			switch ev.Type {
			case apiv1.EventPermissionRequest:
				tc.req = ev
				tc.p.ID, tc.p.Tool, tc.p.Arguments = p.ID, p.Tool, p.Arguments
			case apiv1.EventPermissionDecision:
				tc.decision = ev
				tc.p.ID, tc.p.Tool = p.ID, cmpStr(tc.p.Tool, p.Tool)
				tc.p.Decision, tc.p.By, tc.p.Reason, tc.p.Changed = p.Decision, p.By, p.Reason, p.Changed
			default:
				tc.result = ev
				tc.p.ID, tc.p.Tool = p.ID, cmpStr(tc.p.Tool, p.Tool)
				tc.p.Result, tc.p.Error = p.Result, p.Error
			}
		case apiv1.EventSpan:
		default:
			root.AddEvent(ev.Type, trace.WithTimestamp(ev.Time), trace.WithAttributes(eventAttrs(ev, opts)...))
		}
	}
	for _, tc := range order {
		emitToolCall(ctx, tracer, j.ID, tc, end, opts)
	}
	if failed(j.Status) {
		root.SetStatus(codes.Error, cmpStr(j.Reason, string(j.Status)))
	} else if j.Status == apiv1.StatusSucceeded {
		root.SetStatus(codes.Ok, "")
	}
	root.End(trace.WithTimestamp(end))
}

func failed(st apiv1.Status) bool {
	return st == apiv1.StatusFailed || st == apiv1.StatusTimedOut || st == apiv1.StatusInterrupted || st == apiv1.StatusCancelled
}

// jobTimes are when the job's span starts (when it was submitted: its wait in the queue is in
// it) and ends (its end, else its last event).
func jobTimes(rec Record) (start, end time.Time) {
	start, end = rec.Job.CreatedAt, rec.Job.EndedAt
	if n := len(rec.Events); end.IsZero() && n > 0 {
		end = rec.Events[n-1].Time
	}
	if end.Before(start) {
		end = start
	}
	return start, end
}

func jobAttrs(j apiv1.Job, opts Options) []attribute.KeyValue {
	a := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.agent.name", j.Agent),
		attribute.String(attrJob, j.ID),
		attribute.String(attrStatus, string(j.Status)),
		attribute.Int("oz0.job.input.bytes", len(j.InputText)),
		attribute.Int64("gen_ai.usage.input_tokens", j.Usage.InputTokens),
		attribute.Int64("gen_ai.usage.output_tokens", j.Usage.OutputTokens),
		attribute.Int64("oz0.usage.model_calls", j.Usage.ModelCalls),
		attribute.Int64("oz0.usage.cache_read_input_tokens", j.Usage.CacheReadTokens),
		attribute.Int64("oz0.usage.cache_creation_input_tokens", j.Usage.CacheCreationTokens),
		attribute.Float64("oz0.usage.cost_usd", j.Usage.CostUSD),
	}
	if j.Plugin != "" {
		a = append(a, attribute.String(attrPlugin, j.Plugin))
	}
	if j.ModelRecord != "" {
		a = append(a, attribute.String("oz0.model.record", j.ModelRecord))
	}
	if j.ModelName != "" {
		a = append(a, attribute.String("gen_ai.request.model", j.ModelName))
	}
	if j.Reason != "" {
		a = append(a, attribute.String(attrReason, j.Reason))
	}
	if !j.StartedAt.IsZero() {
		a = append(a, attribute.Float64("oz0.job.queued_ms", float64(j.StartedAt.Sub(j.CreatedAt).Microseconds())/1000))
	}
	if opts.Content {
		a = append(a, attribute.String("oz0.job.input", j.InputText))
		if len(j.Output) > 0 {
			a = append(a, attribute.String("oz0.job.output", string(j.Output)))
		}
	}
	return a
}

// eventAttrs are the attributes of the job span's event for ev: a say's text (with content),
// a log's level and message, a line of stray output or stderr, a status change, an error.
func eventAttrs(ev *apiv1.Event, opts Options) []attribute.KeyValue {
	a := []attribute.KeyValue{attribute.Int64("oz0.seq", ev.Seq)}
	var d map[string]json.RawMessage
	if json.Unmarshal(ev.Data, &d) != nil {
		return a
	}
	str := func(k string) string {
		var s string
		if json.Unmarshal(d[k], &s) != nil {
			return ""
		}
		return s
	}
	add := func(name, k string) {
		if s := str(k); s != "" {
			a = append(a, attribute.String(name, s))
		}
	}
	switch ev.Type {
	case apiv1.EventSay:
		a = append(a, attribute.Int("oz0.say.bytes", len(str("text"))))
		if opts.Content {
			add("oz0.say.text", "text")
		}
	case apiv1.EventResult:
		a = append(a, attribute.Int("oz0.result.bytes", len(d["output"])))
		if opts.Content {
			a = append(a, attribute.String("oz0.result.output", string(d["output"])))
		}
	case apiv1.EventStatus:
		add("oz0.status", "status")
		add("oz0.status.from", "from")
		add("oz0.status.reason", "reason")
	case apiv1.EventLog:
		add("oz0.log.level", "level")
		add("oz0.log.message", "message")
		add("oz0.log.line", "line")
	case apiv1.EventStrayOutput, apiv1.EventStderr:
		add("oz0.line", "line")
		add("oz0.note", "note")
		add("oz0.tail", "tail")
	case apiv1.EventViolation:
		add("oz0.violation.rule", "rule")
		add("oz0.violation.message", "message")
		add("oz0.line", "line")
	case apiv1.EventError:
		add("oz0.error.message", "message")
	default:
		a = append(a, attribute.String("oz0.data", string(ev.Data)))
	}
	return a
}

// genAISystem is the GenAI conventions' name of the provider a call's format speaks to.
func genAISystem(format string) string {
	switch {
	case strings.HasPrefix(format, "anthropic"):
		return "anthropic"
	case strings.HasPrefix(format, "openai"):
		return "openai"
	}
	return format
}

func emitModelCall(ctx context.Context, tracer trace.Tracer, job string, ev *apiv1.Event, conv *apiv1.Conversation, opts Options) {
	var m modelCall
	if json.Unmarshal(ev.Data, &m) != nil {
		return
	}
	latency := time.Duration(m.LatencyMS * float64(time.Millisecond))
	start := m.StartedAt
	if start.IsZero() {
		start = ev.Time.Add(-latency)
	}
	op := "chat"
	if m.Endpoint == "models" || m.Endpoint == "count_tokens" {
		op = m.Endpoint
	}
	system := genAISystem(m.Format)
	a := []attribute.KeyValue{
		attribute.String("gen_ai.system", system),
		attribute.String("gen_ai.provider.name", system),
		attribute.String("gen_ai.operation.name", op),
		attribute.String("gen_ai.request.model", m.Model),
		attribute.Int64("gen_ai.usage.input_tokens", m.InputTokens),
		attribute.Int64("gen_ai.usage.output_tokens", m.OutputTokens),
		attribute.String("oz0.model_call.record", m.Record),
		attribute.Int("oz0.model_call.step", m.Step),
		attribute.Int64("oz0.seq", ev.Seq),
		attribute.Int("http.response.status_code", m.Status),
		attribute.Bool("oz0.model_call.streamed", m.Streamed),
		attribute.Float64("oz0.model_call.ttfb_ms", m.TTFBMS),
	}
	if m.CacheReadTokens > 0 {
		a = append(a, attribute.Int64("gen_ai.usage.cache_read.input_tokens", m.CacheReadTokens))
	}
	if m.CacheCreationTokens > 0 {
		a = append(a, attribute.Int64("gen_ai.usage.cache_creation.input_tokens", m.CacheCreationTokens))
	}
	if m.CostUSD != nil {
		a = append(a, attribute.Float64("oz0.model_call.cost_usd", *m.CostUSD))
	}
	if m.Replayed {
		a = append(a, attribute.Bool("oz0.model_call.replayed", true))
	}
	respModel := m.Model
	if conv != nil && conv.Answer != nil {
		if conv.Answer.Model != "" {
			respModel = conv.Answer.Model
		}
		if conv.Answer.StopReason != "" {
			a = append(a, attribute.StringSlice("gen_ai.response.finish_reasons", []string{conv.Answer.StopReason}))
		}
		if opts.Content {
			if b, err := json.Marshal(conv.Messages); err == nil {
				a = append(a, attribute.String("gen_ai.input.messages", string(b)))
			}
			if conv.System != "" {
				a = append(a, attribute.String("gen_ai.system_instructions", conv.System))
			}
			if b, err := json.Marshal(conv.Answer.Blocks); err == nil {
				a = append(a, attribute.String("gen_ai.output.messages", string(b)))
			}
		}
	}
	if m.Status < 400 && m.Refused == "" && m.Error == "" {
		a = append(a, attribute.String("gen_ai.response.model", respModel))
	}
	name := op
	if m.Model != "" {
		name += " " + m.Model
	}
	_, sp := tracer.Start(withIDs(ctx, TraceID(job), SpanID(job, "seq:"+strconv.FormatInt(ev.Seq, 10))), name,
		trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(a...))
	switch {
	case m.Refused != "":
		sp.SetAttributes(attribute.String("oz0.model_call.refused", m.Refused), attribute.String("error.type", "refused"))
		sp.SetStatus(codes.Error, "refused: "+m.Refused)
	case m.Aborted != "":
		sp.SetAttributes(attribute.String("oz0.model_call.aborted", m.Aborted), attribute.String("error.type", "aborted"))
		sp.SetStatus(codes.Error, "aborted: "+m.Aborted)
	case m.Error != "":
		sp.SetAttributes(attribute.String("error.type", "gateway"))
		sp.SetStatus(codes.Error, m.Error)
	case m.Status >= 400:
		sp.SetAttributes(attribute.String("error.type", strconv.Itoa(m.Status)))
		sp.SetStatus(codes.Error, "status "+strconv.Itoa(m.Status))
	}
	sp.End(trace.WithTimestamp(start.Add(latency)))
}

// emitToolCall makes a tool call's span, from its permission request to its result (or its
// refusal, or the job's end), with the decision and who made it; its child span is the wait for
// the decision (a person's, a hook's).
func emitToolCall(ctx context.Context, tracer trace.Tracer, job string, tc *toolCall, jobEnd time.Time, opts Options) {
	first := tc.req
	if first == nil {
		first = tc.decision
	}
	if first == nil {
		first = tc.result
	}
	start := first.Time
	end := jobEnd
	switch {
	case tc.result != nil:
		end = tc.result.Time
	case tc.decision != nil && tc.p.Decision != "allow":
		end = tc.decision.Time
	}
	if end.Before(start) {
		end = start
	}
	p := tc.p
	a := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", p.Tool),
		attribute.String("gen_ai.tool.call.id", p.ID),
		attribute.Int64("oz0.seq", first.Seq),
	}
	decided := []attribute.KeyValue{}
	if tc.decision != nil {
		decided = append(decided, attribute.String("oz0.permission.decision", p.Decision), attribute.String("oz0.permission.by", p.By))
		if p.Reason != "" {
			decided = append(decided, attribute.String("oz0.permission.reason", p.Reason))
		}
		if p.Changed {
			decided = append(decided, attribute.Bool("oz0.permission.arguments_changed", true))
		}
	} else {
		decided = append(decided, attribute.String("oz0.permission.decision", "none"))
	}
	a = append(a, decided...)
	if opts.Content {
		if len(p.Arguments) > 0 {
			a = append(a, attribute.String("gen_ai.tool.call.arguments", string(p.Arguments)))
		}
		if len(p.Result) > 0 {
			a = append(a, attribute.String("gen_ai.tool.call.result", string(p.Result)))
		}
	}
	part := "tool:" + p.ID
	tctx, sp := tracer.Start(withIDs(ctx, TraceID(job), SpanID(job, part)), "execute_tool "+p.Tool,
		trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(a...))
	if tc.req != nil && tc.decision != nil {
		_, w := tracer.Start(withIDs(tctx, TraceID(job), SpanID(job, part+":permission")), "permission "+p.Tool,
			trace.WithTimestamp(tc.req.Time), trace.WithAttributes(decided...))
		w.End(trace.WithTimestamp(tc.decision.Time))
		sp.AddEvent("permission_decision", trace.WithTimestamp(tc.decision.Time), trace.WithAttributes(decided...))
	}
	switch {
	case tc.decision != nil && p.Decision != "allow":
		sp.SetAttributes(attribute.String("error.type", "denied"))
		sp.SetStatus(codes.Error, "denied: "+p.Reason)
	case p.Error != "":
		sp.SetAttributes(attribute.String("error.type", "tool_error"))
		sp.SetStatus(codes.Error, p.Error)
	}
	sp.End(trace.WithTimestamp(end))
}

func cmpStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
