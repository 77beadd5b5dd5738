// Package telemetry is oz0 dev's OpenTelemetry: a job's record as an OTLP trace (one trace per
// job, a root span for the job, a span per model call and per tool call), exported with the
// OpenTelemetry SDK to the backend the standard OTEL_EXPORTER_OTLP_* variables (or oz0 dev's
// flags) name; the OTLP/HTTP receiver sessions send their framework's spans to, which stores them
// with the job and forwards them; and the job's trace as OTLP JSON (`oz0 job trace --otlp`).
//
// A job's IDs are derived from its ID: the trace ID and the job span's ID are known before the
// job runs, so a session is told its parent (TRACEPARENT) when it starts, and a span exported
// twice (`oz0 job trace --otlp` after oz0 dev exported it) is the same span.
package telemetry

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"

	"go.opentelemetry.io/otel/trace"
)

// TraceID is the trace ID of job's trace.
func TraceID(job string) trace.TraceID {
	var id trace.TraceID
	sum := sha256.Sum256([]byte("oz0 trace\x00" + job))
	copy(id[:], sum[:])
	if !id.IsValid() {
		id[0] = 1
	}
	return id
}

// SpanID is the ID of a span of job's trace: part "" is the job's own span, others name the
// event the span is made of.
func SpanID(job, part string) trace.SpanID {
	var id trace.SpanID
	sum := sha256.Sum256([]byte("oz0 span\x00" + job + "\x00" + part))
	copy(id[:], sum[:])
	if !id.IsValid() {
		id[0] = 1
	}
	return id
}

// Traceparent is the W3C trace context (the TRACEPARENT variable, the traceparent header) that
// names job's span as the parent: what a session's own spans are children of.
func Traceparent(job string) string {
	t, s := TraceID(job), SpanID(job, "")
	return "00-" + hex.EncodeToString(t[:]) + "-" + hex.EncodeToString(s[:]) + "-01"
}

// idKey carries the IDs of the next span a tracer starts (withIDs).
type idKey struct{}

type ids struct {
	trace trace.TraceID
	span  trace.SpanID
}

// withIDs makes the span started with ctx have these IDs.
func withIDs(ctx context.Context, t trace.TraceID, s trace.SpanID) context.Context {
	return context.WithValue(ctx, idKey{}, ids{t, s})
}

// idGenerator gives a span the IDs its context carries (withIDs), else random ones.
type idGenerator struct{}

func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if v, ok := ctx.Value(idKey{}).(ids); ok {
		return v.trace, v.span
	}
	var t trace.TraceID
	var s trace.SpanID
	rand.Read(t[:])
	rand.Read(s[:])
	return t, s
}

func (idGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if v, ok := ctx.Value(idKey{}).(ids); ok {
		return v.span
	}
	var s trace.SpanID
	rand.Read(s[:])
	return s
}
