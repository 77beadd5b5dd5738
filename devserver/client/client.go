package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/orchestrator-zero/oz0/devserver/store"
)

// Client calls the dev server's control API.
type Client struct {
	ctx  Context
	http *http.Client
}

// New returns a client for ctx.
func New(ctx Context) *Client {
	return &Client{ctx: ctx, http: &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}}}
}

// FromEnv reads OZ0_CONTEXT with getenv.
func FromEnv(getenv func(string) string) (*Client, error) {
	c, err := ParseContext(getenv(ContextEnv))
	if err != nil {
		return nil, err
	}
	return New(c), nil
}

// URL is the server's base URL.
func (c *Client) URL() string { return c.ctx.URL }

// APIError is an error answer of the control API.
type APIError struct {
	Status  int
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *APIError) Error() string { return e.Message }

// ErrNotFound matches an APIError with status 404.
var ErrNotFound = errors.New("not found")

func (e *APIError) Is(target error) bool {
	return target == ErrNotFound && e.Status == http.StatusNotFound
}

func (c *Client) do(ctx context.Context, method, path string, body any, out any) error {
	resp, err := c.send(ctx, method, path, body, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// send makes a call and turns error statuses into *APIError and an unreachable server into an
// error that says how to mend it.
func (c *Client) send(ctx context.Context, method, path string, body any, header http.Header) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.ctx.URL+path, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+c.ctx.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("no dev server at %s (connection refused); start `oz0 dev` and export the %s line it prints", c.ctx.URL, ContextEnv)
		}
		return nil, fmt.Errorf("cannot reach the dev server at %s: %v; is `oz0 dev` running?", c.ctx.URL, err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		var wrap struct{ Error APIError }
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if json.Unmarshal(b, &wrap) != nil || wrap.Error.Message == "" {
			wrap.Error.Message = fmt.Sprintf("the dev server answered %s", resp.Status)
		}
		wrap.Error.Status = resp.StatusCode
		if resp.StatusCode == http.StatusUnauthorized {
			wrap.Error.Message = fmt.Sprintf("the dev server at %s refused the token in %s (%s); export the line the running `oz0 dev` printed", c.ctx.URL, ContextEnv, wrap.Error.Message)
		}
		return nil, &wrap.Error
	}
	return resp, nil
}

// AgentInfo is an agent the dev server runs.
type AgentInfo struct {
	Name    string `json:"name"`
	Plugin  string `json:"plugin"`
	Harness string `json:"harness"`
	Record  string `json:"record"`
	Model   string `json:"model"`
	Input   string `json:"input"`
}

// Info describes the running dev server.
type Info struct {
	Version  string      `json:"version"`
	StateDir string      `json:"state_dir"`
	Sandbox  string      `json:"sandbox"` // the tier its sessions run in
	Agents   []AgentInfo `json:"agents"`
}

// Info asks the server what it runs.
func (c *Client) Info(ctx context.Context) (Info, error) {
	var i Info
	return i, c.do(ctx, http.MethodGet, "/api/v1/info", nil, &i)
}

// JobRequest starts a job. Input is the input as the user gave it, text; the server parses it
// as JSON for an agent that takes JSON.
type JobRequest struct {
	Agent string `json:"agent"`
	Input string `json:"input"`
}

// CreateJob starts a job.
func (c *Client) CreateJob(ctx context.Context, r JobRequest) (store.Job, error) {
	var j store.Job
	return j, c.do(ctx, http.MethodPost, "/api/v1/jobs", r, &j)
}

// Job fetches a job's record.
func (c *Client) Job(ctx context.Context, id string) (store.Job, error) {
	var j store.Job
	return j, c.do(ctx, http.MethodGet, "/api/v1/jobs/"+url.PathEscape(id), nil, &j)
}

// Jobs lists jobs, newest first.
func (c *Client) Jobs(ctx context.Context, status, agent string, limit int) ([]store.Job, error) {
	q := url.Values{}
	if status != "" {
		q.Set("status", status)
	}
	if agent != "" {
		q.Set("agent", agent)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out struct {
		Jobs []store.Job `json:"jobs"`
	}
	return out.Jobs, c.do(ctx, http.MethodGet, "/api/v1/jobs?"+q.Encode(), nil, &out)
}

// Cancel cancels a job.
func (c *Client) Cancel(ctx context.Context, id string) (store.Job, error) {
	var j store.Job
	return j, c.do(ctx, http.MethodPost, "/api/v1/jobs/"+url.PathEscape(id)+"/cancel", nil, &j)
}

// Trace copies a job's whole record, as JSON lines, to w.
func (c *Client) Trace(ctx context.Context, id string, w io.Writer) error {
	resp, err := c.send(ctx, http.MethodGet, "/api/v1/jobs/"+url.PathEscape(id)+"/trace", nil, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	return err
}

// SecretMeta is a secret's name and when it was set; never its value.
type SecretMeta struct {
	Name    string    `json:"name"`
	SetAt   time.Time `json:"set_at"`
	BaseURL string    `json:"base_url,omitempty"`
}

// SetSecret sets a secret; baseURL, for a provider key, overrides the provider's upstream.
func (c *Client) SetSecret(ctx context.Context, name, value, baseURL string) error {
	body := map[string]string{"value": value}
	if baseURL != "" {
		body["base_url"] = baseURL
	}
	return c.do(ctx, http.MethodPut, "/api/v1/secrets/"+url.PathEscape(name), body, nil)
}

// Secrets lists the secrets' names.
func (c *Client) Secrets(ctx context.Context) ([]SecretMeta, error) {
	var out struct {
		Secrets []SecretMeta `json:"secrets"`
	}
	return out.Secrets, c.do(ctx, http.MethodGet, "/api/v1/secrets", nil, &out)
}

// RemoveSecret removes a secret.
func (c *Client) RemoveSecret(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/secrets/"+url.PathEscape(name), nil, nil)
}

// Events follows a job's live stream from after the event numbered after, calling fn for each
// event in order until the job's last event. A dropped connection is resumed from the last event
// seen, so no event is lost or repeated; reconnects is told of each resume (may be nil).
func (c *Client) Events(ctx context.Context, job string, after int64, fn func(store.Event) error, reconnects func(err error)) error {
	failures := 0
	for {
		last, done, err := c.follow(ctx, job, after, fn)
		if done || ctx.Err() != nil {
			return err
		}
		var apiErr *APIError
		if errors.As(err, &apiErr) {
			return err
		}
		if last > after {
			after, failures = last, 0
		} else {
			failures++
		}
		if failures > 20 {
			return fmt.Errorf("lost the live stream of %s: %w", job, err)
		}
		if reconnects != nil {
			reconnects(err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(min(failures, 10)) * 100 * time.Millisecond):
		}
	}
}

// follow reads one SSE connection. done is true when the job's terminal event was delivered or
// fn failed.
func (c *Client) follow(ctx context.Context, job string, after int64, fn func(store.Event) error) (last int64, done bool, err error) {
	h := http.Header{"Accept": {"text/event-stream"}}
	resp, err := c.send(ctx, http.MethodGet, "/api/v1/jobs/"+url.PathEscape(job)+"/events?after="+strconv.FormatInt(after, 10), nil, h)
	if err != nil {
		return after, false, err
	}
	defer resp.Body.Close()
	last = after
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var data []byte
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return last, false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if len(data) == 0 {
				continue
			}
			var ev store.Event
			if err := json.Unmarshal(data, &ev); err != nil {
				return last, true, fmt.Errorf("the dev server sent a bad event: %w", err)
			}
			data = data[:0]
			if ev.Seq <= last {
				continue // already seen before a reconnect
			}
			last = ev.Seq
			if err := fn(ev); err != nil {
				return last, true, err
			}
			if ev.Terminal() {
				return last, true, nil
			}
		case bytes.HasPrefix(line, []byte("data:")):
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
		case strings.HasPrefix(string(line), "event: end"):
			return last, true, nil
		}
	}
}

// Approvals lists the pending approvals (all of them with all).
func (c *Client) Approvals(ctx context.Context, all bool) ([]store.Approval, error) {
	q := ""
	if all {
		q = "?all=1"
	}
	var out struct {
		Approvals []store.Approval `json:"approvals"`
	}
	return out.Approvals, c.do(ctx, http.MethodGet, "/api/v1/approvals"+q, nil, &out)
}

// Approve approves a pending approval with a scope (once, job, always); an "always" answer
// returns the rule it made.
func (c *Client) Approve(ctx context.Context, id, scope string) (store.Approval, *store.ApprovalRule, error) {
	var out struct {
		Approval store.Approval      `json:"approval"`
		Rule     *store.ApprovalRule `json:"rule"`
	}
	err := c.do(ctx, http.MethodPost, "/api/v1/approvals/"+url.PathEscape(id)+"/approve", map[string]string{"scope": scope}, &out)
	return out.Approval, out.Rule, err
}

// Deny denies a pending approval; the reason reaches the harness.
func (c *Client) Deny(ctx context.Context, id, reason string) (store.Approval, error) {
	var out struct {
		Approval store.Approval `json:"approval"`
	}
	err := c.do(ctx, http.MethodPost, "/api/v1/approvals/"+url.PathEscape(id)+"/deny", map[string]string{"reason": reason}, &out)
	return out.Approval, err
}

// Rules lists the "always" rules.
func (c *Client) Rules(ctx context.Context) ([]store.ApprovalRule, error) {
	var out struct {
		Rules []store.ApprovalRule `json:"rules"`
	}
	return out.Rules, c.do(ctx, http.MethodGet, "/api/v1/approval-rules", nil, &out)
}

// RevokeRule removes a rule by id or target.
func (c *Client) RevokeRule(ctx context.Context, id string) (store.ApprovalRule, error) {
	var r store.ApprovalRule
	return r, c.do(ctx, http.MethodDelete, "/api/v1/approval-rules/"+url.PathEscape(id), nil, &r)
}
