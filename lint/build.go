package lint

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/internal/textclip"
	"github.com/orchestrator-zero/oz0/plugin"
)

// build makes the typed plugin of what lint read, once it has found no errors: the values the
// rules checked, decoded, never the files read again.
func (l *linter) build() *plugin.Plugin {
	p := &plugin.Plugin{Dir: l.abs, Manifest: l.typedManifest}
	for _, la := range l.loaded {
		a := la.typed
		a.File, a.InstructionsText, a.Input, a.Output = la.file, la.instructions, la.input, la.output
		p.Agents = append(p.Agents, &a)
	}
	slices.SortFunc(p.Agents, func(a, b *plugin.Agent) int { return strings.Compare(a.Name, b.Name) })
	return p
}

// decode fills v, a type that mirrors a schema, from the value of file; a value the type cannot
// hold (a number too large for its field) is an invalid-value finding.
func (l *linter) decode(file string, value any, v any) {
	b, err := json.Marshal(value)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		l.add(file, 1, 1, diag.InvalidValue, "%s", composed(textclip.Clip(err.Error())))
	}
}
