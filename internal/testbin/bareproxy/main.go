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
	srv := &http.Server{Handler: rp}
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
