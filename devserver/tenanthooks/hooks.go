// Package tenanthooks is the dev tenant's permission hooks: the rules and plugin hooks of hooks.yaml
// (schema schemas/hooks.schema.json, docs/hooks.md) that decide each tool call that passed the
// default-deny check. Hooks see a call as <harness>.<tool>, e.g. acme-triage.notify_team, and
// allow it, deny it, change its arguments or ask a person.
//
//	set, err := hooks.Load(filepath.Join(stateDir, tenanthooks.FileName))
//	if err != nil { ... }            // a *diag.ReportError: every problem at its line and column
//	defer set.Close()                // kills the plugin processes
//	res := set.Evaluate(ctx, tenanthooks.Call{Job: job, Agent: agent, Harness: h, Tool: tool, Arguments: args})
//	// res.Decision is allow, deny or ask; res.Arguments are the arguments to run with;
//	// res.By and res.Trail say which hook decided and what each hook that saw the call did.
//
// Evaluation: the hooks run in file order; each sees the call when its match globs, when and
// unless hold. The first that allows, denies or asks decides. A change replaces the arguments
// and the evaluation goes on with them; continue goes on. When no hook decides, the call is
// allowed (by "default"), with the arguments as changed. A hook that fails (a change that cannot
// apply, a plugin that crashes, hangs past its timeout or answers garbage) denies the call, with
// a reason that names it: hooks fail closed.
package tenanthooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/orchestrator-zero/oz0/harnesskit/hook"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
	"github.com/orchestrator-zero/oz0/internal/lazyre"
	"github.com/orchestrator-zero/oz0/internal/textclip"
)

// Decision is what a hook did, or the outcome of an evaluation (allow, deny or ask).
type Decision string

// The decisions; the values are hooks.yaml's decide values.
const (
	Allow    Decision = "allow"
	Deny     Decision = "deny"
	Ask      Decision = "ask"
	Change   Decision = "change"
	Continue Decision = "continue"
)

// Call is a tool call to decide: one that passed the default-deny check (the agent lists the tool).
type Call struct {
	Job, Agent, Harness, Tool string
	// Arguments are as the harness asked: a JSON object (empty means {}).
	Arguments json.RawMessage
}

// Name is the call's qualified name, <harness>.<tool>.
func (c Call) Name() string { return c.Harness + "." + c.Tool }

// By values of a Result that are not a hook's.
const (
	ByDefault = "default" // no hook decided: the call is allowed
	ByHooks   = "hooks"   // the call itself is malformed (arguments that are not a JSON object)
)

// Result is the outcome of an evaluation, for the caller to act on and record on the job's event.
type Result struct {
	// Decision is allow, deny or ask.
	Decision Decision `json:"decision"`
	// Arguments are the arguments to run the tool with, a JSON object: the asked arguments as
	// they came (blanks around them trimmed; {} for none) when no hook changed them, else the
	// changed ones, compact.
	Arguments json.RawMessage `json:"arguments"`
	// Changed says that Arguments differ from the arguments asked; Asked holds those then.
	Changed bool            `json:"changed,omitempty"`
	Asked   json.RawMessage `json:"asked,omitempty"`
	// Reason says why: for the agent with a deny, for the person with an ask.
	Reason string `json:"reason,omitempty"`
	// By is who decided: "hook:<name>", or ByDefault when no hook did (or ByHooks).
	By string `json:"by"`
	// Trail lists every hook that saw the call, in order, and what it did.
	Trail []Step `json:"trail,omitempty"`
}

// Step is what one hook did with a call.
type Step struct {
	Hook string `json:"hook"`
	// Plugin says that the hook is a plugin hook (else a rule).
	Plugin bool `json:"plugin,omitempty"`
	// Decision is what it did: allow, deny, ask, change or continue; deny when it failed.
	Decision Decision `json:"decision"`
	Reason   string   `json:"reason,omitempty"`
	// Arguments, after a change, are the arguments it made.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Error says how the hook failed (the call is then denied).
	Error string `json:"error,omitempty"`
	// Elapsed is how long a plugin hook took, start included (0 for a rule).
	Elapsed time.Duration `json:"elapsed_ns,omitempty"`
}

// Set is the hooks of one file. Its methods are safe for concurrent use; a nil *Set is no hooks.
type Set struct {
	name  string
	dir   string // plugin paths are relative to it; plugins run in it
	hooks []*hookDef
	opts  options

	closeOnce sync.Once
}

func newSet(name, dir string, defs []*hookDef, opts []Option) *Set {
	s := &Set{name: name, dir: dir, hooks: defs, opts: options{startTimeout: StartTimeout}}
	for _, o := range opts {
		o(&s.opts)
	}
	for _, h := range defs {
		if h.plugin != nil {
			h.plugin.set = s
		}
	}
	return s
}

// Name is the file the hooks came from.
func (s *Set) Name() string {
	if s == nil {
		return ""
	}
	return s.name
}

// Names lists the hooks' names, in evaluation order.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	out := make([]string, len(s.hooks))
	for i, h := range s.hooks {
		out[i] = h.name
	}
	return out
}

// Len is the number of hooks.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.hooks)
}

// Close kills the plugin processes and waits for them to exit. Calls being decided by a plugin
// at that moment are denied; a plugin hook that sees a call after Close denies it. Rules go on
// working. Close may be called more than once.
func (s *Set) Close() error {
	if s == nil {
		return nil
	}
	s.closeOnce.Do(func() {
		var wg sync.WaitGroup
		for _, h := range s.hooks {
			if h.plugin != nil {
				wg.Go(h.plugin.close)
			}
		}
		wg.Wait()
	})
	return nil
}

// Evaluate decides c with the hooks, in order (see the package doc). It never fails: whatever
// goes wrong denies the call, with a reason that says what. When ctx ends while a plugin is
// deciding, the call is denied.
func (s *Set) Evaluate(ctx context.Context, c Call) Result {
	askedRaw := bytes.TrimSpace(c.Arguments)
	if len(askedRaw) == 0 {
		askedRaw = []byte("{}")
	}
	v, err := decodeJSON(askedRaw)
	args, isObject := v.(map[string]any)
	if err != nil || !isObject {
		what := "not valid JSON"
		if err == nil {
			what = "not a JSON object"
		}
		return Result{Decision: Deny, Arguments: c.Arguments, By: ByHooks,
			Reason: "the call's arguments are " + what + "; hooks cannot decide it"}
	}
	res := Result{Decision: Allow, Arguments: askedRaw, By: ByDefault}
	if s == nil {
		return res
	}
	name := c.Name()
	changed := false
	for _, h := range s.hooks {
		sees, unsure := h.sees(name, c, args)
		if unsure != "" {
			// A string its bounds cannot read as a number, which a tool may (Python reads
			// "010000" and "50_000"): neither the hook's decision nor passing it by is safe.
			res.Decision, res.By = Ask, "hook:"+h.name
			res.Reason = fmt.Sprintf("hook %s cannot compare %s with its bounds as a number: a person decides", h.name, unsure)
			res.Trail = append(res.Trail, Step{Hook: h.name, Decision: Ask, Reason: res.Reason})
			break
		}
		if !sees {
			continue
		}
		var step Step
		var d Decision
		if h.plugin != nil {
			var newArgs map[string]any
			step, newArgs = h.plugin.decide(ctx, c, name, args, currentRaw(askedRaw, args, changed))
			d = step.Decision
			if d == Change && step.Error == "" {
				args, changed = newArgs, true
			}
		} else {
			step = Step{Hook: h.name, Decision: h.decide, Reason: h.reason}
			d = h.decide
			if d == Change {
				newArgs, err := h.change(args)
				if err != nil {
					step.Decision, step.Error = Deny, err.Error()
					d = Deny
				} else {
					args, changed = newArgs, true
					step.Arguments = mustMarshal(args)
				}
			}
		}
		res.Trail = append(res.Trail, step)
		if step.Error != "" {
			res.Decision, res.By = Deny, "hook:"+h.name
			res.Reason = fmt.Sprintf("hook %s failed: %s", h.name, step.Error)
			break
		}
		if d == Allow || d == Deny || d == Ask {
			res.Decision, res.By, res.Reason = d, "hook:"+h.name, step.Reason
			if res.Reason == "" {
				res.Reason = defaultReason(d, h.name)
			}
			break
		}
	}
	if changed {
		final := mustMarshal(args)
		if !jsonEqual(final, askedRaw) {
			res.Arguments, res.Changed, res.Asked = final, true, askedRaw
		}
	}
	return res
}

func defaultReason(d Decision, hook string) string {
	switch d {
	case Deny:
		return "denied by hook " + hook
	case Ask:
		return "hook " + hook + " asks a person"
	}
	return "allowed by hook " + hook
}

// currentRaw is the arguments as a plugin is to see them: as asked, or as changed.
func currentRaw(asked []byte, args map[string]any, changed bool) json.RawMessage {
	if !changed {
		return asked
	}
	return mustMarshal(args)
}

// sees reports whether the hook sees the call: a glob matches and the conditions hold. unsure
// names an argument whose value a bounds condition of the hook cannot read (unsureOf): the hook
// can neither see the call nor pass it by.
func (h *hookDef) sees(name string, c Call, args map[string]any) (sees bool, unsure string) {
	matched := false
	for _, g := range h.globs {
		if g.MatchString(name) {
			matched = true
			break
		}
	}
	if !matched {
		return false, ""
	}
	for _, cs := range []*conditions{h.when, h.unless} {
		if cs != nil {
			if u := cs.unsure(args); u != "" {
				return false, u
			}
		}
	}
	if h.when != nil && !h.when.hold(c, args) {
		return false, ""
	}
	if h.unless != nil && h.unless.hold(c, args) {
		return false, ""
	}
	return true, ""
}

func (cs *conditions) hold(c Call, args map[string]any) bool {
	if cs.agent != nil && !cs.agent.MatchString(c.Agent) {
		return false
	}
	if cs.job != nil && !cs.job.MatchString(c.Job) {
		return false
	}
	for _, a := range cs.args {
		v, ok := lookup(args, a.key)
		if !ok || !a.holds(v) {
			return false
		}
	}
	return true
}

// unsure names the first argument that a bounds condition finds as a string it cannot read as a
// number in JSON's syntax (`amount "010000"`), "" when there is none.
func (cs *conditions) unsure(args map[string]any) string {
	for _, a := range cs.args {
		if a.re != nil {
			continue
		}
		v, ok := lookup(args, a.key)
		if s, isString := v.(string); ok && isString {
			if _, ok := number(s); !ok {
				return fmt.Sprintf("argument %s %s", a.key, strconv.Quote(textclip.ClipN(s, 40)))
			}
		}
	}
	return ""
}

// holds reports whether an argument's value meets the condition: its regular expression on the
// value's text, or its bounds on the value as a number. For bounds, a number is compared by its
// value whatever its spelling (10000, 10000.0, 1e4 and "1e4" are the same; 1e400 is above every
// bound, as the float64 a tool reads it as); a value that is not a number does not hold, and a
// string that does not hold one in JSON's syntax sends the call to a person (conditions.unsure).
func (a argCondition) holds(v any) bool {
	if a.re != nil {
		return a.re.MatchString(valueText(v))
	}
	f, ok := number(v)
	if !ok {
		return false
	}
	return (a.min == nil || f >= *a.min) && (a.max == nil || f <= *a.max)
}

// jsonNumber is a JSON number's syntax.
var jsonNumber = lazyre.New(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

// number is v as a float64: a JSON number (out of float64's range, ±Inf), or a string holding
// one (spaces around it aside), as a tool that converts strings reads it.
func number(v any) (float64, bool) {
	var text string
	switch v := v.(type) {
	case json.Number:
		text = string(v)
	case float64:
		return v, !math.IsNaN(v)
	case int:
		return float64(v), true
	case string:
		text = strings.TrimSpace(v)
		if !jsonNumber().MatchString(text) {
			return 0, false
		}
	default:
		return 0, false
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}

// lookup finds an argument by key: the key itself, else a dotted path into nested objects and
// arrays (by index).
func lookup(args map[string]any, key string) (any, bool) {
	if v, ok := args[key]; ok {
		return v, true
	}
	if !strings.Contains(key, ".") {
		return nil, false
	}
	var cur any = args
	for _, part := range strings.Split(key, ".") {
		switch node := cur.(type) {
		case map[string]any:
			v, ok := node[part]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(node) {
				return nil, false
			}
			cur = node[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// valueText is the text a condition's regular expression sees: a string as it is, anything else
// as its JSON.
func valueText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return string(mustMarshal(v))
}

// change applies a rule's change to args and returns the new arguments; args is not modified.
func (h *hookDef) change(args map[string]any) (map[string]any, error) {
	if h.replace != nil {
		return h.replace, nil
	}
	return mergePatch(args, h.merge, "")
}

// mergePatch applies patch to target as a JSON Merge Patch (RFC 7386), except that merging a
// mapping into a value that is not an object (nor absent nor null) is an error rather than a
// replacement. It copies what it changes and shares the rest.
func mergePatch(target, patch map[string]any, at string) (map[string]any, error) {
	out := make(map[string]any, len(target)+len(patch))
	for k, v := range target {
		out[k] = v
	}
	for k, pv := range patch {
		path := k
		if at != "" {
			path = at + "." + k
		}
		switch pv := pv.(type) {
		case nil:
			delete(out, k)
		case map[string]any:
			cur, ok := out[k]
			var base map[string]any
			switch cur := cur.(type) {
			case map[string]any:
				base = cur
			case nil:
				_ = ok
				base = map[string]any{}
			default:
				return nil, fmt.Errorf("cannot merge a mapping into argument `%s`: it is %s, not an object", path, jsonType(cur))
			}
			merged, err := mergePatch(base, pv, path)
			if err != nil {
				return nil, err
			}
			out[k] = merged
		default:
			out[k] = pv
		}
	}
	return out, nil
}

func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "null"
}

func mustMarshal(v any) json.RawMessage {
	b, err := jsonutil.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

// jsonEqual compares two JSON values by meaning (key order and spacing aside).
func jsonEqual(a, b []byte) bool {
	va, err1 := decodeJSON(a)
	vb, err2 := decodeJSON(b)
	if err1 != nil || err2 != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(va, vb)
}

var errClosed = errors.New("the hooks were closed (reloaded or shut down)")

// fromHook converts a plugin's decision to a Step.
func fromHook(name string, d hook.Decision) Step {
	return Step{Hook: name, Plugin: true, Decision: Decision(d.Verdict), Reason: d.Reason}
}

// RuleMark is a rule of the file that decides calls of a tool before they run: what the agents
// page draws on the tool (a deny, an ask). Conditional says it decides only some calls (its when
// or unless reads the arguments or the job).
type RuleMark struct {
	Hook        string   `json:"hook"`
	Decision    Decision `json:"decision"`
	Reason      string   `json:"reason,omitempty"`
	Conditional bool     `json:"conditional,omitempty"`
}

// Marks lists the rules (not plugin hooks, whose answers are not known ahead) that deny or ask
// for a call of harness.tool by agent, in the file's order. A rule whose agent condition does not
// hold for agent is left out.
func (s *Set) Marks(agent, harness, tool string) []RuleMark {
	if s == nil {
		return nil
	}
	name := harness + "." + tool
	var out []RuleMark
	for _, h := range s.hooks {
		if h.plugin != nil || (h.decide != Deny && h.decide != Ask) {
			continue
		}
		matched := false
		for _, g := range h.globs {
			matched = matched || g.MatchString(name)
		}
		if !matched || (h.when != nil && h.when.agent != nil && !h.when.agent.MatchString(agent)) ||
			(h.unless != nil && h.unless.agent != nil && h.unless.agent.MatchString(agent) && h.unless.job == nil && len(h.unless.args) == 0) {
			continue
		}
		cond := (h.when != nil && (h.when.job != nil || len(h.when.args) > 0)) || (h.unless != nil && (h.unless.job != nil || len(h.unless.args) > 0))
		out = append(out, RuleMark{Hook: h.name, Decision: h.decide, Reason: h.reason, Conditional: cond})
	}
	return out
}
