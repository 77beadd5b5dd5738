package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/api/discovery"
	"github.com/orchestrator-zero/oz0/devserver/store"
)

// Commands for the dev server's scripts (testdata/scripts/dev_*.txtar). Each that waits polls
// with a bound; none sleeps in place of synchronising.
func init() {
	scriptCmds["waitjob"] = cmdWaitJob
	scriptCmds["waitevent"] = cmdWaitEvent
	scriptCmds["waitagent"] = cmdWaitAgent
	scriptCmds["waitahead"] = cmdWaitAhead
	scriptCmds["waitgrep"] = cmdWaitGrep
	scriptCmds["procsgone"] = cmdProcsGone
	scriptCmds["devhttp"] = cmdDevHTTP
	scriptCmds["sseresume"] = cmdSSEResume
	scriptCmds["jsonlines"] = cmdJSONLines
	scriptCmds["envjson"] = cmdEnvJSON
}

// devClient is a client for the dev server in the script's $OZ0_CONTEXT, else the one running on
// the plugin of the script's working directory, as the commands find it.
func devClient(ts *testscript.TestScript) (*client.Client, apiv1.Context) {
	v := ts.Getenv(apiv1.ContextEnv)
	if v == "" {
		found, _, err := discovery.Find(ts.MkAbs("."))
		if err != nil {
			ts.Fatalf("%v", err)
		}
		v = found.String()
	}
	c, err := apiv1.ParseContext(v)
	if err != nil {
		ts.Fatalf("%v", err)
	}
	return client.New(c), c
}

// durationArg parses an optional timeout argument.
func durationArg(ts *testscript.TestScript, args []string, i int, def time.Duration) time.Duration {
	if len(args) <= i {
		return def
	}
	d, err := time.ParseDuration(args[i])
	ts.Check(err)
	return d
}

// cmdWaitJob: waitjob ID STATUS [TIMEOUT] polls the job on the dev server of $OZ0_CONTEXT until
// it has STATUS (default timeout 20s), then prints its record as JSON. It fails at once when the
// job ends in another status, with the job's reason.
func cmdWaitJob(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: waitjob ID STATUS [TIMEOUT]")
	}
	c, _ := devClient(ts)
	want := apiv1.Status(args[1])
	if !want.Valid() {
		ts.Fatalf("waitjob: unknown status %q", want)
	}
	timeout := durationArg(ts, args, 2, 20*time.Second)
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		j, err := c.Job(ctx, args[0])
		cancel()
		ts.Check(err)
		if j.Status == want {
			b, _ := json.Marshal(j)
			fmt.Fprintf(ts.Stdout(), "%s\n", b)
			return
		}
		if j.Status.Terminal() {
			ts.Fatalf("job %s ended %s (%s), want %s", j.ID, j.Status, j.Reason, want)
		}
		if time.Now().After(deadline) {
			ts.Fatalf("job %s is still %s after %s, want %s", j.ID, j.Status, timeout, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cmdWaitEvent: waitevent ID TYPE REGEXP [TIMEOUT] polls the job's trace on the dev server of
// $OZ0_CONTEXT until it has an event of TYPE whose data matches REGEXP (default timeout 20s):
// what a harness wrote is in the store, whatever happens to the job next.
func cmdWaitEvent(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 || len(args) > 4 {
		ts.Fatalf("usage: waitevent ID TYPE REGEXP [TIMEOUT]")
	}
	c, _ := devClient(ts)
	re, err := regexp.Compile(args[2])
	ts.Check(err)
	timeout := durationArg(ts, args, 3, 20*time.Second)
	deadline := time.Now().Add(timeout)
	for {
		var buf bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := c.Trace(ctx, args[0], &buf)
		cancel()
		ts.Check(err)
		_, evs, err := store.LoadTrace(&buf)
		ts.Check(err)
		for _, ev := range evs {
			if ev.Type == args[1] && re.Match(ev.Data) {
				return
			}
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitevent: job %s has no %s event matching %q after %s", args[0], args[1], args[2], timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cmdWaitAgent: waitagent NAME [TIMEOUT] polls GET /api/v1/info until the dev server runs an
// agent NAME (default timeout 20s); with !, until it runs none of that name.
func cmdWaitAgent(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waitagent NAME [TIMEOUT]")
	}
	waitInfo(ts, durationArg(ts, args, 1, 20*time.Second), func(info apiv1.Info) (bool, string) {
		found := slices.ContainsFunc(info.Agents, func(a apiv1.AgentInfo) bool { return a.Name == args[0] })
		return found != neg, fmt.Sprintf("waitagent: the dev server runs agent %s: %v", args[0], found)
	})
}

// cmdWaitAhead: waitahead N [TIMEOUT] polls the dev server of $OZ0_CONTEXT until at least N
// sessions are made ahead and ready for a job (default timeout 60s: a framework's import).
func cmdWaitAhead(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waitahead N [TIMEOUT]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	waitInfo(ts, durationArg(ts, args, 1, time.Minute), func(info apiv1.Info) (bool, string) {
		return info.SessionsAhead >= want, fmt.Sprintf("waitahead: the dev server has %d sessions made ahead and ready, want %d", info.SessionsAhead, want)
	})
}

// waitInfo polls the dev server's GET /api/v1/info until done says so, failing the script with
// done's words after timeout.
func waitInfo(ts *testscript.TestScript, timeout time.Duration, done func(apiv1.Info) (bool, string)) {
	c, _ := devClient(ts)
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		info, err := c.Info(ctx)
		cancel()
		ts.Check(err)
		ok, said := done(info)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("after %s: %s", timeout, said)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cmdWaitGrep: waitgrep [-count=N] FILE REGEXP [TIMEOUT] polls FILE (a background command's
// output, redirected) until REGEXP matches in it (N times; default once), default timeout 20s.
func cmdWaitGrep(ts *testscript.TestScript, neg bool, args []string) {
	count := 1
	if len(args) > 0 && strings.HasPrefix(args[0], "-count=") {
		n, err := strconv.Atoi(strings.TrimPrefix(args[0], "-count="))
		ts.Check(err)
		count, args = n, args[1:]
	}
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: waitgrep [-count=N] FILE REGEXP [TIMEOUT]")
	}
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	timeout := durationArg(ts, args, 2, 20*time.Second)
	deadline := time.Now().Add(timeout)
	for {
		b, _ := os.ReadFile(ts.MkAbs(args[0]))
		if len(re.FindAllIndex(b, -1)) >= count {
			return
		}
		if time.Now().After(deadline) {
			ts.Logf("[%s]\n%s", args[0], b)
			ts.Fatalf("waitgrep: %q did not match %d time(s) in %s within %s", args[1], count, args[0], timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cmdProcsGone: procsgone FILE [TIMEOUT] reads a process group id and then process ids from FILE
// (as a harness wrote them, space-separated) and waits until no process of that group and none
// of those processes is alive (a zombie is not), default timeout 10s. Linux only: it reads /proc.
func cmdProcsGone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: procsgone FILE [TIMEOUT]")
	}
	var ids []int
	for _, f := range strings.Fields(ts.ReadFile(args[0])) {
		n, err := strconv.Atoi(f)
		ts.Check(err)
		ids = append(ids, n)
	}
	if len(ids) == 0 {
		ts.Fatalf("procsgone: %s names no process group", args[0])
	}
	timeout := durationArg(ts, args, 1, 10*time.Second)
	deadline := time.Now().Add(timeout)
	for {
		alive := liveProcs(ids[0], ids[1:])
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("procsgone: after %s these still live: %s", timeout, strings.Join(alive, "; "))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// liveProcs lists the processes, not zombies, that are in group pgid or are one of pids.
func liveProcs(pgid int, pids []int) []string {
	want := map[int]bool{}
	for _, p := range pids {
		want[p] = true
	}
	entries, _ := os.ReadDir("/proc")
	var alive []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone while we looked
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		pgrp, _ := strconv.Atoi(f[2])
		if pgrp == pgid || want[pid] {
			alive = append(alive, fmt.Sprintf("pid %d pgrp %d %s", pid, pgrp, strings.TrimSpace(s[:i+1])))
		}
	}
	return alive
}

// cmdDevHTTP: devhttp [-H 'Name: value']... [-noauth] METHOD PATH [BODYFILE] sends a request to
// the dev server of $OZ0_CONTEXT (PATH is appended to its URL) with its bearer token (unless
// -noauth or an Authorization header is given), and prints the status line and the body, as
// httpreq does. Unlike httpreq, a Host header is sent as the request's Host.
func cmdDevHTTP(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! devhttp")
	}
	var headers [][2]string
	var pos []string
	auth := true
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-H" && i+1 < len(args):
			k, v, ok := strings.Cut(args[i+1], ":")
			if !ok {
				ts.Fatalf("devhttp: -H %q is not Name: value", args[i+1])
			}
			headers = append(headers, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
			i++
		case a == "-noauth":
			auth = false
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) < 2 || len(pos) > 3 {
		ts.Fatalf("usage: devhttp [-H 'Name: value']... [-noauth] METHOD PATH [BODYFILE]")
	}
	_, dc := devClient(ts)
	var body io.Reader
	if len(pos) == 3 {
		body = strings.NewReader(ts.ReadFile(pos[2]))
	}
	req, err := http.NewRequest(pos[0], dc.URL+pos[1], body)
	ts.Check(err)
	if auth {
		req.Header.Set("Authorization", "Bearer "+dc.Token)
	}
	for _, h := range headers {
		if strings.EqualFold(h[0], "Host") {
			req.Host = h[1]
			continue
		}
		req.Header.Set(h[0], h[1])
	}
	if body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	ts.Check(err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	ts.Check(err)
	fmt.Fprintf(ts.Stdout(), "%s %s\n%s", resp.Proto, resp.Status, data)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		fmt.Fprintln(ts.Stdout())
	}
}

// cmdSSEResume: sseresume [-client] [-after SEQ] [-gate FILE SEQ] JOB EVERY follows a job's live
// stream on the dev server of $OZ0_CONTEXT to its end, from after event SEQ (default 0),
// dropping the connection after every EVERY events and resuming from the last event it got. It
// checks that the seqs are SEQ+1..N with no gap or duplicate, prints the events as JSON lines as `oz0 job trace` prints them, and on stderr how
// many events and reconnects there were.
//
// Without -client it reads GET /api/v1/jobs/JOB/events itself and resumes alternately with
// ?after= and Last-Event-ID. With -client it runs client.Client.Events, the resume of `oz0 run`,
// through a proxy that cuts the connection after every EVERY events. -gate creates FILE once
// event SEQ has arrived (a harness can wait for it, so that the stream is cut while live).
func cmdSSEResume(ts *testscript.TestScript, neg bool, args []string) {
	useClient := false
	gate, gateSeq := "", int64(0)
	from := int64(0)
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch {
		case args[0] == "-client":
			useClient, args = true, args[1:]
		case args[0] == "-after" && len(args) > 1:
			n, err := strconv.ParseInt(args[1], 10, 64)
			ts.Check(err)
			from, args = n, args[2:]
		case args[0] == "-gate" && len(args) > 2:
			n, err := strconv.ParseInt(args[2], 10, 64)
			ts.Check(err)
			gate, gateSeq, args = ts.MkAbs(args[1]), n, args[3:]
		default:
			ts.Fatalf("sseresume: unknown flag %s", args[0])
		}
	}
	if neg || len(args) != 2 {
		ts.Fatalf("usage: sseresume [-client] [-after SEQ] [-gate FILE SEQ] JOB EVERY")
	}
	job := args[0]
	every, err := strconv.Atoi(args[1])
	ts.Check(err)
	if every < 1 {
		ts.Fatalf("sseresume: EVERY must be at least 1")
	}
	_, dc := devClient(ts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var got []apiv1.Event
	gated := gate == ""
	take := func(ev apiv1.Event) {
		got = append(got, ev)
		if !gated && ev.Seq >= gateSeq {
			gated = true
			ts.Check(os.WriteFile(gate, []byte("open\n"), 0o644))
		}
	}
	reconnects := 0
	if useClient {
		proxy := newCuttingProxy(ts, dc.URL, every)
		defer proxy.Close()
		c := client.New(apiv1.Context{URL: "http://" + proxy.Addr().String(), Token: dc.Token})
		err = c.Events(ctx, job, from, func(ev apiv1.Event) error { take(ev); return nil }, func(error) { reconnects++ })
		ts.Check(err)
	} else {
		after := from
		for ended := false; !ended; reconnects++ {
			if reconnects > 10000 {
				ts.Fatalf("sseresume: no end after %d reconnects", reconnects)
			}
			var evs []apiv1.Event
			evs, ended = readSSE(ts, ctx, dc, job, after, reconnects%2 == 1, every)
			for _, ev := range evs {
				take(ev)
				after = ev.Seq
			}
		}
		reconnects-- // the last connection was no reconnect
	}
	for i, ev := range got {
		if want := from + int64(i+1); ev.Seq != want || ev.Job != job {
			ts.Fatalf("sseresume: event %d of the stream is %s seq %d, want %s seq %d (a gap or a repeat)", i+1, ev.Job, ev.Seq, job, want)
		}
	}
	if len(got) == 0 || !got[len(got)-1].Terminal() {
		ts.Fatalf("sseresume: the stream did not end with the job's terminal status event")
	}
	enc := json.NewEncoder(ts.Stdout())
	enc.SetEscapeHTML(false)
	for _, ev := range got {
		ts.Check(enc.Encode(ev))
	}
	fmt.Fprintf(ts.Stderr(), "%d events, %d reconnects\n", len(got), reconnects)
}

// readSSE reads one connection of a job's event stream from after, at most max events, then
// drops it. ended is true when the server sent its end.
func readSSE(ts *testscript.TestScript, ctx context.Context, dc apiv1.Context, job string, after int64, lastEventID bool, max int) (evs []apiv1.Event, ended bool) {
	u := dc.URL + "/api/v1/jobs/" + job + "/events"
	if !lastEventID {
		u += "?after=" + strconv.FormatInt(after, 10)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	ts.Check(err)
	req.Header.Set("Authorization", "Bearer "+dc.Token)
	if lastEventID {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	}
	// A transport of its own, without keep-alive, so that closing the body drops the connection.
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	ts.Check(err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		ts.Fatalf("sseresume: GET %s: %s %s", u, resp.Status, b)
	}
	br := bufio.NewReader(resp.Body)
	var id, event string
	var data []byte
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			ts.Fatalf("sseresume: the stream broke off without its end: %v", err)
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if event == "end" {
				return evs, true
			}
			if len(data) > 0 {
				var ev apiv1.Event
				ts.Check(json.Unmarshal(data, &ev))
				if strconv.FormatInt(ev.Seq, 10) != id {
					ts.Fatalf("sseresume: event with id %q has seq %d", id, ev.Seq)
				}
				evs = append(evs, ev)
				if len(evs) == max {
					return evs, false
				}
			}
			id, event, data = "", "", nil
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: ")...)
		}
	}
}

// cuttingProxy forwards requests to the dev server and, in each event stream it passes on, cuts
// the connection after every events: a network that drops a long-lived connection.
type cuttingProxy struct {
	net.Listener
	srv *http.Server
}

func newCuttingProxy(ts *testscript.TestScript, upstream string, every int) *cuttingProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := http.NewRequestWithContext(r.Context(), r.Method, upstream+r.URL.RequestURI(), r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		rc := http.NewResponseController(w)
		br := bufio.NewReader(resp.Body)
		n := 0
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				if _, werr := w.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
			if bytes.Equal(line, []byte("\n")) {
				_ = rc.Flush()
				if n++; n == every {
					panic(http.ErrAbortHandler) // drops the connection mid-stream, quietly
				}
			}
		}
	})
	p := &cuttingProxy{Listener: ln, srv: &http.Server{Handler: h}}
	go p.srv.Serve(ln)
	return p
}

func (p *cuttingProxy) Close() error { return p.srv.Close() }

// cmdJSONLines: jsonlines FILE [COUNT] checks that every line of FILE is a JSON object with a
// "type" (as `oz0 run --json` prints events), and that there are COUNT of them when given.
func cmdJSONLines(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: jsonlines FILE [COUNT]")
	}
	text := ts.ReadFile(args[0])
	if !strings.HasSuffix(text, "\n") {
		ts.Fatalf("jsonlines: %s does not end in a newline", args[0])
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, l := range lines {
		var v map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			ts.Fatalf("jsonlines: line %d is not a JSON object: %v", i+1, err)
		}
		if _, ok := v["type"]; !ok {
			ts.Fatalf("jsonlines: line %d has no type", i+1)
		}
	}
	if len(args) == 2 {
		want, err := strconv.Atoi(args[1])
		ts.Check(err)
		if len(lines) != want {
			ts.Fatalf("jsonlines: %d lines, want %d", len(lines), want)
		}
	}
}

// cmdEnvJSON: envjson NAME FILE FIELD sets $NAME to the string FIELD of the JSON object in
// FILE, or of the first object of the JSON array in it (a job's id from `oz0 job list --json`,
// the newest job's).
func cmdEnvJSON(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: envjson NAME FILE FIELD")
	}
	data := []byte(ts.ReadFile(args[1]))
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		var list []map[string]any
		if err := json.Unmarshal(data, &list); err != nil || len(list) == 0 {
			ts.Fatalf("envjson: %s is neither a JSON object nor an array of them with one at least: %s", args[1], strings.TrimSpace(string(data)))
		}
		v = list[0]
	}
	s, ok := v[args[2]].(string)
	if !ok {
		ts.Fatalf("envjson: the object in %s has no string %q", args[1], args[2])
	}
	ts.Setenv(args[0], s)
}
