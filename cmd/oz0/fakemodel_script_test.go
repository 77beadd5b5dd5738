package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// Commands for scripts that run servers in the background and talk to them over HTTP.
func init() {
	scriptCmds["waitfile"] = cmdWaitFile
	scriptCmds["envfile"] = cmdEnvFile
	scriptCmds["httpreq"] = cmdHTTPReq
}

// cmdWaitFile: waitfile FILE [TIMEOUT] polls until FILE exists and is not empty (default timeout
// 30s). With !, it succeeds when FILE is still missing or empty after TIMEOUT.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waitfile FILE [TIMEOUT]")
	}
	timeout := 30 * time.Second
	if len(args) == 2 {
		d, err := time.ParseDuration(args[1])
		ts.Check(err)
		timeout = d
	}
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(timeout)
	for {
		if st, err := os.Stat(path); err == nil && st.Size() > 0 {
			if neg {
				ts.Fatalf("%s appeared", args[0])
			}
			return
		}
		if time.Now().After(deadline) {
			if !neg {
				ts.Fatalf("%s did not appear within %s", args[0], timeout)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cmdEnvFile: envfile NAME FILE sets $NAME to the first line of FILE, trimmed (a URL a server
// wrote into its ready file, say).
func cmdEnvFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! envfile")
	}
	if len(args) != 2 {
		ts.Fatalf("usage: envfile NAME FILE")
	}
	line, _, _ := strings.Cut(ts.ReadFile(args[1]), "\n")
	ts.Setenv(args[0], strings.TrimSpace(line))
}

// cmdHTTPReq: httpreq [-i] [-H 'Name: value']... METHOD URL [BODYFILE] sends a request and prints
// the status line ("HTTP/1.1 200 OK"), with -i the response headers (sorted, without Date), then
// the body, to stdout. A body given and no Content-Type header sends application/json. A status
// of 4xx or 5xx is not a failure: match it with stdout. The command fails when there is no
// response or its body breaks off (a dropped connection); with !, it must fail so.
func cmdHTTPReq(ts *testscript.TestScript, neg bool, args []string) {
	var headers [][2]string
	var pos []string
	showHeaders := false
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-H" && i+1 < len(args):
			k, v, ok := strings.Cut(args[i+1], ":")
			if !ok {
				ts.Fatalf("httpreq: -H %q is not Name: value", args[i+1])
			}
			headers = append(headers, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
			i++
		case a == "-i":
			showHeaders = true
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) < 2 || len(pos) > 3 {
		ts.Fatalf("usage: httpreq [-i] [-H 'Name: value']... METHOD URL [BODYFILE]")
	}
	var body io.Reader
	if len(pos) == 3 {
		body = strings.NewReader(ts.ReadFile(pos[2]))
	}
	req, err := http.NewRequest(pos[0], pos[1], body)
	ts.Check(err)
	for _, h := range headers {
		req.Header.Add(h[0], h[1])
	}
	if body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		if !neg {
			ts.Fatalf("httpreq: %v", err)
		}
		fmt.Fprintf(ts.Stderr(), "httpreq: %v\n", err)
		return
	}
	defer resp.Body.Close()
	data, readErr := io.ReadAll(resp.Body)
	var out bytes.Buffer
	fmt.Fprintf(&out, "%s %s\n", resp.Proto, resp.Status)
	if showHeaders {
		var keys []string
		for k := range resp.Header {
			if k != "Date" {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			for _, v := range resp.Header[k] {
				fmt.Fprintf(&out, "%s: %s\n", k, v)
			}
		}
		out.WriteString("\n")
	}
	out.Write(data)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		out.WriteString("\n")
	}
	ts.Stdout().Write(out.Bytes())
	switch {
	case readErr != nil && !neg:
		ts.Fatalf("httpreq: reading the body: %v", readErr)
	case readErr != nil:
		fmt.Fprintf(ts.Stderr(), "httpreq: reading the body: %v\n", readErr)
	case neg:
		ts.Fatalf("httpreq: the request succeeded")
	}
}
