// Command bareproxy is the floor the gateway is measured against: a bare
// httputil.ReverseProxy in its own process, one more loopback hop and nothing else.
//
//	bareproxy UPSTREAM_URL READY_FILE
//
// It listens on a free loopback port, writes its URL to READY_FILE once listening, and serves
// until SIGINT or SIGTERM.
package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: bareproxy UPSTREAM_URL READY_FILE")
		os.Exit(2)
	}
	up, err := url.Parse(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "bareproxy:", err)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bareproxy:", err)
		os.Exit(3)
	}
	rp := httputil.NewSingleHostReverseProxy(up)
	rp.ErrorLog = nil
	// Full duplex: net/http's HTTP/1 server otherwise drains and closes a request's body as the
	// handler's answer begins, and the transport, which reads the body once more after its
	// declared length to see its end, then fails the write and closes the upstream connection
	// mid-answer (golang.org/issue/40747): 0.6–3.4% of streamed answers were cut. The gateway
	// reads a request whole before it goes upstream, so it never met this.
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	tmp := os.Args[2] + ".tmp"
	if err := os.WriteFile(tmp, []byte("http://"+ln.Addr().String()+"\n"), 0o644); err != nil || os.Rename(tmp, os.Args[2]) != nil {
		fmt.Fprintln(os.Stderr, "bareproxy: cannot write the ready file")
		os.Exit(3)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	srv.Close()
}
