package telemetry

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/orchestrator-zero/oz0/internal/jsonutil"
)

// The receiver's bounds. A session's spans are events of its job, bounded as its other events
// are: past a job's budget they are refused (the answer's partial success says how many) and the
// job's trace says so once.
const (
	DefaultMaxSpans = 10000   // spans a job may send
	DefaultMaxBytes = 8 << 20 // bytes of span events a job may keep
	MaxRequestBytes = 4 << 20 // one export request, decompressed
)

// ReceiverPath is where the receiver is, under the gateway: a session's
// OTEL_EXPORTER_OTLP_ENDPOINT is the gateway's URL and "/otlp", to which the SDKs add
// "/v1/traces".
const ReceiverPath = "/otlp/v1/traces"

// Receiver is the OTLP/HTTP receiver (protobuf or JSON) of the spans sessions send: their
// frameworks' own. The session's key (the gateway's, in the Authorization header as a bearer
// token, or x-api-key) says whose job they are; they are masked, kept as the job's span events
// and forwarded to the user's backend.
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

	mu   sync.Mutex
	used map[string]*budget
}

type budget struct {
	spans, bytes int
	noted        bool
}

// Forget drops what job used of its budget, once it has ended.
func (r *Receiver) Forget(job string) {
	r.mu.Lock()
	delete(r.used, job)
	r.mu.Unlock()
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
	body, err := readBody(req)
	if err != nil {
		status := http.StatusBadRequest
		if errors.Is(err, errTooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		http.Error(w, err.Error(), status)
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
	rejected, why := r.keep(job, in.ResourceSpans)
	if r.Forward != nil {
		r.Forward(in.ResourceSpans)
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

var errTooLarge = fmt.Errorf("an OTLP request may have at most %d bytes", MaxRequestBytes)

func readBody(req *http.Request) ([]byte, error) {
	var rd io.Reader = io.LimitReader(req.Body, MaxRequestBytes+1)
	switch req.Header.Get("Content-Encoding") {
	case "", "identity":
	case "gzip":
		gz, err := gzip.NewReader(rd)
		if err != nil {
			return nil, err
		}
		defer gz.Close()
		rd = io.LimitReader(gz, MaxRequestBytes+1)
	default:
		return nil, fmt.Errorf("content encoding %q: the OTLP receiver takes gzip or none", req.Header.Get("Content-Encoding"))
	}
	b, err := io.ReadAll(rd)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxRequestBytes {
		return nil, errTooLarge
	}
	return b, nil
}

// keep writes the spans within job's budget as its span events; it returns how many it refused,
// and why.
func (r *Receiver) keep(job string, rs []*tracepb.ResourceSpans) (int64, string) {
	maxSpans, maxBytes := r.MaxSpans, r.MaxBytes
	if maxSpans <= 0 {
		maxSpans = DefaultMaxSpans
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	spans := SpansData(rs)
	datas := make([][]byte, 0, len(spans))
	r.mu.Lock()
	if r.used == nil {
		r.used = map[string]*budget{}
	}
	b := r.used[job]
	if b == nil {
		b = &budget{}
		r.used[job] = b
	}
	var rejected int64
	for _, d := range spans {
		data, err := jsonutil.Marshal(d)
		if err != nil || b.spans+1 > maxSpans || b.bytes+len(data) > maxBytes {
			rejected++
			continue
		}
		b.spans++
		b.bytes += len(data)
		datas = append(datas, data)
	}
	note := rejected > 0 && !b.noted
	if note {
		b.noted = true
	}
	r.mu.Unlock()
	why := ""
	if rejected > 0 {
		why = fmt.Sprintf("a job keeps at most %d spans and %d MiB of them", maxSpans, maxBytes>>20)
	}
	if len(datas) > 0 && r.Keep != nil {
		if err := r.Keep(job, datas); err != nil {
			return int64(len(spans)), "the job's record did not take them: " + err.Error()
		}
	}
	if note && r.Note != nil {
		r.Note(job, "spans the session sent past its budget were not kept: "+why)
	}
	return rejected, why
}
