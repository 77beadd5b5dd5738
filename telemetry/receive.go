package telemetry

import (
	"cmp"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/orchestrator-zero/oz0/internal/jsonutil"
	"github.com/orchestrator-zero/oz0/internal/membudget"
	"github.com/orchestrator-zero/oz0/internal/textclip"
)

// The receiver's bounds. A session's spans are events of its job, bounded as its other events
// are: past a job's budget they are refused (the answer's partial success says how many) and the
// job's trace says so once; once a job's spans have gone past it, its later requests are refused
// before they are read.
//
// What a request takes to read is bounded too: its body, decompressed (MaxRequestBytes), and
// parsing it takes several times that. So a session key's requests are read one at a time, in the
// order they came, and over all sessions at most MaxBytesInFlight of decompressed requests are
// read and parsed at once (membudget: taken as the body grows, given back once it is answered,
// and the memory given back to the system after a burst). A request waits for its turn at most
// QueueTimeout, then is answered 503 with Retry-After, which the OTLP exporters retry.
const (
	DefaultMaxSpans = 10000   // spans a job may send
	DefaultMaxBytes = 8 << 20 // bytes of span events a job may keep
	MaxRequestBytes = 4 << 20 // one export request, decompressed
	// DefaultMaxBytesInFlight is two requests of the largest size, hundreds of a framework's
	// usual exports (kilobytes to tens of kilobytes).
	DefaultMaxBytesInFlight = 2 * MaxRequestBytes
	DefaultQueueTimeout     = 30 * time.Second
)

// ReceiverPath is where the receiver is, under the gateway: a session's
// OTEL_EXPORTER_OTLP_ENDPOINT is the gateway's URL and "/otlp", to which the SDKs add
// "/v1/traces".
const ReceiverPath = "/otlp/v1/traces"

// Receiver is the OTLP/HTTP receiver (protobuf or JSON) of the spans sessions send: their
// frameworks' own. The session's key (the gateway's, in the Authorization header as a bearer
// token, or x-api-key) says whose job they are; they are masked, kept as the job's span events
// and forwarded to the user's backend (those kept: what the budget refused goes nowhere).
type Receiver struct {
	// Resolve says whose job a session key is; an error for a key that is not a live session's.
	Resolve func(ctx context.Context, key string) (job string, err error)
	// Keep writes the spans' events (apiv1.EventSpan data, JSON) to the job's record.
	Keep func(job string, spans [][]byte) error
	// Note writes a warning to the job's record (once a job: its spans went over its budget).
	Note func(job, message string)
	// Forward sends the spans on (Exporter.Forward); nil when there is no backend.
	Forward func(rs []*tracepb.ResourceSpans)
	// Mask hides secret values (the secrets store's masker); nil masks nothing.
	Mask func([]byte) []byte
	// MaxSpans and MaxBytes bound what a job keeps; 0 are DefaultMaxSpans and DefaultMaxBytes.
	MaxSpans, MaxBytes int
	// MaxBytesInFlight bounds the decompressed requests read and parsed at once over all
	// sessions; 0 is DefaultMaxBytesInFlight, and it is never less than MaxRequestBytes+1.
	// QueueTimeout is the longest a request waits for its turn; 0 is DefaultQueueTimeout.
	MaxBytesInFlight int64
	QueueTimeout     time.Duration
	// BodyTimeout, when set, is how long a request's body may take to come once its turn has
	// come: the port's read deadline runs from the request's head, which the wait must not eat.
	BodyTimeout time.Duration

	once     sync.Once
	inFlight *membudget.Budget

	mu    sync.Mutex
	used  map[string]*budget // by job
	turns map[string]*turn   // by session key
}

type budget struct {
	spans, bytes int
	full         bool // a span was refused: the job takes no more
}

// turn is a session key's requests: one is read at a time, the others wait in line.
type turn struct {
	sem     *semaphore.Weighted
	refs    int // requests that have the turn or wait for it
	waiting int
}

// Forget drops what job used of its budget, once it has ended.
func (r *Receiver) Forget(job string) {
	r.mu.Lock()
	delete(r.used, job)
	r.mu.Unlock()
}

func (r *Receiver) readBudget() *membudget.Budget {
	r.once.Do(func() {
		// Never less than one request of the largest size, which would wait for room forever.
		size := max(cmp.Or(r.MaxBytesInFlight, DefaultMaxBytesInFlight), MaxRequestBytes+1)
		r.inFlight = membudget.New(size, cmp.Or(r.QueueTimeout, DefaultQueueTimeout))
	})
	return r.inFlight
}

func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "the OTLP receiver takes POST "+ReceiverPath, http.StatusMethodNotAllowed)
		return
	}
	key := req.Header.Get("x-api-key")
	if auth := req.Header.Get("Authorization"); key == "" && len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
		key = strings.TrimSpace(auth[7:])
	}
	job := ""
	if key != "" && r.Resolve != nil {
		job, _ = r.Resolve(req.Context(), key)
	}
	if job == "" {
		http.Error(w, "the OTLP receiver takes the spans of a live session: send its key (OTEL_EXPORTER_OTLP_HEADERS as the session has it)", http.StatusUnauthorized)
		return
	}
	ct, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	isJSON := ct == "application/json"
	if !isJSON && ct != "application/x-protobuf" && ct != "application/protobuf" {
		http.Error(w, "the OTLP receiver takes application/x-protobuf or application/json", http.StatusUnsupportedMediaType)
		return
	}
	if enc := req.Header.Get("Content-Encoding"); enc != "" && enc != "identity" && enc != "gzip" {
		http.Error(w, fmt.Sprintf("content encoding %q: the OTLP receiver takes gzip or none", enc), http.StatusBadRequest)
		return
	}
	if r.refuseSpent(w, job) {
		return
	}
	done, err := r.takeTurn(req.Context(), key)
	if err != nil {
		r.busy(w, err)
		return
	}
	defer done()
	// The request ahead may have spent the budget.
	if r.refuseSpent(w, job) {
		return
	}
	hold := r.readBudget().Hold()
	defer hold.Release()
	if r.BodyTimeout > 0 {
		http.NewResponseController(w).SetReadDeadline(time.Now().Add(r.BodyTimeout))
	}
	body, err := readBody(req, hold)
	if err != nil {
		switch {
		case errors.Is(err, membudget.ErrNoRoom):
			r.busy(w, err)
		case errors.Is(err, errTooLarge):
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		case errors.Is(err, os.ErrDeadlineExceeded):
			w.Header().Set("Connection", "close")
			http.Error(w, fmt.Sprintf("the request body did not come within %s; an exporter sends it at once", r.BodyTimeout), http.StatusRequestTimeout)
		case req.Context().Err() != nil: // the client went away
		default:
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
		return
	}
	var in *collectorpb.ExportTraceServiceRequest
	if isJSON {
		in, err = ReadJSON(body)
	} else {
		in = &collectorpb.ExportTraceServiceRequest{}
		err = proto.Unmarshal(body, in)
	}
	if err != nil {
		http.Error(w, "not an OTLP trace export request: "+err.Error(), http.StatusBadRequest)
		return
	}
	Mask(in.ResourceSpans, r.Mask)
	kept, rejected, why := r.keep(job, in.ResourceSpans)
	if r.Forward != nil && len(kept) > 0 {
		r.Forward(kept)
	}
	resp := &collectorpb.ExportTraceServiceResponse{}
	if rejected > 0 {
		resp.PartialSuccess = &collectorpb.ExportTracePartialSuccess{RejectedSpans: rejected, ErrorMessage: why}
	}
	var out []byte
	if isJSON {
		out, err = protojson.Marshal(resp)
		w.Header().Set("Content-Type", "application/json")
	} else {
		out, err = proto.Marshal(resp)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Write(out)
}

// takeTurn waits for key's turn: a session's requests are read one at a time. done ends it.
func (r *Receiver) takeTurn(ctx context.Context, key string) (done func(), err error) {
	r.mu.Lock()
	if r.turns == nil {
		r.turns = map[string]*turn{}
	}
	t := r.turns[key]
	if t == nil {
		t = &turn{sem: semaphore.NewWeighted(1)}
		r.turns[key] = t
	}
	t.refs++
	t.waiting++
	r.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, r.readBudget().Wait())
	err = t.sem.Acquire(wctx, 1)
	cancel()
	leave := func() {
		r.mu.Lock()
		if t.refs--; t.refs == 0 {
			delete(r.turns, key)
		}
		r.mu.Unlock()
	}
	r.mu.Lock()
	t.waiting--
	r.mu.Unlock()
	if err != nil {
		leave()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, errNoTurn
	}
	return func() { t.sem.Release(1); leave() }, nil
}

// waiting is how many of key's requests wait for their turn (for tests).
func (r *Receiver) waiting(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.turns[key]; t != nil {
		return t.waiting
	}
	return 0
}

var errNoTurn = errors.New("the session's requests ahead of this one took the whole wait")

// busy answers a request that did not get its turn in time: 503, which the exporters retry; a
// client that went away gets nothing.
func (r *Receiver) busy(w http.ResponseWriter, err error) {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return
	}
	b := r.readBudget()
	w.Header().Set("Retry-After", "2")
	http.Error(w, fmt.Sprintf("the OTLP receiver is busy: the request waited %s for its turn (a session's requests are read one at a time, and at most %d MiB of them over all sessions); retry shortly", b.Wait(), b.Size()>>20),
		http.StatusServiceUnavailable)
}

// refuseSpent answers a request of a job whose spans have gone past its budget, without reading
// it: 403, which the exporters do not retry.
func (r *Receiver) refuseSpent(w http.ResponseWriter, job string) bool {
	r.mu.Lock()
	b := r.used[job]
	full := b != nil && b.full
	r.mu.Unlock()
	if !full {
		return false
	}
	w.Header().Set("Connection", "close") // the body is not read
	http.Error(w, "the job's spans went past its budget ("+r.limits()+"): its later spans are refused", http.StatusForbidden)
	return true
}

func (r *Receiver) maxes() (spans, bytes int) {
	return cmp.Or(r.MaxSpans, DefaultMaxSpans), cmp.Or(r.MaxBytes, DefaultMaxBytes)
}

func (r *Receiver) limits() string {
	spans, bytes := r.maxes()
	return fmt.Sprintf("a job keeps at most %d spans and %s of them", spans, textclip.SizeName(int64(bytes)))
}

var errTooLarge = fmt.Errorf("an OTLP request may have at most %d bytes", MaxRequestBytes)

// readBody reads the request's body, decompressed, taking its bytes from hold as the buffer
// grows.
func readBody(req *http.Request, hold *membudget.Hold) ([]byte, error) {
	var rd io.Reader = io.LimitReader(req.Body, MaxRequestBytes+1)
	size := int64(64 << 10)
	if enc := req.Header.Get("Content-Encoding"); enc == "gzip" {
		gz, err := gzip.NewReader(rd)
		if err != nil {
			return nil, err
		}
		defer gz.Close()
		rd = gz
	} else if req.ContentLength >= 0 {
		size = req.ContentLength + 1 // room to read the EOF without growing
	}
	size = min(size, MaxRequestBytes+1)
	if err := hold.Take(req.Context(), size); err != nil {
		return nil, err
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			if len(buf) > MaxRequestBytes {
				return nil, errTooLarge
			}
			grown := min(2*int64(cap(buf)), MaxRequestBytes+1)
			if err := hold.Take(req.Context(), grown-int64(cap(buf))); err != nil {
				return nil, err
			}
			buf = append(make([]byte, 0, grown), buf...)
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if len(buf) > MaxRequestBytes {
		return nil, errTooLarge
	}
	return buf, nil
}

// keep writes the spans within job's budget as its span events, and returns them (to be sent
// on), how many it refused, and why.
func (r *Receiver) keep(job string, rs []*tracepb.ResourceSpans) (kept []*tracepb.ResourceSpans, rejected int64, why string) {
	maxSpans, maxBytes := r.maxes()
	var datas [][]byte
	for _, res := range rs {
		service := serviceName(res)
		var scopes []*tracepb.ScopeSpans
		for _, ss := range res.GetScopeSpans() {
			var spans []*tracepb.Span
			for _, sp := range ss.GetSpans() {
				data, ok := r.admit(job, spanData(service, ss.GetScope().GetName(), sp), maxSpans, maxBytes)
				if !ok {
					rejected++
					continue
				}
				datas = append(datas, data)
				spans = append(spans, sp)
			}
			if len(spans) > 0 {
				scopes = append(scopes, &tracepb.ScopeSpans{Scope: ss.Scope, Spans: spans, SchemaUrl: ss.SchemaUrl})
			}
		}
		if len(scopes) > 0 {
			kept = append(kept, &tracepb.ResourceSpans{Resource: res.Resource, ScopeSpans: scopes, SchemaUrl: res.SchemaUrl})
		}
	}
	note := false
	if rejected > 0 {
		why = r.limits()
		r.mu.Lock()
		b := r.used[job]
		note = b != nil && !b.full
		if b != nil {
			b.full = true
		}
		r.mu.Unlock()
	}
	if len(datas) > 0 && r.Keep != nil {
		if err := r.Keep(job, datas); err != nil {
			return nil, rejected + int64(len(datas)), "the job's record did not take them: " + err.Error()
		}
	}
	if note && r.Note != nil {
		r.Note(job, "spans the session sent past its budget were not kept: "+why)
	}
	return kept, rejected, why
}

// admit counts a span's data against job's budget; false when it does not fit (the span is
// refused), or the budget is already gone past.
func (r *Receiver) admit(job string, d SpanData, maxSpans, maxBytes int) ([]byte, bool) {
	r.mu.Lock()
	if r.used == nil {
		r.used = map[string]*budget{}
	}
	b := r.used[job]
	if b == nil {
		b = &budget{}
		r.used[job] = b
	}
	full := b.full || b.spans+1 > maxSpans
	r.mu.Unlock()
	if full {
		return nil, false
	}
	data, err := jsonutil.Marshal(d)
	if err != nil {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if b.full || b.spans+1 > maxSpans || b.bytes+len(data) > maxBytes {
		return nil, false
	}
	b.spans++
	b.bytes += len(data)
	return data, true
}
