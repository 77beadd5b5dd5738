// Package hook is the Go SDK for oz0 plugin hooks: programs that decide a tenant's tool calls
// with logic a rule in hooks.yaml cannot express. A plugin hook is a Go main of a few lines:
//
//	type afterHours struct{}
//
//	func (afterHours) Decide(ctx context.Context, req hook.Request) (hook.Decision, error) {
//		if h := time.Now().Hour(); h < 9 || h >= 18 {
//			return hook.Deny("outside working hours"), nil
//		}
//		return hook.Continue(), nil
//	}
//
//	func main() { hook.Serve(afterHours{}) }
//
// and hooks.yaml names the built binary:
//
//	hooks:
//	  - name: after-hours
//	    match: "*.notify_*"
//	    plugin: ./bin/after-hours
//	    timeout: 2s
//
// The host (the dev server, package devserver/tenanthooks) starts the binary on the first call the hook
// sees, keeps it running, calls Decide once per call (concurrently: Decide must be safe for
// concurrent use) and kills it when the hooks are closed. A Decide that returns an error, panics,
// takes longer than the hook's timeout or answers something invalid denies the call: hooks fail
// closed.
//
// # The wire protocol
//
// Plugin hooks speak hashicorp/go-plugin over gRPC with the handshake in Handshake (protocol
// version 1, magic cookie OZ0_HOOK_PLUGIN). The plugin serves one gRPC service, written here
// without generated code:
//
//	service oz0.hook.v1.Hook {
//	  rpc Decide(google.protobuf.BytesValue) returns (google.protobuf.BytesValue);
//	}
//
// whose request holds a Request as JSON and whose answer holds a Decision as JSON (see their
// json tags). A plugin in another language implements that service, go-plugin's handshake line
// and its gRPC health service ("plugin" SERVING); see docs/hooks.md.
package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/orchestrator-zero/oz0/internal/textclip"
)

// Request is one tool call for a hook to decide.
type Request struct {
	// Hook is the hook's name in hooks.yaml: one binary may serve several hooks.
	Hook    string `json:"hook"`
	Job     string `json:"job"`
	Agent   string `json:"agent"`
	Harness string `json:"harness"`
	Tool    string `json:"tool"`
	// Name is the qualified name the hook matched: <harness>.<tool>, e.g. acme-triage.notify_team.
	Name string `json:"name"`
	// Arguments are the call's arguments, a JSON object: as the harness asked, or as an earlier
	// hook changed them.
	Arguments json.RawMessage `json:"arguments"`
	// Config is the hook's config value from hooks.yaml (JSON), or empty when it has none.
	Config json.RawMessage `json:"config,omitempty"`
}

// Bind decodes the arguments into v (a pointer to a struct or map).
func (r Request) Bind(v any) error {
	if len(r.Arguments) == 0 {
		return json.Unmarshal([]byte("{}"), v)
	}
	return json.Unmarshal(r.Arguments, v)
}

// BindConfig decodes the hook's config into v; with no config, v is left as it is.
func (r Request) BindConfig(v any) error {
	if len(bytes.TrimSpace(r.Config)) == 0 || string(bytes.TrimSpace(r.Config)) == "null" {
		return nil
	}
	return json.Unmarshal(r.Config, v)
}

// Verdict is what a hook does with a call.
type Verdict string

// The verdicts. Allow, Deny and Ask end the evaluation of the tenant's hooks; Change and Continue
// go on to the next hook, Change with the arguments it gives.
const (
	VerdictAllow    Verdict = "allow"    // the call runs (with the arguments as they are now)
	VerdictDeny     Verdict = "deny"     // the call is refused; the reason reaches the agent
	VerdictAsk      Verdict = "ask"      // a person decides, in the approvals inbox
	VerdictChange   Verdict = "change"   // the call goes on with Decision.Arguments instead
	VerdictContinue Verdict = "continue" // no opinion: the next hook decides
)

// Verdicts lists the verdicts.
var Verdicts = []Verdict{VerdictAllow, VerdictDeny, VerdictAsk, VerdictChange, VerdictContinue}

// Decision is a hook's answer.
type Decision struct {
	Verdict Verdict `json:"decision"`
	// Reason says why: sent to the agent with a deny, shown to the person with an ask, recorded
	// in the job's trace always.
	Reason string `json:"reason,omitempty"`
	// Arguments, for Change only, are the whole new arguments: a JSON object.
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Allow allows the call; the evaluation ends.
func Allow(reason string) Decision { return Decision{Verdict: VerdictAllow, Reason: reason} }

// Deny refuses the call for reason; the evaluation ends.
func Deny(reason string) Decision { return Decision{Verdict: VerdictDeny, Reason: reason} }

// Ask has a person decide the call; reason is shown to them. The evaluation ends.
func Ask(reason string) Decision { return Decision{Verdict: VerdictAsk, Reason: reason} }

// Continue leaves the call to the next hook (or the default, allow).
func Continue() Decision { return Decision{Verdict: VerdictContinue} }

// Change goes on with arguments (anything that marshals to a JSON object: a struct, a map,
// json.RawMessage) in place of the call's; later hooks see them.
func Change(arguments any, reason string) (Decision, error) {
	raw, err := json.Marshal(arguments)
	if err != nil {
		return Decision{}, fmt.Errorf("hook: the changed arguments: %w", err)
	}
	d := Decision{Verdict: VerdictChange, Reason: reason, Arguments: raw}
	if err := d.Validate(); err != nil {
		return Decision{}, err
	}
	return d, nil
}

// MaxReasonBytes bounds a decision's reason.
const MaxReasonBytes = 4096

// Validate reports what is wrong with a decision: an unknown verdict, Change without arguments
// that are a JSON object, arguments with another verdict, a reason that is too long.
func (d Decision) Validate() error {
	switch d.Verdict {
	case VerdictAllow, VerdictDeny, VerdictAsk, VerdictContinue:
		if len(d.Arguments) > 0 {
			return fmt.Errorf("decision %q carries arguments; only %q does", d.Verdict, VerdictChange)
		}
	case VerdictChange:
		if err := checkObject(d.Arguments); err != nil {
			return fmt.Errorf("decision %q: %w", d.Verdict, err)
		}
	case "":
		return errors.New("no decision (empty verdict)")
	default:
		names := make([]string, len(Verdicts))
		for i, v := range Verdicts {
			names[i] = string(v)
		}
		return fmt.Errorf("decision %q is not one of %s", clip(string(d.Verdict)), strings.Join(names, ", "))
	}
	if len(d.Reason) > MaxReasonBytes {
		return fmt.Errorf("the reason is longer than %d bytes", MaxReasonBytes)
	}
	return nil
}

func checkObject(raw json.RawMessage) error {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return errors.New("no arguments (they must be a JSON object)")
	}
	if !json.Valid(t) {
		return errors.New("the arguments are not valid JSON")
	}
	if t[0] != '{' {
		return fmt.Errorf("the arguments must be a JSON object, not %s", jsonKind(t[0]))
	}
	return nil
}

func jsonKind(c byte) string {
	switch c {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// ParseDecision decodes a Decision from its JSON (a plugin's answer) strictly: unknown fields,
// trailing data and invalid decisions are errors.
func ParseDecision(data []byte) (Decision, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var d Decision
	if err := dec.Decode(&d); err != nil {
		return Decision{}, fmt.Errorf("not a decision: %s", clip(err.Error()))
	}
	if dec.More() {
		return Decision{}, errors.New("not a decision: data after the JSON object")
	}
	if err := d.Validate(); err != nil {
		return Decision{}, err
	}
	if d.Verdict == VerdictChange {
		var buf bytes.Buffer
		if err := json.Compact(&buf, d.Arguments); err == nil {
			d.Arguments = buf.Bytes()
		}
	}
	return d, nil
}

// Hook decides tool calls. Decide is called concurrently; ctx ends when the hook's timeout
// passes or the call is moot. An error denies the call, with the error's text in the reason.
type Hook interface {
	Decide(ctx context.Context, req Request) (Decision, error)
}

// Func is a function that is a Hook.
type Func func(ctx context.Context, req Request) (Decision, error)

// Decide calls f.
func (f Func) Decide(ctx context.Context, req Request) (Decision, error) { return f(ctx, req) }

func clip(s string) string { return textclip.ClipN(s, 200) }
