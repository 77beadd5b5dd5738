package fakemodel

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/orchestrator-zero/oz0/internal/linediff"
)

// The diff of a request no rule matches against the rule nearest to it, for a script whose rules
// match exact texts (^…$ of a quoted text), as oz0 job script writes them from the recorded
// requests: what changed in the request (the system prompt, the user message, a tool's result)
// shown as oz0 job replay shows a changed request.

// maxDiffLines is the most lines of a nearest rule's diff.
const maxDiffLines = 40

// nearestDiff is the diff of c against the rule that fails the fewest of its conditions on c (the
// first of those), with that rule's name; nil when that rule matches neither the user message nor
// the system prompt on an exact text, or fails a condition that is not one (a pattern: there is
// no text to show a diff against).
func (s *Server) nearestDiff(c *convo) (string, []string) {
	best, bestMiss := -1, 0
	for i := range s.script.Rules {
		if n := s.script.Rules[i].Match.misses(c); n > 0 && (best < 0 || n < bestMiss) {
			best, bestMiss = i, n
		}
	}
	if best < 0 {
		return "", nil
	}
	r := &s.script.Rules[best]
	m := &r.Match
	if !exact(m.User) && !exact(m.System) {
		return "", nil // not a recorded request's rule: a diff of yes/no conditions says little
	}
	var out []string
	text := func(name string, re *regexp.Regexp, got string) bool {
		if re == nil || re.MatchString(got) {
			return true
		}
		want, ok := literal(re)
		if !ok {
			return false
		}
		out = append(out, linediff.Describe(name, want, got)...)
		return true
	}
	if m.Model != nil && !m.Model.MatchString(c.model) {
		return "", nil
	}
	if m.Tools != nil && !m.Tools.matchesTools(c.tools) {
		if m.Tools.Pattern != nil {
			return "", nil
		}
		out = append(out, "  tools:", fmt.Sprintf("    - %s", offered(m.Tools.Want)), fmt.Sprintf("    + %s", offered(len(c.tools) > 0)))
	}
	if m.ToolResult != nil && c.toolResult != m.ToolResult.Want {
		out = append(out, "  tool result:", fmt.Sprintf("    - %s", endsWith(m.ToolResult.Want)), fmt.Sprintf("    + %s", endsWith(c.toolResult)))
	}
	if !text("system", m.System, c.system) || !text("user", m.User, c.user) {
		return "", nil
	}
	if m.ToolResult != nil && m.ToolResult.Want && c.toolResult && !text("tool result", m.ToolResult.Pattern, c.toolResultText) {
		return "", nil
	}
	if len(out) > maxDiffLines {
		out = append(out[:maxDiffLines], fmt.Sprintf("  … and %d more line%s of differences", len(out)-maxDiffLines, plural(len(out)-maxDiffLines)))
	}
	return ruleName(r, best), out
}

func offered(yes bool) string {
	if yes {
		return "tools offered"
	}
	return "no tools"
}

func endsWith(yes bool) string {
	if yes {
		return "ends with a tool result"
	}
	return "does not end with a tool result"
}

// misses counts the conditions of m that c fails.
func (m *Match) misses(c *convo) int {
	n := 0
	for _, fails := range []bool{
		m.Model != nil && !m.Model.MatchString(c.model),
		m.Tools != nil && !m.Tools.matchesTools(c.tools),
		m.ToolResult != nil && c.toolResult != m.ToolResult.Want,
		m.ToolResult != nil && c.toolResult && m.ToolResult.Want && m.ToolResult.Pattern != nil && !m.ToolResult.Pattern.MatchString(c.toolResultText),
		m.System != nil && !m.System.MatchString(c.system),
		m.User != nil && !m.User.MatchString(c.user),
	} {
		if fails {
			n++
		}
	}
	return n
}

// matchesTools is the tools condition on the names of the tools a request offers.
func (t *Cond) matchesTools(tools []string) bool {
	if !t.Want {
		return len(tools) == 0
	}
	for _, name := range tools {
		if t.Pattern == nil || t.Pattern.MatchString(name) {
			return true
		}
	}
	return false
}

func exact(re *regexp.Regexp) bool {
	if re == nil {
		return false
	}
	_, ok := literal(re)
	return ok
}

// literal is the one text an exact pattern matches: ^ and $ around a text quoted with
// regexp.QuoteMeta.
func literal(re *regexp.Regexp) (string, bool) {
	src := re.String()
	if len(src) < 2 || src[0] != '^' || !strings.HasSuffix(src, "$") {
		return "", false
	}
	body := src[1 : len(src)-1]
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		if body[i] == '\\' && i+1 < len(body) {
			i++
		}
		b.WriteByte(body[i])
	}
	s := b.String()
	return s, regexp.QuoteMeta(s) == body
}
