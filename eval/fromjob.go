package eval

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/lint/evalfile"
	"github.com/orchestrator-zero/oz0/schemas"
)

// A job made into an eval case (oz0 eval add JOB, the dev UI's "Save as eval case"): its input,
// the assertions what it did proposes (the tools it called with their arguments, the calls
// refused, its result, its status when it did not succeed), how its approvals were answered, and
// its model calls as the case's recording, so that the case replays offline. One engine for both:
// the CLI and the dev server call ProposeCase and WriteCase alike.

// CaseSource is what ProposeCase reads of a dev server: a job, its events and its kept calls.
type CaseSource interface {
	Job(ctx context.Context, id string) (apiv1.Job, error)
	Calls(ctx context.Context, id string) (apiv1.Calls, error)
	Events(ctx context.Context, job string, after int64, fn func(apiv1.Event) error, reconnects func(error)) error
}

// CaseRequest says where the case goes: File, an eval file's name in the plugin's evals
// directory ("" the default: DefaultCaseFile), and the case's Name ("" one made from the input).
type CaseRequest struct {
	File string
	Name string
}

// Proposal is a case made from a job, ready to be written: the eval file whole as it will be
// (Existing is false for a new file), the case's own lines, and its recording.
type Proposal struct {
	File      string // the eval file's name in the evals directory: triage.yaml
	Name      string // the case's name
	Agent     string
	Job       string
	Existing  bool
	YAML      string // the eval file as it will be written
	CaseYAML  string // the lines of the case alone
	Recording string // the recording's path relative to the evals directory (recordings/triage/billing.json)
	// RecordingJSON is the recording as it will be written.
	RecordingJSON []byte
	// Notes say what was not proposed, and why (a tool approved once and denied once).
	Notes []string

	base []byte // the eval file as it was read: WriteCase writes over nothing else
}

// ErrBadCase is wrapped by ProposeCase's and WriteCase's errors for a case that cannot be made as
// asked (a bad file or case name, a name the file has, a job that has not ended or kept no call):
// the request's fault, not the environment's.
var ErrBadCase = errors.New("the eval case cannot be made")

func badCase(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadCase, fmt.Sprintf(format, args...))
}

var (
	fileName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*\.yaml$`)
	caseName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	nameWord = regexp.MustCompile(`[a-z0-9]+`)
)

// CheckFileName checks an eval file's name as a case may be written to it: a *.yaml name in the
// evals directory itself, nothing above or below it.
func CheckFileName(name string) error {
	if !fileName.MatchString(name) || strings.Contains(name, "..") {
		return badCase("the eval file %q is not a name in the plugin's %s directory: give NAME.yaml (letters, digits, '.', '-', '_')", name, evalfile.Dir)
	}
	return nil
}

// DefaultCaseFile is the eval file a case of agent goes to when none is named: the first of files
// (names in the evals directory, sorted) that is agent's, else <agent>.yaml.
func DefaultCaseFile(evalsDir string, agent string) string {
	entries, _ := os.ReadDir(evalsDir)
	for _, e := range entries {
		if !evalfile.IsFile(e) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(evalsDir, e.Name()))
		if err != nil {
			continue
		}
		if f, _ := evalfile.Parse(e.Name(), data); f != nil && f.Agent == agent {
			return e.Name()
		}
	}
	return agent + ".yaml"
}

// ProposeCase reads job id from src and proposes it as a case of the eval file req.File in
// evalsDir (read, not written). schemaURL is the schema a new file's first line points at.
func ProposeCase(ctx context.Context, src CaseSource, id, evalsDir string, req CaseRequest, schemaURL string) (*Proposal, error) {
	job, err := src.Job(ctx, id)
	if err != nil {
		return nil, err
	}
	if !job.Status.Terminal() {
		return nil, badCase("job %s is %s; save it as a case once it has ended", id, job.Status)
	}
	var events []apiv1.Event
	if err := src.Events(ctx, id, 0, func(ev apiv1.Event) error { events = append(events, ev); return nil }, nil); err != nil {
		return nil, err
	}
	calls, err := src.Calls(ctx, id)
	if err != nil {
		return nil, err
	}
	if req.File == "" {
		req.File = DefaultCaseFile(evalsDir, job.Agent)
	}
	if err := CheckFileName(req.File); err != nil {
		return nil, err
	}
	existing, err := os.ReadFile(filepath.Join(evalsDir, req.File))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return Propose(job, events, calls, req, existing, schemaURL)
}

// Propose makes the case of job (its events and kept calls) in the eval file req.File, whose
// content is existing (nil: a new file).
func Propose(job apiv1.Job, events []apiv1.Event, calls apiv1.Calls, req CaseRequest, existing []byte, schemaURL string) (*Proposal, error) {
	p := &Proposal{File: req.File, Agent: job.Agent, Job: job.ID, Existing: existing != nil, base: existing}
	rec := &Recording{Job: job.ID, Agent: job.Agent, Input: job.InputText, Record: job.ModelRecord, Model: job.ModelName,
		DurationMS: newOutcome(job, events).duration().Milliseconds()}
	for _, c := range calls.Calls {
		var kept struct {
			Truncated bool   `json:"truncated"`
			Cut       string `json:"cut"`
		}
		if json.Unmarshal(c.Exchange, &kept) == nil && kept.Truncated {
			return nil, badCase("job %s's model call %d was not kept whole (%s): its recording would not replay", job.ID, c.N, kept.Cut)
		}
		if len(c.Exchange) > 0 {
			rec.Calls = append(rec.Calls, c.Exchange)
		}
	}
	if len(rec.Calls) == 0 {
		if job.Usage.ModelCalls > 0 {
			return nil, badCase("job %s made %d model call(s) that were not kept (oz0 dev --no-record, or oz0 run --no-record): run it again with them kept", job.ID, job.Usage.ModelCalls)
		}
		return nil, badCase("job %s made no model call: a case replays a job's model calls, and it has none", job.ID)
	}
	var names []string
	var file *evalfile.File
	if existing != nil {
		f, ds := evalfile.Parse(req.File, existing)
		if f == nil || len(ds) > 0 {
			return nil, badCase("the eval file %s has problems (oz0 plugin lint shows them); mend them first, or choose another file", req.File)
		}
		if f.Agent != job.Agent {
			return nil, badCase("the eval file %s is agent %s's, and job %s is %s's: choose another file", req.File, f.Agent, job.ID, job.Agent)
		}
		file = f
		for _, c := range f.Cases {
			names = append(names, c.Name)
		}
	}
	p.Name = req.Name
	if p.Name == "" {
		p.Name = suggestName(job, names)
	}
	if !caseName.MatchString(p.Name) || len(p.Name) > 63 {
		return nil, badCase("the case name %q: must be lowercase letters, digits, hyphens and underscores, at most 63 characters", p.Name)
	}
	if slices.Contains(names, p.Name) {
		return nil, badCase("the eval file %s has a case %s already: choose another name", req.File, p.Name)
	}
	p.Recording = evalfile.DefaultRecording(req.File, p.Name)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	rec.Comment = recordingComment
	if err := enc.Encode(rec); err != nil {
		return nil, err
	}
	p.RecordingJSON = b.Bytes()

	node, notes := caseNode(job, events, p.Name, file)
	p.Notes = notes
	var out []byte
	var err error
	if existing == nil {
		out, p.CaseYAML, err = newFile(job.Agent, schemaURL, node)
	} else {
		out, p.CaseYAML, err = appendCase(req.File, existing, node)
	}
	if err != nil {
		return nil, err
	}
	// What is written is what oz0 eval reads: the file, read back, has the case as made.
	f, ds := evalfile.Parse(req.File, out)
	if f == nil || len(ds) > 0 || len(f.Cases) == 0 || f.Cases[len(f.Cases)-1].Name != p.Name {
		msg := "it does not read back"
		if len(ds) > 0 {
			msg = ds[0].Message
		}
		return nil, badCase("the case cannot be added to %s as written (%s); add it by hand:\n%s", req.File, msg, p.CaseYAML)
	}
	p.YAML = string(out)
	return p, nil
}

// suggestName makes a case name from the input's first words, unique among names.
func suggestName(job apiv1.Job, names []string) string {
	words := nameWord.FindAllString(strings.ToLower(job.InputText), -1)
	if len(words) > 4 {
		words = words[:4]
	}
	base := strings.Join(words, "-")
	if len(base) > 40 {
		base = strings.Trim(base[:40], "-")
	}
	if base == "" {
		base = "case"
	}
	name := base
	for i := 2; slices.Contains(names, name); i++ {
		name = fmt.Sprintf("%s-%d", base, i)
	}
	return name
}

// caseNode is the case's YAML: its name, input, how its approvals were answered (unless the
// file's answer them alike), and its assertions.
func caseNode(job apiv1.Job, events []apiv1.Event, name string, file *evalfile.File) (*yaml.Node, []string) {
	o := newOutcome(job, events)
	var notes []string
	m := mapping(false)
	add(m, "name", scalar(name))
	// The input as it was given, as text (a JSON agent's too): the harness is sent that text
	// beside the parsed input, so a mapping written out again (its keys sorted, its spacing
	// another) could make a request the recording does not have.
	add(m, "input", valueNode(job.InputText, false))

	// How a person (or an always rule) answered its approvals: the case answers them alike.
	answers := map[string]string{}
	mixed := map[string]bool{}
	for _, ev := range events {
		if ev.Type != apiv1.EventPermissionDecision {
			continue
		}
		var d struct {
			Tool     string `json:"tool"`
			Decision string `json:"decision"`
			By       string `json:"by"`
		}
		if json.Unmarshal(ev.Data, &d) != nil || !(strings.HasPrefix(d.By, "person") || strings.HasPrefix(d.By, "rule:")) {
			continue
		}
		answer := evalfile.ApproveAll
		if d.Decision == "deny" {
			answer = evalfile.DenyAll
		}
		if prev, ok := answers[d.Tool]; ok && prev != answer {
			mixed[d.Tool] = true
		}
		answers[d.Tool] = answer
	}
	for t := range mixed {
		delete(answers, t)
		notes = append(notes, fmt.Sprintf("%s was approved and denied in the job: the case does not say how to answer it (approvals: {%s: approve} or deny)", t, t))
	}
	if len(answers) > 0 {
		alike := file != nil
		for t, a := range answers {
			if file == nil || file.Approvals.For(t) != a {
				alike = false
			}
		}
		if !alike {
			am := mapping(true)
			for _, t := range slices.Sorted(maps.Keys(answers)) {
				add(am, t, scalar(answers[t]))
			}
			add(m, "approvals", am)
		}
	}

	asserts := &yaml.Node{Kind: yaml.SequenceNode}
	assert := func(key string, v *yaml.Node) {
		item := mapping(false)
		add(item, key, v)
		asserts.Content = append(asserts.Content, item)
	}
	if job.Status != apiv1.StatusSucceeded {
		assert("status", scalar(string(job.Status)))
	}
	seen := map[string]bool{}
	refused := map[string]bool{}
	for _, c := range o.asked {
		if o.denied[c.ID] {
			if !refused[c.Tool] {
				refused[c.Tool] = true
				assert("refused", scalar(c.Tool))
			}
			continue
		}
		key := c.Tool + " " + compact(c.Args)
		if seen[key] {
			continue
		}
		seen[key] = true
		cm := mapping(true)
		add(cm, "name", scalar(c.Tool))
		if len(c.Args) > 0 {
			add(cm, "arguments", valueNode(c.Args, true))
		}
		assert("called", cm)
	}
	if job.Status == apiv1.StatusSucceeded && len(job.Output) > 0 {
		var out any
		if json.Unmarshal(job.Output, &out) == nil {
			assert("equals", valueNode(out, true))
		}
	}
	if len(asserts.Content) > 0 {
		add(m, "assert", asserts)
	}
	return m, notes
}

func mapping(flow bool) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	if flow {
		n.Style = yaml.FlowStyle
	}
	return n
}

func add(m *yaml.Node, key string, v *yaml.Node) {
	m.Content = append(m.Content, scalar(key), v)
}

func scalar(s string) *yaml.Node {
	var n yaml.Node
	_ = n.Encode(s) // a string always encodes, quoted when it must be
	return &n
}

// valueNode is a JSON value as YAML: mappings and lists in flow style when flow (one line, as the
// eval files write an assertion's value), keys in order.
func valueNode(v any, flow bool) *yaml.Node {
	switch v := v.(type) {
	case map[string]any:
		m := mapping(flow)
		for _, k := range slices.Sorted(mapKeys(v)) {
			add(m, k, valueNode(v[k], true))
		}
		return m
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		if flow {
			n.Style = yaml.FlowStyle
		}
		for _, x := range v {
			n.Content = append(n.Content, valueNode(x, true))
		}
		return n
	case string:
		n := scalar(v)
		if strings.Contains(v, "\n") && !flow {
			n.Style = yaml.LiteralStyle
		}
		return n
	default:
		var n yaml.Node
		_ = n.Encode(v)
		return &n
	}
}

// encodeItem is the case as an item of a list, its lines indented by indent spaces.
func encodeItem(node *yaml.Node, indent int) (string, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{node}}); err != nil {
		return "", err
	}
	pad := strings.Repeat(" ", indent)
	var out strings.Builder
	for line := range strings.Lines(b.String()) {
		if strings.TrimSpace(line) != "" {
			out.WriteString(pad)
		}
		out.WriteString(line)
	}
	return out.String(), nil
}

func newFile(agent, schemaURL string, node *yaml.Node) ([]byte, string, error) {
	item, err := encodeItem(node, 2)
	if err != nil {
		return nil, "", err
	}
	var b strings.Builder
	if schemaURL != "" {
		b.WriteString(schemas.Modeline(schemaURL))
	}
	b.WriteString("# oz0 eval runs these cases (docs/eval.md); oz0 eval add JOB adds one made from a job.\n")
	fmt.Fprintf(&b, "agent: %s\ncases:\n", agent)
	b.WriteString(item)
	return []byte(b.String()), item, nil
}

// appendCase adds the case at the end of the file's cases (a block list), keeping the rest of
// the file as it is, comments included.
func appendCase(name string, data []byte, node *yaml.Node) ([]byte, string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, "", badCase("the eval file %s does not read as a mapping", name)
	}
	top := doc.Content[0]
	var cases *yaml.Node
	next := -1 // the line of the key after cases:, -1 when cases: is the last
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == "cases" {
			cases = top.Content[i+1]
			if i+2 < len(top.Content) {
				k := top.Content[i+2]
				next = k.Line - strings.Count(k.HeadComment, "\n") - boolInt(k.HeadComment != "")
			}
		}
	}
	if cases == nil || cases.Kind != yaml.SequenceNode || cases.Style&yaml.FlowStyle != 0 || len(cases.Content) == 0 {
		return nil, "", badCase("the eval file %s has no list of cases written one item a line (cases:, then - name: …) to add to", name)
	}
	// The items' dash is two columns left of their first key.
	indent := max(cases.Content[0].Column-3, 0)
	item, err := encodeItem(node, indent)
	if err != nil {
		return nil, "", err
	}
	text := string(data)
	if next < 0 {
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		return []byte(text + item), item, nil
	}
	lines := strings.SplitAfter(text, "\n")
	at := min(max(next-1, 0), len(lines))
	out := strings.Join(lines[:at], "") + item + strings.Join(lines[at:], "")
	return []byte(out), item, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// WriteCase writes a proposal into evalsDir: the eval file whole and the recording beside it,
// each at once (a temporary file renamed). Nothing is written outside evalsDir: its paths are
// opened through an os.Root of it, so no link leads out. A recording already there is not
// overwritten: the case would replay other calls than the job's.
func WriteCase(evalsDir string, p *Proposal) error {
	if err := CheckFileName(p.File); err != nil {
		return err
	}
	if err := os.MkdirAll(evalsDir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(evalsDir)
	if err != nil {
		return err
	}
	defer root.Close()
	rec := filepath.FromSlash(p.Recording)
	if _, err := root.Lstat(rec); err == nil {
		return badCase("a recording %s is there already: choose another case name", path.Join(evalfile.Dir, p.Recording))
	}
	// The eval file as it was read: changed since, it is not overwritten with what was proposed.
	cur, err := root.ReadFile(p.File)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !p.Existing:
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	case !p.Existing || !bytes.Equal(cur, p.base):
		return badCase("the eval file %s changed since the case was proposed: propose it again", p.File)
	}
	if err := root.MkdirAll(filepath.Dir(rec), 0o755); err != nil {
		return err
	}
	if err := writeIn(root, rec, p.RecordingJSON); err != nil {
		return err
	}
	if err := writeIn(root, p.File, []byte(p.YAML)); err != nil {
		_ = root.Remove(rec) // the case is not there without its file: its recording goes too
		return err
	}
	return nil
}

// writeIn writes data to name in root at once: a temporary file beside it, renamed into place.
func writeIn(root *os.Root, name string, data []byte) error {
	tmp := filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+".tmp-"+randomSuffix())
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		_ = root.Remove(tmp)
	}
	return err
}

func randomSuffix() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}
