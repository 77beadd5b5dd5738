//go:build linux

package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
)

// TestSpanFloodBounded posts what a hostile session can send the OTLP receiver with its one key:
// 100 gzip requests at once, each 140 spans of 26 KB (3.7 MB of JSON, 15 KB gzipped), 14,000
// spans in all, past the job's budget of 10,000 spans and 8 MiB, to a real `oz0 dev`. Its peak
// resident memory (VmHWM) stays under 256 MiB, and it gives the memory back once the flood is
// over. Before the receiver bounded what it decodes at once, oz0 dev went from 33 to 1,483 MiB
// here and stayed there (the flood took it to 4,460 MiB). The session's key is the one
// its harness writes to a file (tier none), as BenchmarkGatewayLargeBodies has it.
func TestSpanFloodBounded(t *testing.T) {
	const requests, spans, spanBytes = 100, 140, 26 << 10
	work := t.TempDir()
	keyFile := filepath.Join(work, "keys.json")
	bin, dir := testHarnessPlugin(t, "spanflood", "keyfile", keyFile)
	dev := startProcess(t, filepath.Join(dir, "ctx"), filepath.Join(dir, "dev.log"), bin,
		"dev", "--plugin", filepath.Join(dir, "plug"), "--ephemeral", "--sandbox", "none", "--ready-file", filepath.Join(dir, "ctx"))
	devCtx, err := apiv1.ParseContext(dev.ready)
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(devCtx)
	job, err := c.CreateJob(context.Background(), apiv1.JobRequest{Agent: "spanflood", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	var keys struct {
		URL string `json:"anthropic_base_url"`
		Key string `json:"anthropic_api_key"`
	}
	for deadline := time.Now().Add(time.Minute); keys.Key == ""; time.Sleep(5 * time.Millisecond) {
		if data, err := os.ReadFile(keyFile); err == nil {
			json.Unmarshal(data, &keys)
		}
		if time.Now().After(deadline) {
			t.Fatal("the session wrote no keys within a minute")
		}
	}
	endpoint := strings.TrimSuffix(keys.URL, "/anthropic") + "/otlp/v1/traces"
	body := spanFloodRequest(t, spans, spanBytes)
	before := procStatus(t, dev.cmd.Process.Pid, "VmRSS")

	statuses := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range requests {
		wg.Go(func() {
			<-start
			req, _ := http.NewRequest("POST", endpoint, bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+keys.Key)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Content-Encoding", "gzip")
			resp, err := http.DefaultClient.Do(req)
			what := ""
			if err != nil {
				what = "error: " + err.Error()
			} else {
				answer, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				what = spanAnswer(resp.StatusCode, answer)
			}
			mu.Lock()
			statuses[what]++
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	hwm := procStatus(t, dev.cmd.Process.Pid, "VmHWM")
	t.Logf("oz0 dev: VmRSS %d MiB before; VmHWM %d MiB; %d requests of %d KiB (%d KiB of JSON): %v",
		before>>20, hwm>>20, requests, len(body)>>10, spans*spanBytes>>10, statuses)

	// The spans within the budget are the job's.
	if _, err := c.Cancel(context.Background(), job.ID); err != nil {
		t.Fatal(err)
	}
	var trace bytes.Buffer
	if err := c.Trace(context.Background(), job.ID, &trace); err != nil {
		t.Fatal(err)
	}
	if kept := strings.Count(trace.String(), `"type":"span"`); kept == 0 {
		t.Errorf("no span of the flood was kept")
	} else {
		t.Logf("the job kept %d spans", kept)
	}
	if raceEnabled {
		t.Log("built with the race detector, which multiplies memory: the bounds on memory are not checked")
		return
	}
	if hwm >= 256<<20 {
		t.Errorf("oz0 dev's peak resident memory was %d MiB, over 256 MiB", hwm>>20)
	}
	// The memory goes back once the flood is over (polled: the receiver gives it back once its
	// budget has drained).
	var rss int64
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if rss = procStatus(t, dev.cmd.Process.Pid, "VmRSS"); rss < before+64<<20 || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("oz0 dev: VmRSS %d MiB after", rss>>20)
	if rss >= before+64<<20 {
		t.Errorf("oz0 dev kept %d MiB resident after the flood (%d MiB before)", rss>>20, before>>20)
	}
}

// spanFloodRequest is an OTLP JSON export request of n spans of about size bytes each, gzipped.
func spanFloodRequest(t *testing.T, n, size int) []byte {
	t.Helper()
	type kv struct {
		Key   string            `json:"key"`
		Value map[string]string `json:"value"`
	}
	var spans []map[string]any
	words := strings.Fields("the ticket says the customer was charged twice for one order and wants a refund today")
	for i := range n {
		var text strings.Builder
		for j := 0; text.Len() < size; j++ {
			text.WriteString(words[(i*7+j*j)%len(words)])
			text.WriteByte(' ')
		}
		spans = append(spans, map[string]any{
			"traceId": fmt.Sprintf("%032x", i+1), "spanId": fmt.Sprintf("%016x", i+1),
			"name": "chat", "kind": 3, "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000001000000000",
			"attributes": []kv{{"gen_ai.prompt", map[string]string{"stringValue": text.String()}}},
		})
	}
	req := map[string]any{"resourceSpans": []any{map[string]any{
		"resource":   map[string]any{"attributes": []kv{{"service.name", map[string]string{"stringValue": "flood"}}}},
		"scopeSpans": []any{map[string]any{"scope": map[string]string{"name": "flood"}, "spans": spans}},
	}}}
	raw, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(raw)
	zw.Close()
	return b.Bytes()
}

// spanAnswer sums up an OTLP answer: its status and, for a partial success, how many spans it
// refused.
func spanAnswer(status int, body []byte) string {
	if status != http.StatusOK {
		return fmt.Sprintf("%d %s", status, strings.TrimSpace(string(body)))
	}
	var r struct {
		PartialSuccess struct {
			RejectedSpans string `json:"rejectedSpans"`
		} `json:"partialSuccess"`
	}
	json.Unmarshal(body, &r)
	if r.PartialSuccess.RejectedSpans != "" {
		return "200, " + r.PartialSuccess.RejectedSpans + " spans refused"
	}
	return "200"
}
