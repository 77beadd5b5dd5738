package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/orchestrator-zero/oz0/telemetry"
)

// The OpenTelemetry scripts: a real Jaeger (v2, built by scripts/test-deps.sh into the tests'
// cache from scripts/jaeger/go.mod) that oz0 dev exports to.

// jaegerVersion is the Jaeger scripts/jaeger/go.mod pins; test-deps.sh builds it into
// <test cache>/jaeger-<version>/jaeger.
func jaegerVersion() (string, error) {
	data, err := os.ReadFile("../../scripts/jaeger/go.mod")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "github.com/jaegertracing/jaeger" {
			return f[1], nil
		}
	}
	return "", errors.New("scripts/jaeger/go.mod does not require github.com/jaegertracing/jaeger")
}

func init() {
	scriptCmds["freeport"] = cmdFreePort
	scriptCmds["waithttp"] = cmdWaitHTTP
	scriptCmds["jaegertrace"] = cmdJaegerTrace
	scriptCmds["spantree"] = cmdSpanTree
	scriptCmds["uitimeline"] = cmdUITimeline
}

// jaegerBinDir is the directory with the jaeger binary, for the scripts' PATH; when it is not
// built, a directory whose `jaeger` fails with the mend, so the script fails saying what to do.
func jaegerBinDir(tmp string) (string, error) {
	root, err := testCacheDir()
	if err != nil {
		return "", err
	}
	version, err := jaegerVersion()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "jaeger-"+version)
	if fi, err := os.Stat(filepath.Join(dir, "jaeger")); err == nil && fi.Mode().IsRegular() {
		return dir, nil
	}
	msg := fmt.Sprintf("jaeger is missing (no %s): run scripts/test-deps.sh", filepath.Join(dir, "jaeger"))
	script := "#!/bin/sh\necho '" + msg + "' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(tmp, "jaeger"), []byte(script), 0o755); err != nil {
		return "", err
	}
	return tmp, nil
}

// cmdFreePort: freeport NAME sets $NAME to a loopback port that is free now.
func cmdFreePort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: freeport NAME")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ts.Setenv(args[0], strconv.Itoa(port))
}

// cmdWaitHTTP: waithttp URL [TIMEOUT] waits until URL answers anything over HTTP: a server's
// ready check.
func cmdWaitHTTP(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waithttp URL [TIMEOUT]")
	}
	timeout := 60 * time.Second
	if len(args) == 2 {
		d, err := time.ParseDuration(args[1])
		ts.Check(err)
		timeout = d
	}
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	for {
		resp, err := client.Get(args[0])
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s did not answer within %s: %v", args[0], timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// jaegerTrace is the answer of Jaeger's GET /api/traces/{id}.
type jaegerTrace struct {
	Data []struct {
		Spans []struct {
			SpanID        string `json:"spanID"`
			OperationName string `json:"operationName"`
			References    []struct {
				RefType string `json:"refType"`
				SpanID  string `json:"spanID"`
			} `json:"references"`
			Tags []struct {
				Key   string `json:"key"`
				Value any    `json:"value"`
			} `json:"tags"`
			ProcessID string `json:"processID"`
		} `json:"spans"`
		Processes map[string]struct {
			ServiceName string `json:"serviceName"`
		} `json:"processes"`
	} `json:"data"`
}

// cmdJaegerTrace: jaegertrace QUERY_URL JOBS_JSON SPANS reads the trace of the first job of
// JOBS_JSON (`oz0 job list --json`) from Jaeger's query API, waiting (at most a minute) until it
// has at least SPANS spans, and prints each span a line, sorted: its service, its name, its
// parent's name ("-" for none) and its tags (those of the GenAI conventions and oz0's), as
// key=value.
func cmdJaegerTrace(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: jaegertrace QUERY_URL JOBS_JSON SPANS")
	}
	var jobs []struct {
		ID string `json:"id"`
	}
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[1])), &jobs))
	if len(jobs) == 0 {
		ts.Fatalf("%s lists no job", args[1])
	}
	want, err := strconv.Atoi(args[2])
	ts.Check(err)
	url := strings.TrimRight(args[0], "/") + "/api/traces/" + telemetry.TraceID(jobs[0].ID).String()
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(time.Minute)
	var tr jaegerTrace
	for {
		tr = jaegerTrace{}
		if resp, err := client.Get(url); err == nil {
			if resp.StatusCode == http.StatusOK {
				_ = json.NewDecoder(resp.Body).Decode(&tr)
			}
			resp.Body.Close()
		}
		if len(tr.Data) == 1 && len(tr.Data[0].Spans) >= want {
			break
		}
		if time.Now().After(deadline) {
			ts.Fatalf("Jaeger has no trace of %d spans for %s at %s: %+v", want, jobs[0].ID, url, tr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t := tr.Data[0]
	names := map[string]string{}
	for _, sp := range t.Spans {
		names[sp.SpanID] = sp.OperationName
	}
	var lines []string
	for _, sp := range t.Spans {
		parent := "-"
		for _, ref := range sp.References {
			if ref.RefType == "CHILD_OF" {
				parent = names[ref.SpanID]
			}
		}
		var tags []string
		for _, tag := range sp.Tags {
			if strings.HasPrefix(tag.Key, "gen_ai.") || strings.HasPrefix(tag.Key, "oz0.") {
				tags = append(tags, fmt.Sprintf("%s=%v", tag.Key, tag.Value))
			}
		}
		sort.Strings(tags)
		lines = append(lines, fmt.Sprintf("%s | %s | parent %s | %s", t.Processes[sp.ProcessID].ServiceName, sp.OperationName, parent, strings.Join(tags, " ")))
	}
	sort.Strings(lines)
	fmt.Fprintln(ts.Stdout(), strings.Join(lines, "\n"))
}

// cmdSpanTree: spantree TRACE prints the spans a session sent (the span events of TRACE, what
// `oz0 job trace` printed) as paths from the job's span, one a line, sorted: "job > invoke_agent
// X > chat" for a span whose parent chain reaches the job's span; a chain that does not reach it
// starts with "?".
func cmdSpanTree(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: spantree TRACE")
	}
	rec, err := telemetry.ReadRecord(strings.NewReader(ts.ReadFile(args[0])), nil)
	ts.Check(err)
	jobSpan := telemetry.SpanID(rec.Job.ID, "").String()
	type node struct{ name, parent string }
	spans := map[string]node{}
	for _, e := range rec.Events {
		if e.Type != "span" {
			continue
		}
		var d telemetry.SpanData
		ts.Check(json.Unmarshal(e.Data, &d))
		if d.TraceID != telemetry.TraceID(rec.Job.ID).String() {
			ts.Fatalf("span %s is in trace %s, not the job's", d.Name, d.TraceID)
		}
		spans[d.SpanID] = node{d.Name, d.ParentSpanID}
	}
	var lines []string
	for _, n := range spans {
		path := []string{n.name}
		for p, hops := n.parent, 0; ; hops++ {
			if p == jobSpan {
				path = append(path, "job")
				break
			}
			up, ok := spans[p]
			if !ok || hops > 100 {
				path = append(path, "?")
				break
			}
			path = append(path, up.name)
			p = up.parent
		}
		for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
			path[i], path[j] = path[j], path[i]
		}
		lines = append(lines, strings.Join(path, " > "))
	}
	sort.Strings(lines)
	fmt.Fprintln(ts.Stdout(), strings.Join(lines, "\n"))
}

// cmdUITimeline: uitimeline LOGIN_FILE JOB opens the dev UI in headless Chromium (logged in by
// the link in LOGIN_FILE, `oz0 ui --print`), opens JOB's page, waits for its timeline to show the
// spans the session sent, and prints them, one a line in the timeline's order: depth, the parent's
// name ("job" for the job's span) and the span's label.
func cmdUITimeline(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: uitimeline LOGIN_FILE JOB")
	}
	exe := ""
	for _, name := range []string{os.Getenv("OZ0_CHROMIUM"), "chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); name != "" && err == nil {
			exe = p
			break
		}
	}
	if exe == "" {
		ts.Fatalf("no Chromium: install Debian's chromium (scripts/test-deps.sh does) or set OZ0_CHROMIUM")
	}
	login := strings.TrimSpace(ts.ReadFile(args[0]))
	base := login[:strings.Index(login, "/ui/")+len("/ui/")]
	profile := ts.MkAbs("chromium-profile")
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900), chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancelStep := context.WithTimeout(bctx, 2*time.Minute)
	defer cancelStep()
	err := chromedp.Do(ctx,
		chromedp.Navigate(login), chromedp.WaitVisible("#jobs"),
		chromedp.Navigate(base+"#/jobs/"+args[1]),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('#timeline .span.k-span').length > 0 && document.querySelector('#result') !== null`,
			chromedp.WithPollingTimeout(90*time.Second)))
	if err != nil {
		ts.Fatalf("the UI's timeline of %s: %v", args[1], err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#timeline .span.k-span')].map((e) =>
			e.dataset.depth + ' ' + e.dataset.parent + ' | ' + e.querySelector('summary .label').textContent)`))
	if err != nil {
		ts.Fatalf("the UI's timeline of %s: %v", args[1], err)
	}
	fmt.Fprintln(ts.Stdout(), strings.Join(rows, "\n"))
}
