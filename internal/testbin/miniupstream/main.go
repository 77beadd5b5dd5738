// Command miniupstream is the least a model API can be: it answers every POST with one fixed
// Anthropic message, or with that message's fixed stream of server-sent events when the request
// says "stream":true, and nothing else (no parsing, no script, no key check). Benchmarks put it
// behind the gateway and the bare proxy so that the upstream's own time is as small as it gets.
//
//	miniupstream READY_FILE
//
// It listens on a free loopback port, writes its URL to READY_FILE once listening, and serves
// until SIGINT or SIGTERM.
package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
)

const message = `{"id":"msg_01","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Hello."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":8,"output_tokens":3}}`

// stream is the message above as Anthropic streams it.
const stream = "event: message_start\n" +
	`data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":8,"output_tokens":1}}}` + "\n\n" +
	"event: content_block_start\n" +
	`data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello."}}` + "\n\n" +
	"event: content_block_stop\n" +
	`data: {"type":"content_block_stop","index":0}` + "\n\n" +
	"event: message_delta\n" +
	`data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}` + "\n\n" +
	"event: message_stop\n" +
	`data: {"type":"message_stop"}` + "\n\n"

var streamFlag = []byte(`"stream":true`)

func serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	h := w.Header()
	if bytes.Contains(body, streamFlag) {
		h["Content-Type"] = []string{"text/event-stream"}
		io.WriteString(w, stream)
		return
	}
	h["Content-Type"] = []string{"application/json"}
	h["Content-Length"] = []string{strconv.Itoa(len(message))}
	io.WriteString(w, message)
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: miniupstream READY_FILE")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "miniupstream:", err)
		os.Exit(3)
	}
	srv := &http.Server{Handler: http.HandlerFunc(serve)}
	go srv.Serve(ln)
	tmp := os.Args[1] + ".tmp"
	if err := os.WriteFile(tmp, []byte("http://"+ln.Addr().String()+"\n"), 0o644); err != nil || os.Rename(tmp, os.Args[1]) != nil {
		fmt.Fprintln(os.Stderr, "miniupstream: cannot write the ready file")
		os.Exit(3)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	srv.Close()
}
