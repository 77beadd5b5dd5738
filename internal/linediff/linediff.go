// Package linediff shows how two texts differ, for people: the lines removed after "-" and the
// lines added after "+", by the longest common subsequence of lines. A replayed request's diff
// against its recording and a fake model script's nearest rule say it alike.
package linediff

import (
	"strconv"
	"strings"

	"github.com/orchestrator-zero/oz0/internal/textclip"
)

// MaxValue is how many characters of one value or line are shown.
const MaxValue = 160

// Op is a line removed ('-') or added ('+').
type Op struct {
	Kind byte
	Text string
}

// Describe is how b differs from a, under the heading name: both whole, quoted, when short and on
// one line; else the lines that changed. Nil when they are the same.
func Describe(name, a, b string) []string {
	if a == b {
		return nil
	}
	out := []string{"  " + name + ":"}
	if !strings.Contains(a+b, "\n") && len(a) <= MaxValue && len(b) <= MaxValue {
		return append(out, "    - "+strconv.Quote(a), "    + "+strconv.Quote(b))
	}
	for _, op := range Lines(strings.Split(a, "\n"), strings.Split(b, "\n")) {
		out = append(out, "    "+string(op.Kind)+" "+textclip.ClipN(op.Text, MaxValue))
	}
	return out
}

// Lines returns the lines removed from a and added in b, in order, by the longest common
// subsequence of lines (inputs are prompts: tens or hundreds of lines). Very long inputs fall back
// to their first differing lines.
func Lines(a, b []string) []Op {
	if len(a)*len(b) > 1<<20 {
		i := 0
		for i < len(a) && i < len(b) && a[i] == b[i] {
			i++
		}
		var ops []Op
		if i < len(a) {
			ops = append(ops, Op{'-', a[i]})
		}
		if i < len(b) {
			ops = append(ops, Op{'+', b[i]})
		}
		return ops
	}
	// lcs[i][j]: the common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	// Walk both, a removal before an addition, so a changed line reads as - old, + new.
	var ops []Op
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			i++
			j++
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, Op{'-', a[i]})
			i++
		default:
			ops = append(ops, Op{'+', b[j]})
			j++
		}
	}
	return ops
}
