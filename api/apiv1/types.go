package apiv1

import (
	"encoding/json"
	"strconv"
	"time"
)

// Status is where a job stands. A job starts queued; the terminal statuses never change again.
type Status string

// The statuses.
const (
	StatusQueued             Status = "queued"
	StatusRunning            Status = "running"
	StatusWaitingForApproval Status = "waiting_for_approval" // a tool call waits for a person
	StatusSucceeded          Status = "succeeded"            // terminal
	StatusFailed             Status = "failed"               // terminal
	StatusCancelled          Status = "cancelled"            // terminal
	StatusTimedOut           Status = "timed_out"            // terminal
	StatusInterrupted        Status = "interrupted"          // terminal: the dev server stopped (or crashed) while the job was live
)

// Statuses lists every status, live ones first.
var Statuses = []Status{StatusQueued, StatusRunning, StatusWaitingForApproval,
	StatusSucceeded, StatusFailed, StatusCancelled, StatusTimedOut, StatusInterrupted}

// Terminal reports whether st is a final status.
func (st Status) Terminal() bool {
	switch st {
	case StatusSucceeded, StatusFailed, StatusCancelled, StatusTimedOut, StatusInterrupted:
		return true
	}
	return false
}

// Valid reports whether st is one of Statuses.
func (st Status) Valid() bool {
	for _, v := range Statuses {
		if st == v {
			return true
		}
	}
	return false
}

// Job is a job's record: GET /api/v1/jobs/{id}, and the answer of POST /api/v1/jobs and of a
// cancel.
type Job struct {
	ID          string          `json:"id"` // job_ and 20 lowercase base32 characters
	Agent       string          `json:"agent"`
	Plugin      string          `json:"plugin,omitempty"` // the plugin the agent is from
	Input       json.RawMessage `json:"input"`            // the input as the agent takes it: a JSON string for a text agent
	InputText   string          `json:"input_text"`       // the input as text
	ModelRecord string          `json:"model_record,omitempty"`
	ModelName   string          `json:"model_name,omitempty"`
	Status      Status          `json:"status"`
	Reason      string          `json:"reason,omitempty"` // why the job is in its status (a failure, a cancel, an approval it waits for; a session it waits for, when it is queued and read alone)
	Output      json.RawMessage `json:"output,omitempty"` // the answer, once the job succeeded: text or any JSON
	CreatedAt   time.Time       `json:"created_at"`
	StartedAt   time.Time       `json:"started_at,omitzero"` // when it first ran
	EndedAt     time.Time       `json:"ended_at,omitzero"`
	Limits      Limits          `json:"limits"`
	Usage       Usage           `json:"usage"`
	Session     *SessionStart   `json:"session,omitempty"` // how its session was made, once it was
	// Warnings are what the dev server warns of as it makes the job (the answer to its creation
	// only, not its record): its plugin's files have lint errors, and it runs the version that
	// loaded before them.
	Warnings []string `json:"warnings,omitempty"`
	// Traceback is the traceback its harness failed with, as it printed it on stderr (Python's,
	// Node's stack; paths in the plugin relative to it), bounded; its error event carries it too.
	Traceback []string `json:"traceback,omitempty"`
	// From is the job this one was made from: run again (the UI's Run again, a request's from)
	// or replayed from its recording (oz0 job replay, the UI's Replay).
	From *JobOrigin `json:"from,omitempty"`
}

// JobOrigin is the job a job was made from, and how: OriginRunAgain or OriginReplay.
type JobOrigin struct {
	Job string `json:"job"`
	How string `json:"how"`
}

// The ways a job is made from another.
const (
	OriginRunAgain = "run again"
	OriginReplay   = "replay"
)

// SessionStart says how a job's session was made: the data of its EventSession.
type SessionStart struct {
	Start   string          `json:"start"`   // SessionMadeAhead, SessionForkedAhead, SessionForked or SessionCold
	MadeAt  time.Time       `json:"made_at"` // when its process was started
	BoundAt time.Time       `json:"bound_at"`
	Program string          `json:"program,omitempty"`
	Loaded  json.RawMessage `json:"loaded,omitempty"` // what a session made ahead loaded: {"modules":N,"warmed":[…],"failed":[…],"seconds":S}
	Why     string          `json:"why,omitempty"`    // why a node that makes sessions ahead made this one at its job
}

// The starts of a SessionStart.
const (
	SessionMadeAhead   = "made ahead"
	SessionForked      = "forked"       // from its harness's fork server, made ahead, at its job
	SessionForkedAhead = "forked ahead" // from its harness's fork server, before its job
	SessionCold        = "cold"
)

// Limits are a job's limits, as its session request carries them; 0 is no limit.
type Limits struct {
	MaxSteps int     `json:"max_steps"` // the most model calls
	TimeoutS float64 `json:"timeout_s"` // seconds
}

// Usage sums a job's model calls (its model_call events).
type Usage struct {
	ModelCalls          int64   `json:"model_calls"` // calls that reached a model; refused ones are not counted
	InputTokens         int64   `json:"input_tokens"`
	OutputTokens        int64   `json:"output_tokens"`
	CacheReadTokens     int64   `json:"cache_read_input_tokens"`
	CacheCreationTokens int64   `json:"cache_creation_input_tokens"`
	CostUSD             float64 `json:"cost_usd"`
}

// JobRequest is the body of POST /api/v1/jobs. Input is the input as the user gave it, as text;
// the server parses it as JSON for an agent that takes JSON.
type JobRequest struct {
	Agent string `json:"agent"`
	Input string `json:"input"` // at most MaxInput bytes as a JSON string (InputSize)
	// Record says whether the job's model calls are kept (their requests and answers, for
	// GET …/calls, replay and script): true keeps them even when oz0 dev runs with --no-record,
	// false keeps none; absent, as oz0 dev does for every job (it keeps them unless --no-record).
	Record *bool `json:"record,omitempty"`
	// Answers, when set, answers the job's model calls from a recording or a fake model script
	// instead of its model (oz0 eval): a call the recording cannot answer fails the job with a
	// diff, as a replay does.
	Answers *Answers `json:"answers,omitempty"`
	// From, when set, is the job this one runs again (the dev UI's Run again): the same agent, on
	// its model as it resolves now, the new job's from naming it. Not with Answers.
	From string `json:"from,omitempty"`
}

// Answers is where a job's model calls are answered from instead of its model: recorded calls
// (Calls, each an exchange as GET …/calls gives it, made by job Job on the model record Record
// under the model name Model), or a fake model script (Script, YAML; ScriptName names it in
// errors). The job runs on the recorded record and model; a script's on the agent's.
type Answers struct {
	Job        string            `json:"job,omitempty"`
	Record     string            `json:"record,omitempty"`
	Model      string            `json:"model,omitempty"`
	Calls      []json.RawMessage `json:"calls,omitempty"`
	Script     string            `json:"script,omitempty"`
	ScriptName string            `json:"script_name,omitempty"`
}

// ReplayRequest is the body of POST /api/v1/jobs/{id}/replay, which starts a new job of the
// same agent and input whose model calls are answered from job id's recording, and answers it as
// POST /api/v1/jobs does. Upstream sends the calls from the first that departs from the
// recording to the model record's upstream; without it such a call fails the job with a diff.
// GET /api/v1/jobs/{id}/script answers the recording as a fake model script (YAML).
type ReplayRequest struct {
	Upstream bool `json:"upstream,omitempty"`
}

// JobList is the answer of GET /api/v1/jobs?status=&agent=&limit=&before=: jobs, newest first.
type JobList struct {
	Jobs []Job `json:"jobs"`
}

// Event is one entry of a job's ordered event log: an event of its live stream, a line of its
// trace.
type Event struct {
	Job  string          `json:"job"`
	Seq  int64           `json:"seq"`  // 1, 2, 3… per job, without gaps: resume a stream after the last one seen
	Time time.Time       `json:"time"` // never decreases along a job's events
	Type string          `json:"type"` // one of the Event… types; a client shows what it does not know as is
	Data json.RawMessage `json:"data"` // the type's data, below
}

// Event types, with their data. A client ignores a type it does not know.
const (
	// EventStatus is a status change: StatusData. The first is queued (no "from"); one with a
	// terminal status is the job's last event.
	EventStatus = "status"
	// EventSession says how the job's session was made, before anything it did:
	// {"start":"made ahead"|"cold","made_at":"<RFC 3339>","bound_at":"…","program":"…",
	// "loaded":{"modules":N,"failed":[…],"seconds":S},"why":"…"}. A session made ahead was
	// started at made_at with its dependencies loaded (what loaded says) and took its job at
	// bound_at; a cold one was started at its job. why says why a node that makes sessions ahead
	// started this one cold.
	EventSession = "session"
	// EventSay is text the harness streams to the live view: {"text":"…"}.
	EventSay = "say"
	// EventPermissionRequest is a tool call the harness asks for:
	// {"id":"p1","tool":"notify_team","arguments":{…}}.
	EventPermissionRequest = "permission_request"
	// EventPermissionDecision is its answer: {"id":"p1","tool":"…","decision":"allow"|"deny",
	// "arguments":{…},"changed":true,"reason":"…","by":"…"}; by says who decided: "node" (a
	// tool outside the agent's list), "policy" (allowed, nothing asked), "hook:<name>", "person",
	// "person (for this job)", "rule:<id>" (an always rule), or "withdrawn" (the job ended first).
	EventPermissionDecision = "permission_decision"
	// EventToolResult is a tool call's result: {"id":"p1","tool":"…","result":…} or with "error".
	EventToolResult = "tool_result"
	// EventModelCall is one call through the gateway: {"record":"…","model":"…","format":"…",
	// "endpoint":"…","status":200,"input_tokens":N,"output_tokens":N,"cache_read_input_tokens":N,
	// "cache_creation_input_tokens":N,"cost_usd":X,"latency_ms":X,"ttfb_ms":X,"streamed":true,
	// "step":N,"started_at":"<RFC 3339>"}, with "refused", "aborted" or "error" when it did not go
	// through. The event's time is when the call was metered, after its answer (its tool calls
	// may come before it in the trace); started_at is when the call began.
	EventModelCall = "model_call"
	// EventStrayOutput is a line of the harness's stdout that is not protocol JSON: {"line":"…"}.
	EventStrayOutput = "stray_output"
	// EventViolation is a line of the harness's stdout that broke a rule of the protocol, which
	// ended the session (the job fails with the same message): {"rule":"results","message":
	// "protocol violation (results): …","line":"…"}. rule is one of rule 3 (a line over 8 MiB,
	// not kept: no "line"), ids, messages, keys (a key twice in a line) or results (a tool_result
	// for an id never asked, a call not allowed, or another tool); line is the line as the
	// harness wrote it, cut at 64 KiB. Nothing of the line was acted on.
	EventViolation = "violation"
	// EventLog is a harness's log line: {"level":"info","message":"…"}. One with "gap":
	// {"events":N,"bytes":N} is the node's: that many of the session's events could not be
	// recorded (the disk full); it comes just before the job's end.
	EventLog = "log"
	// EventStderr is a line of the harness's stderr: {"line":"…"}.
	EventStderr = "stderr"
	// EventResult is the harness's answer: {"output":<text or any JSON>}.
	EventResult = "result"
	// EventError is the session's failure as the harness said it: {"message":"…"}.
	EventError = "error"
	// EventSpan is an OpenTelemetry span the session sent to the node's OTLP receiver (its
	// framework's own): {"trace_id":"…","span_id":"…","parent_span_id":"…","name":"…",
	// "kind":"client","start":"<RFC 3339>","end":"…","service":"…","scope":"…","status":"error",
	// "status_message":"…","attributes":{…},"events":[{"name":"…","time":"…","attributes":{…}}]}
	// (package telemetry).
	EventSpan = "span"
)

// ReplayWentUpstream begins the message of the warning log event a replay with upstream writes
// when the session left its recording: what follows says where, and how the call differed.
const ReplayWentUpstream = "replay: went upstream from here on: "

// StatusData is the data of an EventStatus event.
type StatusData struct {
	Status Status `json:"status"`
	From   Status `json:"from,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Terminal reports whether e is a job's last event: a status event with a terminal status.
func (e Event) Terminal() bool {
	if e.Type != EventStatus {
		return false
	}
	var d StatusData
	return json.Unmarshal(e.Data, &d) == nil && d.Status.Terminal()
}

// AppendJSON appends the event as json.Marshal writes it, without re-encoding Data, which the
// server has already checked and compacted: the live stream's hot path.
func (e Event) AppendJSON(b []byte) []byte {
	b = e.AppendJSONHead(b)
	if len(e.Data) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, e.Data...)
	}
	return append(b, '}')
}

// AppendJSONHead appends what AppendJSON does before Data: a writer of a long event writes its
// Data after it, and "}", rather than copy the Data into its buffer.
func (e Event) AppendJSONHead(b []byte) []byte {
	b = append(b, `{"job":`...)
	b = appendJSONString(b, e.Job)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `,"time":"`...)
	b = e.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","type":`...)
	b = appendJSONString(b, e.Type)
	return append(b, `,"data":`...)
}

// appendJSONString quotes s as JSON; job ids and event types are plain ASCII, so the fast path
// is a copy.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// ApprovalStatus is where a tool call waiting for a person stands.
type ApprovalStatus string

// The approval statuses; all but pending are final.
const (
	ApprovalPending     ApprovalStatus = "pending"
	ApprovalApproved    ApprovalStatus = "approved"
	ApprovalDenied      ApprovalStatus = "denied"
	ApprovalWithdrawn   ApprovalStatus = "withdrawn"   // the job ended first
	ApprovalInterrupted ApprovalStatus = "interrupted" // the dev server stopped while it waited
)

// Approval scopes: this call only, the rest of its job, or always (a Rule for its target).
const (
	ScopeOnce   = "once"
	ScopeJob    = "job"
	ScopeAlways = "always"
)

// Approval is a tool call waiting for (or answered by) a person: GET /api/v1/approvals/{id}.
type Approval struct {
	ID        string          `json:"id"` // apr_…
	Job       string          `json:"job"`
	Agent     string          `json:"agent"`
	Harness   string          `json:"harness"`
	Tool      string          `json:"tool"`
	Request   string          `json:"request"` // the permission request's id in the session
	Arguments json.RawMessage `json:"arguments"`
	Why       string          `json:"why"` // what asked for a person: requires_approval, or a hook
	Status    ApprovalStatus  `json:"status"`
	Scope     string          `json:"scope,omitempty"`  // of an approved one
	Reason    string          `json:"reason,omitempty"` // of a denied, withdrawn or interrupted one
	CreatedAt time.Time       `json:"created_at"`
	DecidedAt time.Time       `json:"decided_at,omitzero"`

	// ArgumentsBytes is the size of the arguments' JSON. A list (GET /api/v1/approvals, the feed)
	// clips arguments of more than 4 KiB: Arguments is then a JSON string, the start of their JSON
	// text ending in "…", and ArgumentsClipped is true; GET /api/v1/approvals/{id} has them whole.
	ArgumentsBytes   int  `json:"arguments_bytes"`
	ArgumentsClipped bool `json:"arguments_clipped,omitempty"`
}

// Target is how hooks and rules name the call: <harness>.<tool>.
func (a Approval) Target() string { return a.Harness + "." + a.Tool }

// ApprovalList is the answer of GET /api/v1/approvals (pending ones; ?all=1 for every one).
type ApprovalList struct {
	Approvals []Approval `json:"approvals"`
}

// ApproveRequest is the body of POST /api/v1/approvals/{id}/approve; an empty Scope is once.
type ApproveRequest struct {
	Scope string `json:"scope"`
}

// ApproveResponse is its answer; Rule is the rule an "always" answer made, else null.
type ApproveResponse struct {
	Approval Approval `json:"approval"`
	Rule     *Rule    `json:"rule"`
}

// DenyRequest is the body of POST /api/v1/approvals/{id}/deny; the reason reaches the harness,
// and so the model, and must not be empty.
type DenyRequest struct {
	Reason string `json:"reason"`
}

// DenyResponse is its answer.
type DenyResponse struct {
	Approval Approval `json:"approval"`
}

// Rule is an "always" answer: calls of Target are approved without asking, until it is revoked
// (DELETE /api/v1/approval-rules/{id or target}).
type Rule struct {
	ID        string    `json:"id"` // rule_…
	Target    string    `json:"target"`
	Approval  string    `json:"approval,omitempty"` // the approval whose answer made it
	CreatedAt time.Time `json:"created_at"`
}

// RuleList is the answer of GET /api/v1/approval-rules.
type RuleList struct {
	Rules []Rule `json:"rules"`
}

// SecretMeta is a secret's name and when it was set; never its value.
type SecretMeta struct {
	Name    string    `json:"name"`
	SetAt   time.Time `json:"set_at"`
	BaseURL string    `json:"base_url,omitempty"` // a provider key's upstream, when not the provider's own
	// Upstream is where a provider key's record sends its calls: BaseURL, else the provider's own
	// API; "" for a secret that is no provider key.
	Upstream string `json:"upstream,omitempty"`
}

// SecretList is the answer of GET /api/v1/secrets.
type SecretList struct {
	Secrets []SecretMeta `json:"secrets"`
}

// SetSecretRequest is the body of PUT /api/v1/secrets/{name}. BaseURL, for a provider key only,
// points its record at another upstream; empty resets it.
type SetSecretRequest struct {
	Value   string `json:"value"`
	BaseURL string `json:"base_url,omitempty"`
}

// UILogin is the answer of POST /api/v1/ui/login: a fresh one-time link that logs a browser in to
// the dev UI (oz0 ui).
type UILogin struct {
	URL string `json:"url"`
}

// UIJobPath is the path of a job's page in the dev UI, after the server's URL.
func UIJobPath(job string) string { return "/ui/#/jobs/" + job }

// Info is the answer of GET /api/v1/info: what the dev server runs.
type Info struct {
	Version  string      `json:"version"`
	StateDir string      `json:"state_dir"`
	Sandbox  string      `json:"sandbox"` // the tier its sessions run in (docs/sandbox.md)
	Agents   []AgentInfo `json:"agents"`
	// SessionsAhead is how many sessions are made ahead of their jobs and ready for one now
	// (oz0 dev --warm N; none with --cold).
	SessionsAhead int `json:"sessions_ahead"`
}

// AgentInfo is an agent the dev server runs, with the model record its jobs use.
type AgentInfo struct {
	Name    string   `json:"name"`
	Plugin  string   `json:"plugin"`
	Harness string   `json:"harness"`
	Record  string   `json:"record"` // the model record, or "none: <why>"
	Model   string   `json:"model"`
	Input   string   `json:"input"`             // text or json
	Formats []string `json:"formats,omitempty"` // the model API formats its harness speaks
	Note    string   `json:"note,omitempty"`    // how it came to its record, and how to move it
	// Stale says why its jobs run an earlier version of its plugin: the plugin's files have lint
	// errors (or do not load) since that version loaded; "" when they run the files as they are.
	Stale string `json:"stale,omitempty"`
	// Tools are the tools its harness may call (the agent's harness.tools), in its order.
	Tools []ToolInfo `json:"tools,omitempty"`
}

// ToolInfo is a tool an agent may call: whether a person must approve each call (the agent's
// requires_approval), and the tenant's rules (hooks.yaml) that deny or ask for its calls.
type ToolInfo struct {
	Name             string     `json:"name"`
	RequiresApproval bool       `json:"requires_approval,omitempty"`
	Rules            []ToolRule `json:"rules,omitempty"`
}

// ToolRule is a rule of the tenant's hooks that decides a tool's calls: deny or ask; Conditional
// when it decides only some of them (its when or unless reads the arguments or the job).
type ToolRule struct {
	Hook        string `json:"hook"`
	Decision    string `json:"decision"`
	Reason      string `json:"reason,omitempty"`
	Conditional bool   `json:"conditional,omitempty"`
}

// SecretChange is the answer of PUT and DELETE /api/v1/secrets/{name}: what the change did to the
// agents' model records, as oz0 dev says it on its output (an agent moved to another record; for
// a provider key, an agent it leaves on the fake model, and why).
type SecretChange struct {
	Notes []string `json:"notes"`
}

// UsageRow sums the model calls of one agent (and of one job, when asked by job) under one model
// record and model, as a job's Usage sums them.
type UsageRow struct {
	Agent  string `json:"agent"`
	Job    string `json:"job,omitempty"` // when asked by job
	Record string `json:"record"`
	Model  string `json:"model"`
	Usage
}

// UsageReport is the answer of GET /api/v1/usage?agent=&job=&by=job: rows by agent, model record
// and model (and job, with by=job; newest job first), ordered by agent.
type UsageReport struct {
	Usage []UsageRow `json:"usage"`
}

// The feed, GET /api/v1/feed?job=&after=&agent=&status=&limit=: one server-sent-events stream with
// all a live view needs. First a snapshot (the jobs as GET /api/v1/jobs with the same filters
// lists them, and the pending approvals), then every job and approval as it changes, in the order
// of the changes. With ?job=, that job's events too, from after ?after= (or the Last-Event-ID
// header), each with its seq as the SSE id and the text `oz0 run` shows for it. A job or approval
// sent may no longer match the filters or be pending: the client drops it from its lists. A second
// snapshot replaces the lists (the server fell behind the changes and read them again).
const (
	FeedSnapshot = "snapshot" // data: FeedState
	FeedJob      = "job"      // data: Job
	FeedApproval = "approval" // data: Approval
	FeedEvent    = "event"    // data: FeedEventData
	FeedEvalRun  = "eval_run" // data: EvalRun, without its report: a run started, a case of it ended, it ended
)

// FeedState is the data of a snapshot.
type FeedState struct {
	Jobs      []Job      `json:"jobs"`
	Approvals []Approval `json:"approvals"`
}

// FeedEventData is one event of the followed job, with the text `oz0 run` writes for it ("" for
// events it does not show; a say's text without its line end until the line ends).
type FeedEventData struct {
	Event Event  `json:"event"`
	Text  string `json:"text"`
}

// ServerHeader is set, to "v1", on every answer of the control API, errors included: a client
// tells the dev server from another server at OZ0_CONTEXT's address (a model API's error can
// look like an ErrorBody) by it.
const ServerHeader = "Oz0-Api"

// ErrorBody is every error answer: {"error":{"code":"…","message":"…"}}.
type ErrorBody struct {
	Error Error `json:"error"`
}

// Error is what went wrong: a stable code for programs and a one-line message for people.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// The error codes, with the HTTP status they come with.
const (
	CodeBadRequest    = "bad_request"    // 400: a malformed body or query, or a header sent twice
	CodeTimeout       = "timeout"        // 408: the request's body did not come in time
	CodeTooLarge      = "too_large"      // 413: the request's body is over the call's limit
	CodeUnauthorized  = "unauthorized"   // 401: no bearer token, or a wrong one
	CodeForbiddenHost = "forbidden_host" // 403: a Host that is not loopback
	CodeCrossOrigin   = "cross_origin"   // 403: a write from another origin
	CodeCSRF          = "csrf"           // 403: a write from the dev UI without its session's CSRF token
	CodeNotFound      = "not_found"      // 404: no such job, approval, rule or call
	CodeUnknownAgent  = "unknown_agent"  // 404: the dev server runs no such agent
	CodeEnded         = "ended"          // 409: the job has already ended
	CodeLive          = "live"           // 409: the job has not ended (a replay needs it ended)
	CodeNotRecorded   = "not_recorded"   // 409: the job's model calls were not recorded
	CodeDecided       = "decided"        // 409: the approval was already answered
	CodeBadInput      = "bad_input"      // 422: the input does not fit the agent
	CodeNoModel       = "no_model"       // 422: the agent's model resolves to no record (model.use)
	CodeBadSecret     = "bad_secret"     // 400 or 404: a secret name or value refused, or no such secret
	CodeBadQuota      = "bad_quota"      // 400 or 404: a quota or record refused, or no such quota
	CodeShuttingDown  = "shutting_down"  // 503: the dev server is stopping
	CodeDiskFull      = "disk_full"      // 507: the disk that holds the dev server's state is full
	CodeBadEval       = "bad_eval"       // 422: a job that cannot be saved as an eval case as asked (a name the file has, calls not kept), or eval cases that cannot be run as asked
	CodeReadOnly      = "read_only"      // 403: the plugin's files cannot be written by the dev server
	CodeEvalBusy      = "eval_busy"      // 409: an eval run is running already
	CodeInternal      = "internal"       // 500
)

// EvalCaseRequest is the body of POST /api/v1/jobs/{id}/eval-case: a job saved as an eval case
// of its plugin. File is an eval file's name in the plugin's evals directory ("" the first of
// the agent's, else AGENT.yaml); Name the case's ("" one made from the input). Without Write the
// case is proposed, not written.
type EvalCaseRequest struct {
	File  string `json:"file,omitempty"`
	Name  string `json:"name,omitempty"`
	Write bool   `json:"write,omitempty"`
}

// EvalCase is the answer: the eval file whole as it is (or will be) written, the case's own
// lines, and its recording; the same `oz0 eval add JOB` writes.
type EvalCase struct {
	Plugin    string   `json:"plugin"`
	File      string   `json:"file"` // its name in the evals directory: triage.yaml
	Path      string   `json:"path"` // relative to the plugin: evals/triage.yaml
	Name      string   `json:"name"`
	Agent     string   `json:"agent"`
	Job       string   `json:"job"`
	Existing  bool     `json:"existing"` // the file was there: the case is added at the end of its cases
	YAML      string   `json:"yaml"`
	CaseYAML  string   `json:"case_yaml"`
	Recording string   `json:"recording"` // relative to the plugin: evals/recordings/triage/billing.json
	Written   bool     `json:"written"`
	Notes     []string `json:"notes,omitempty"`
}

// EvalFiles is the answer of GET /api/v1/evals: the eval files of the plugins the dev server
// serves.
type EvalFiles struct {
	Files []EvalFileInfo `json:"files"`
}

// EvalFileInfo is one eval file: its plugin, name, agent and cases (or the problems that keep it
// from running).
type EvalFileInfo struct {
	Plugin string `json:"plugin"`
	File   string `json:"file"` // its name in the evals directory
	Path   string `json:"path"` // relative to the plugin
	// Name is how an eval run's report names it: its path, or PLUGIN/PATH when the dev server
	// serves several plugins.
	Name     string         `json:"name"`
	Agent    string         `json:"agent,omitempty"`
	Cases    []EvalCaseInfo `json:"cases"`
	Problems []string       `json:"problems,omitempty"` // its lint findings: it does not run until they are mended
}

// EvalCaseInfo is a case of an eval file, with its assertions.
type EvalCaseInfo struct {
	Name    string           `json:"name"`
	Line    int              `json:"line"`
	Source  string           `json:"source"` // recording, script or live
	Asserts []EvalAssertInfo `json:"asserts"`
}

// EvalAssertInfo is an assertion of a case: its key, where it is (a failure of it in a run's
// report has the same line and column), and its value as compact JSON, clipped.
type EvalAssertInfo struct {
	Kind  string `json:"kind"`
	Line  int    `json:"line"`
	Col   int    `json:"col"`
	Value string `json:"value"`
}

// EvalRunRequest is the body of POST /api/v1/eval-runs: the dev UI runs the plugins' eval cases
// as oz0 eval --dev does, through the same engine. File ("" every eval file) is a file's path as
// GET /api/v1/evals names it (evals/triage.yaml; with several plugins, Plugin says whose); Case,
// with File, one case of it. Live runs every case on the live model records; else each is
// answered from its recording or script, offline.
type EvalRunRequest struct {
	Plugin string `json:"plugin,omitempty"`
	File   string `json:"file,omitempty"`
	Case   string `json:"case,omitempty"`
	Live   bool   `json:"live,omitempty"`
}

// EvalRun is a run of eval cases by the dev server: what was asked, how far it is (Done of
// Cases), and its report, oz0 eval --json's (the cases' results, the totals, and the deltas from
// the run before it as --baseline gives them: baseline), the cases ended so far while it runs.
// The list (GET /api/v1/eval-runs) leaves the report out; Totals say how it went.
type EvalRun struct {
	ID        int64           `json:"id"`
	Request   EvalRunRequest  `json:"request"`
	Status    string          `json:"status"` // running, done, failed, interrupted
	StartedAt time.Time       `json:"started_at"`
	EndedAt   time.Time       `json:"ended_at,omitzero"`
	Cases     int             `json:"cases"`
	Done      int             `json:"done"`
	Totals    *EvalTotals     `json:"totals,omitempty"`
	Error     string          `json:"error,omitempty"` // why a failed run could not go on
	Notes     []string        `json:"notes,omitempty"` // what a person should know while it runs (a job waiting for an approval)
	Report    json.RawMessage `json:"report,omitempty"`
}

// EvalTotals are a run's totals, as oz0 eval --json's.
type EvalTotals struct {
	Passed     int     `json:"passed"`
	Failed     int     `json:"failed"`
	Skipped    int     `json:"skipped"`
	Tokens     int64   `json:"tokens"`
	CostUSD    float64 `json:"cost_usd"`
	DurationMS int64   `json:"duration_ms"`
}

// EvalRuns is the answer of GET /api/v1/eval-runs: the runs kept, newest first.
type EvalRuns struct {
	Runs []EvalRun `json:"runs"`
}
