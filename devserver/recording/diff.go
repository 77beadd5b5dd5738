package recording

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/orchestrator-zero/oz0/internal/linediff"
	"github.com/orchestrator-zero/oz0/internal/textclip"
)

// The diff of a replayed request against the recorded one, for people: each place that differs
// by its path in the JSON (system, messages[0].content, tools[1].name), the recorded value after
// "-" and the replayed one after "+". A long or multi-line string is compared line by line, and
// only the lines that changed are shown. At most maxDiffLines lines.

const (
	maxDiffLines = 40
	maxValue     = 160 // characters of one value or line shown
)

// Same is Diff's one line for requests that are the same.
const Same = "  (the same request; only its place among the calls differs)"

// Diff describes how the replayed request (method and path in route, body) differs from the
// recorded one, one line per entry.
func Diff(recordedRoute, route string, recorded, replayed []byte) []string {
	d := &differ{}
	if recordedRoute != route {
		d.add("  request: - %s", recordedRoute)
		d.add("           + %s", route)
	}
	a, errA := decode(recorded)
	b, errB := decode(replayed)
	switch {
	case errA != nil || errB != nil:
		if !bytes.Equal(recorded, replayed) {
			d.lines("body", string(recorded), string(replayed))
		}
	default:
		d.value("", a, b)
	}
	if len(d.out) == 0 {
		d.add("%s", Same)
	}
	if d.more > 0 {
		d.out = append(d.out, fmt.Sprintf("  … and %d more line%s of differences", d.more, plural(d.more)))
	}
	return d.out
}

type differ struct {
	out  []string
	more int
}

func (d *differ) add(format string, a ...any) {
	if len(d.out) >= maxDiffLines {
		d.more++
		return
	}
	d.out = append(d.out, fmt.Sprintf(format, a...))
}

func (d *differ) value(path string, a, b any) {
	switch av := a.(type) {
	case map[string]any:
		if bv, ok := b.(map[string]any); ok {
			d.object(path, av, bv)
			return
		}
	case []any:
		if bv, ok := b.([]any); ok {
			d.array(path, av, bv)
			return
		}
	case string:
		if bv, ok := b.(string); ok {
			if av != bv {
				d.lines(path, av, bv)
			}
			return
		}
	}
	if sameBody(compact(a), compact(b)) {
		return
	}
	d.add("  %s:", name(path))
	d.add("    - %s", textclip.ClipN(string(compact(a)), maxValue))
	d.add("    + %s", textclip.ClipN(string(compact(b)), maxValue))
}

func (d *differ) object(path string, a, b map[string]any) {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		p := k
		if path != "" {
			p = path + "." + k
		}
		av, inA := a[k]
		bv, inB := b[k]
		switch {
		case !inB:
			d.add("  %s: - %s (not sent now)", p, textclip.ClipN(string(compact(av)), maxValue))
		case !inA:
			d.add("  %s: + %s (not in the recording)", p, textclip.ClipN(string(compact(bv)), maxValue))
		default:
			d.value(p, av, bv)
		}
	}
}

func (d *differ) array(path string, a, b []any) {
	for i := 0; i < min(len(a), len(b)); i++ {
		d.value(path+"["+strconv.Itoa(i)+"]", a[i], b[i])
	}
	for i := len(b); i < len(a); i++ {
		d.add("  %s[%d]: - %s (not sent now)", name(path), i, textclip.ClipN(string(compact(a[i])), maxValue))
	}
	for i := len(a); i < len(b); i++ {
		d.add("  %s[%d]: + %s (not in the recording)", name(path), i, textclip.ClipN(string(compact(b[i])), maxValue))
	}
}

// lines shows how two strings differ: whole, when short and on one line; else the lines that
// changed.
func (d *differ) lines(path, a, b string) {
	for _, l := range linediff.Describe(name(path), a, b) {
		d.add("%s", l)
	}
}

func name(path string) string {
	if path == "" {
		return "body"
	}
	return path
}

func compact(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
