package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
)

// liveness bounds a wait for something that must happen (never a timing assertion).
const liveness = 30 * time.Second

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(liveness)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", liveness, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// watchedBody is a request body that says whether it has been read.
type watchedBody struct {
	r    io.Reader
	read atomic.Bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
	b.read.Store(true)
	return b.r.Read(p)
}

// receiverUnderTest is a receiver whose keys are "key_JOB", whose Keep waits while block is
// held, and that counts what it keeps.
type receiverUnderTest struct {
	*Receiver
	block sync.RWMutex
	mu    sync.Mutex
	kept  map[string]int
}

func newReceiverUnderTest(set func(*Receiver)) *receiverUnderTest {
	rt := &receiverUnderTest{kept: map[string]int{}}
	rt.Receiver = &Receiver{
		Resolve: func(_ context.Context, key string) (string, error) {
			if job, ok := strings.CutPrefix(key, "key_"); ok {
				return job, nil
			}
			return "", fmt.Errorf("unknown key")
		},
		Keep: func(job string, spans [][]byte) error {
			rt.block.RLock()
			defer rt.block.RUnlock()
			rt.mu.Lock()
			rt.kept[job] += len(spans)
			rt.mu.Unlock()
			return nil
		},
	}
	if set != nil {
		set(rt.Receiver)
	}
	return rt
}

// post sends an export request of key, gzipped when gz; it returns the answer and the body, to
// see whether it was read.
func (rt *receiverUnderTest) post(key string, body []byte, gz bool) (*httptest.ResponseRecorder, *watchedBody) {
	if gz {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(body)
		zw.Close()
		body = b.Bytes()
	}
	wb := &watchedBody{r: bytes.NewReader(body)}
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/gateway"+ReceiverPath, wb)
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Authorization", "Bearer "+key)
	if gz {
		req.Header.Set("Content-Encoding", "gzip")
	}
	w := httptest.NewRecorder()
	rt.ServeHTTP(w, req)
	return w, wb
}

func exportOf(t *testing.T, n, textBytes int) []byte {
	t.Helper()
	b, err := proto.Marshal(sessionRequest(n, strings.Repeat("x", textBytes)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Once a job's spans have gone past its budget, its later requests are refused (403, which the
// exporters do not retry) before a byte of them is read: a flood of one session past its budget
// was decompressed and parsed whole, request after request, to be refused after.
func TestPastTheBudgetRefusedUnread(t *testing.T) {
	rt := newReceiverUnderTest(func(r *Receiver) { r.MaxSpans = 5 })
	if w, _ := rt.post("key_job_a", exportOf(t, 3, 10), true); w.Code != http.StatusOK {
		t.Fatalf("within the budget: %d %s", w.Code, w.Body)
	}
	w, _ := rt.post("key_job_a", exportOf(t, 3, 10), true)
	if w.Code != http.StatusOK || rt.kept["job_a"] != 5 {
		t.Fatalf("across the budget: %d %s; %d kept", w.Code, w.Body, rt.kept["job_a"])
	}
	w, body := rt.post("key_job_a", exportOf(t, 1, 10), true)
	if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "the job's spans went past its budget (a job keeps at most 5 spans and 8 MiB of them)") {
		t.Errorf("past the budget: %d %s", w.Code, w.Body)
	}
	if body.read.Load() {
		t.Error("a request past the budget was read")
	}
	// Another job's budget is its own; a job that ended is forgotten.
	if w, _ := rt.post("key_job_b", exportOf(t, 1, 10), false); w.Code != http.StatusOK {
		t.Errorf("another job: %d %s", w.Code, w.Body)
	}
	rt.Forget("job_a")
	if w, _ := rt.post("key_job_a", exportOf(t, 1, 10), false); w.Code != http.StatusOK {
		t.Errorf("after Forget: %d %s", w.Code, w.Body)
	}
}

// A session key's requests are read one at a time, in turn: the next waits, unread, until the one
// ahead is answered; another key's go on meanwhile. The one behind, once the one ahead has gone
// past the budget, is refused unread. Before, 100 requests of one key were decompressed and parsed
// at once.
func TestOneRequestAKeyAtATime(t *testing.T) {
	rt := newReceiverUnderTest(func(r *Receiver) { r.MaxSpans = 4 })
	rt.block.Lock()
	first := make(chan int)
	go func() {
		w, _ := rt.post("key_job_a", exportOf(t, 3, 10), true)
		first <- w.Code
	}()
	waitFor(t, "the first request to be read", func() bool { return rt.readBudget().Held() > 0 })
	type answer struct {
		code int
		body *watchedBody
	}
	second := make(chan answer)
	go func() {
		w, b := rt.post("key_job_a", exportOf(t, 3, 10), true)
		second <- answer{w.Code, b}
	}()
	waitFor(t, "the second request to wait for its turn", func() bool { return rt.waiting("key_job_a") == 1 })
	third := make(chan answer)
	go func() {
		w, b := rt.post("key_job_a", exportOf(t, 3, 10), true)
		third <- answer{w.Code, b}
	}()
	waitFor(t, "the third request to wait behind it", func() bool { return rt.waiting("key_job_a") == 2 })
	rt.block.Unlock()
	if code := <-first; code != http.StatusOK {
		t.Fatalf("the first request: %d", code)
	}
	// The second goes past the budget (4 spans): it is read, 2 of its spans refused; the third
	// is refused unread.
	a, b := <-second, <-third
	if a.code != http.StatusOK || !a.body.read.Load() {
		t.Errorf("the second request: %d, read %v", a.code, a.body.read.Load())
	}
	if b.code != http.StatusForbidden || b.body.read.Load() {
		t.Errorf("the third request: %d, read %v; want 403 unread", b.code, b.body.read.Load())
	}
	if rt.kept["job_a"] != 4 {
		t.Errorf("%d spans kept, want 4", rt.kept["job_a"])
	}
	// Nothing is left of the key's turns, nor of the bytes held.
	rt.mu.Lock()
	turns := len(rt.turns)
	rt.mu.Unlock()
	if turns != 0 || rt.readBudget().Held() != 0 {
		t.Errorf("%d turns and %d bytes left", turns, rt.readBudget().Held())
	}
}

// Over all sessions, at most MaxBytesInFlight of decompressed requests are read at once: a
// request of another key that does not fit waits for room, unread; one that waits past
// QueueTimeout is answered 503 with Retry-After, which the exporters retry. Before, every
// request was read whole at once.
func TestBytesInFlightBounded(t *testing.T) {
	const bound = MaxRequestBytes + 1 // the least it may be: one request of the largest size
	rt := newReceiverUnderTest(func(r *Receiver) { r.MaxBytesInFlight = bound })
	big := exportOf(t, 1, 5*MaxRequestBytes/8)
	rt.block.Lock()
	first := make(chan int)
	go func() {
		w, _ := rt.post("key_job_a", big, false)
		first <- w.Code
	}()
	waitFor(t, "the first request to be read", func() bool { return rt.readBudget().Held() >= int64(len(big)) })
	second := make(chan int)
	go func() {
		w, _ := rt.post("key_job_b", big, true)
		second <- w.Code
	}()
	waitFor(t, "the second request to wait for room", func() bool { return rt.readBudget().Waiting() == 1 })
	if held := rt.readBudget().Held(); held > bound {
		t.Errorf("%d bytes held, over the bound of %d", held, bound)
	}
	rt.block.Unlock()
	if code := <-first; code != http.StatusOK {
		t.Errorf("the first request: %d", code)
	}
	if code := <-second; code != http.StatusOK {
		t.Errorf("the second request: %d", code)
	}
	if rt.kept["job_a"] != 1 || rt.kept["job_b"] != 1 {
		t.Errorf("kept %v", rt.kept)
	}

	// Past the queue's wait: 503, with Retry-After.
	rt = newReceiverUnderTest(func(r *Receiver) { r.MaxBytesInFlight, r.QueueTimeout = bound, time.Millisecond })
	rt.block.Lock()
	go func() {
		w, _ := rt.post("key_job_a", big, false)
		first <- w.Code
	}()
	waitFor(t, "the first request to be read", func() bool { return rt.readBudget().Held() >= int64(len(big)) })
	w, _ := rt.post("key_job_b", big, false)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "the OTLP receiver is busy") {
		t.Errorf("no room: %d %v %s", w.Code, w.Header(), w.Body)
	}
	rt.block.Unlock()
	<-first
}

// A request over the limit, decompressed, is refused with 413, gzipped or not.
func TestRequestOverTheLimit(t *testing.T) {
	rt := newReceiverUnderTest(nil)
	for _, gz := range []bool{false, true} {
		if w, _ := rt.post("key_job_a", exportOf(t, 1, MaxRequestBytes), gz); w.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("gzip %v: %d %s", gz, w.Code, w.Body)
		}
	}
	if rt.readBudget().Held() != 0 {
		t.Errorf("%d bytes held", rt.readBudget().Held())
	}
}

// OTLP JSON's hex IDs are read in one pass (hexID), links' too; an ID in base64, as protojson
// writes it, is read as it is.
func TestReadJSONIDs(t *testing.T) {
	in := `{"resourceSpans":[{"scopeSpans":[{"spans":[
		{"traceId":"5B8EFFF798038103D269B633813FC60C","spanId":"eee19b7ec3c1b174","parentSpanId":"eee19b7ec3c1b173","name":"a",
		 "links":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331"}]},
		{"traceId":"AQIDBAUGBwgJCgsMDQ4PEA==","spanId":"AQIDBAUGBwg=","name":"b"}]}]}]}`
	req, err := ReadJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	spans := req.ResourceSpans[0].ScopeSpans[0].Spans
	got := []string{hex.EncodeToString(spans[0].TraceId), hex.EncodeToString(spans[0].SpanId), hex.EncodeToString(spans[0].ParentSpanId),
		hex.EncodeToString(spans[0].Links[0].TraceId), hex.EncodeToString(spans[0].Links[0].SpanId),
		hex.EncodeToString(spans[1].TraceId), hex.EncodeToString(spans[1].SpanId)}
	want := []string{"5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174", "eee19b7ec3c1b173",
		"0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", "0102030405060708090a0b0c0d0e0f10", "0102030405060708"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("IDs\n got %v\nwant %v", got, want)
	}
	if _, err := ReadJSON([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"not hex!"}]}]}]}`)); err == nil {
		t.Error("an ID that is neither hex nor base64 was read")
	}
}
