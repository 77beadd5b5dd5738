package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// The protocols an export speaks (OTEL_EXPORTER_OTLP_PROTOCOL's values).
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// ContentEnv is the variable that turns on the export of prompt and completion contents, as the
// GenAI instrumentations name it.
const ContentEnv = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

// Config says where a job's trace goes. The endpoint, protocol and headers are the standard
// variables' (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, …_HEADERS,
// …_PROTOCOL, …_TIMEOUT, …_CERTIFICATE, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES), which the
// SDK's exporters read; Endpoint and Protocol (oz0 dev's flags) win over them.
type Config struct {
	Endpoint string // the base URL, as OTEL_EXPORTER_OTLP_ENDPOINT ("" the variables')
	Protocol string // ProtocolHTTP or ProtocolGRPC ("" the variables', else ProtocolHTTP)
	Content  bool   // Options.Content; also on when ContentEnv is true
	Getenv   func(string) string
	Log      *slog.Logger
	Version  string // oz0's, the resource's service.version
	// QueueSize bounds the spans waiting to be sent; past it they are dropped, counted. 0 is
	// 4096.
	QueueSize int
}

// Settings are a Config resolved against the environment.
type Settings struct {
	Enabled  bool
	Endpoint string // as said, for the banner
	Protocol string
	Content  bool
	Why      string // why it is off when it would otherwise be on (OTEL_SDK_DISABLED)
}

// Resolve says whether and where oz0 dev exports: on when an endpoint is set by the flag or a
// variable, unless OTEL_SDK_DISABLED is true or OTEL_TRACES_EXPORTER is none. A bad flag or
// variable is an error that says which and how to mend it.
func Resolve(cfg Config) (Settings, error) {
	env := cfg.Getenv
	if env == nil {
		env = func(string) string { return "" }
	}
	s := Settings{Endpoint: cfg.Endpoint, Content: cfg.Content || strings.EqualFold(env(ContentEnv), "true")}
	if s.Endpoint == "" {
		s.Endpoint = firstOf(env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), env("OTEL_EXPORTER_OTLP_ENDPOINT"))
	}
	s.Protocol = firstOf(cfg.Protocol, env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), env("OTEL_EXPORTER_OTLP_PROTOCOL"), ProtocolHTTP)
	switch s.Protocol {
	case ProtocolHTTP, ProtocolGRPC:
	case "http/json":
		return Settings{}, errors.New("OTLP protocol http/json is not supported for export: use http/protobuf or grpc (OTEL_EXPORTER_OTLP_PROTOCOL, --otlp-protocol)")
	default:
		return Settings{}, fmt.Errorf("OTLP protocol %q: want http/protobuf or grpc (OTEL_EXPORTER_OTLP_PROTOCOL, --otlp-protocol)", s.Protocol)
	}
	if s.Endpoint == "" {
		return s, nil
	}
	if u, err := url.Parse(s.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Settings{}, fmt.Errorf("OTLP endpoint %q: want a URL such as http://localhost:4318 (http/protobuf) or http://localhost:4317 (grpc)", s.Endpoint)
	}
	if strings.EqualFold(env("OTEL_SDK_DISABLED"), "true") {
		s.Why = "OTEL_SDK_DISABLED is true"
		return s, nil
	}
	if strings.EqualFold(env("OTEL_TRACES_EXPORTER"), "none") {
		s.Why = "OTEL_TRACES_EXPORTER is none"
		return s, nil
	}
	s.Enabled = true
	return s, nil
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// Source reads a job's record, once it has ended.
type Source func(job string) (Record, error)

// Exporter sends each ended job's trace, and the spans sessions sent, to the backend. Nothing it
// does holds up a job: a job's end is queued, its spans are made on the exporter's own goroutine
// and sent in batches by the SDK's batch span processor, whose queue is bounded; what does not fit,
// or what a backend that is away does not take, is dropped and counted. The count is logged once
// an outage is over, or when the exporter closes.
type Exporter struct {
	settings Settings
	log      *slog.Logger
	src      Source
	tp       *sdktrace.TracerProvider
	tracer   trace.Tracer
	client   *countingClient
	ended    atomic.Int64 // spans ended, handed to the batch processor
	handed   atomic.Int64 // spans the batch processor handed to the exporter

	jobs    chan string
	forward chan []*tracepb.ResourceSpans
	stop    chan struct{}
	done    sync.WaitGroup
	lostJob atomic.Int64 // jobs whose trace was not made: the queue of ended jobs was full
	lostFwd atomic.Int64 // spans not forwarded: the forward queue was full
	closed  sync.Once
}

// New makes an exporter with resolved settings s; nil when s is not enabled.
func New(cfg Config, s Settings, src Source) (*Exporter, error) {
	if !s.Enabled {
		return nil, nil
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	client, err := newClient(s)
	if err != nil {
		return nil, err
	}
	e := &Exporter{settings: s, log: log, src: src,
		client: &countingClient{Client: client, log: log, endpoint: s.Endpoint},
		jobs:   make(chan string, 1024), forward: make(chan []*tracepb.ResourceSpans, 256), stop: make(chan struct{})}
	exp, err := otlptrace.New(context.Background(), e.client)
	if err != nil {
		return nil, err
	}
	// The SDK reports each failed export to the global handler, which prints it: the outage is
	// said once, with its count, by countingClient instead.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {}))
	queue := cfg.QueueSize
	if queue <= 0 {
		queue = 4096
	}
	res, err := resource.Merge(
		resource.NewSchemaless(attribute.String("service.name", "oz0"), attribute.String("service.version", cfg.Version)),
		envResource(cfg.Getenv))
	if err != nil {
		return nil, err
	}
	bsp := sdktrace.NewBatchSpanProcessor(&countingExporter{SpanExporter: exp, handed: &e.handed},
		sdktrace.WithMaxQueueSize(queue), sdktrace.WithMaxExportBatchSize(512), sdktrace.WithBatchTimeout(time.Second))
	e.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(&countingProcessor{SpanProcessor: bsp, ended: &e.ended}),
		sdktrace.WithResource(res), sdktrace.WithIDGenerator(idGenerator{}), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	e.tracer = e.tp.Tracer("github.com/orchestrator-zero/oz0/devserver")
	e.done.Add(2)
	go e.runJobs()
	go e.runForward(Options{Content: s.Content})
	return e, nil
}

// envResource is OTEL_SERVICE_NAME's and OTEL_RESOURCE_ATTRIBUTES's resource, read with getenv.
func envResource(getenv func(string) string) *resource.Resource {
	if getenv == nil {
		return resource.Empty()
	}
	var kv []attribute.KeyValue
	for _, pair := range strings.Split(getenv("OTEL_RESOURCE_ATTRIBUTES"), ",") {
		k, v, ok := strings.Cut(pair, "=")
		if !ok || strings.TrimSpace(k) == "" {
			continue
		}
		if uv, err := url.PathUnescape(strings.TrimSpace(v)); err == nil {
			v = uv
		}
		kv = append(kv, attribute.String(strings.TrimSpace(k), v))
	}
	if name := getenv("OTEL_SERVICE_NAME"); name != "" {
		kv = append(kv, attribute.String("service.name", name))
	}
	return resource.NewSchemaless(kv...)
}

// newClient is the OTLP client of s's protocol. The SDK reads the standard variables (endpoint,
// headers, timeout, certificates); the flag's endpoint wins.
func newClient(s Settings) (otlptrace.Client, error) {
	retry := struct {
		initial, max, elapsed time.Duration
	}{500 * time.Millisecond, 2 * time.Second, 5 * time.Second}
	if s.Protocol == ProtocolGRPC {
		opts := []otlptracegrpc.Option{otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: true,
			InitialInterval: retry.initial, MaxInterval: retry.max, MaxElapsedTime: retry.elapsed})}
		if s.Endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(s.Endpoint))
		}
		return otlptracegrpc.NewClient(opts...), nil
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true,
		InitialInterval: retry.initial, MaxInterval: retry.max, MaxElapsedTime: retry.elapsed})}
	if s.Endpoint != "" {
		ep := s.Endpoint
		// A traces endpoint is used as it is; a base endpoint gets the traces path, as the
		// variable's is.
		if !strings.HasSuffix(strings.TrimRight(ep, "/"), "/v1/traces") {
			ep = strings.TrimRight(ep, "/") + "/v1/traces"
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(ep))
	}
	return otlptracehttp.NewClient(opts...), nil
}

// Settings are the exporter's settings.
func (e *Exporter) Settings() Settings { return e.settings }

// JobEnded queues job's trace to be made and sent. It never blocks: when the queue is full, the
// job's trace is dropped, counted.
func (e *Exporter) JobEnded(job string) {
	if e == nil {
		return
	}
	select {
	case e.jobs <- job:
	default:
		e.lostJob.Add(1)
	}
}

// Forward queues spans a session sent, to be sent to the backend. It never blocks: when the queue
// is full, they are dropped, counted.
func (e *Exporter) Forward(rs []*tracepb.ResourceSpans) {
	if e == nil || len(rs) == 0 {
		return
	}
	select {
	case e.forward <- rs:
	default:
		e.lostFwd.Add(countSpans(rs))
	}
}

func (e *Exporter) runJobs() {
	defer e.done.Done()
	for {
		select {
		case <-e.stop:
			return
		case job := <-e.jobs:
			rec, err := e.src(job)
			if err != nil {
				e.log.Warn("otlp: cannot read the job's record to export it", "job", job, "err", err)
				continue
			}
			Emit(e.tracer, rec, Options{Content: e.settings.Content})
		}
	}
}

func (e *Exporter) runForward(opts Options) {
	defer e.done.Done()
	for {
		select {
		case <-e.stop:
			return
		case rs := <-e.forward:
			if !opts.Content {
				StripContent(rs)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = e.client.UploadTraces(ctx, rs) // counted, and said, by the client
			cancel()
		}
	}
}

// Flush sends what is queued now; for tests and for a clean stop.
func (e *Exporter) Flush(ctx context.Context) error {
	for len(e.jobs) > 0 || len(e.forward) > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return e.tp.ForceFlush(ctx)
}

// Dropped is how many spans were not sent: dropped from the queue, or not taken by the backend.
func (e *Exporter) Dropped() int64 {
	return e.ended.Load() - e.handed.Load() + e.client.dropped.Load() + e.lostFwd.Load()
}

// Close sends what is queued, for at most ctx's time, and stops; what was dropped is logged.
func (e *Exporter) Close(ctx context.Context) error {
	if e == nil {
		return nil
	}
	var err error
	e.closed.Do(func() {
		flushCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_ = e.Flush(flushCtx)
		close(e.stop)
		e.done.Wait()
		err = e.tp.Shutdown(flushCtx)
		if n, jobs := e.Dropped()-e.client.reported.Load(), e.lostJob.Load(); n > 0 || jobs > 0 {
			e.log.Warn("otlp: spans were dropped", "endpoint", e.settings.Endpoint, "spans", n, "jobs", jobs)
		}
	})
	return err
}

// countingClient counts what it sends and what the backend did not take, and says an outage once:
// when it starts, and with its count when it ends.
type countingClient struct {
	otlptrace.Client
	log      *slog.Logger
	endpoint string
	mu       sync.Mutex
	away     bool
	sent     atomic.Int64
	dropped  atomic.Int64
	reported atomic.Int64 // the dropped spans already said
	awayAt   int64        // dropped when the outage began
}

func (c *countingClient) UploadTraces(ctx context.Context, rs []*tracepb.ResourceSpans) error {
	err := c.Client.UploadTraces(ctx, rs)
	n := countSpans(rs)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.dropped.Add(n)
		if !c.away {
			c.away = true
			c.log.Warn("otlp: the backend does not take traces; spans are dropped while it is away (their count is logged when it is back, or when oz0 dev stops)",
				"endpoint", c.endpoint, "err", err)
		}
		return err
	}
	c.sent.Add(n)
	if c.away {
		c.away = false
		d := c.dropped.Load()
		c.log.Info("otlp: the backend takes traces again", "endpoint", c.endpoint, "dropped", d-c.reported.Load())
		c.reported.Store(d)
	}
	return nil
}

func countSpans(rs []*tracepb.ResourceSpans) int64 {
	var n int64
	for _, r := range rs {
		for _, ss := range r.GetScopeSpans() {
			n += int64(len(ss.GetSpans()))
		}
	}
	return n
}

// countingProcessor counts the spans ended into the batch processor.
type countingProcessor struct {
	sdktrace.SpanProcessor
	ended *atomic.Int64
}

func (p *countingProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	p.ended.Add(1)
	p.SpanProcessor.OnEnd(s)
}

// countingExporter counts the spans the batch processor hands on: the rest were dropped from its
// queue.
type countingExporter struct {
	sdktrace.SpanExporter
	handed *atomic.Int64
}

func (x *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	x.handed.Add(int64(len(spans)))
	return x.SpanExporter.ExportSpans(ctx, spans)
}
