package schemas

import (
	"strings"
)

// Closest returns the candidate nearest to word, for a "did you mean"
// hint: the same ignoring case, - and _; a small edit distance (at most a
// third of the word's length, between 1 and 3); or a candidate that starts
// with a word of 4 or more characters. ok is false when nothing is close.
func Closest(word string, candidates []string) (best string, ok bool) {
	w := normalize(word)
	if w == "" {
		return "", false
	}
	maxDist := len([]rune(w)) / 3
	maxDist = max(1, min(3, maxDist))
	bestDist := maxDist + 1
	for _, c := range candidates {
		if c == word {
			continue
		}
		d := editDistance(w, normalize(c), bestDist)
		if d < bestDist {
			best, bestDist = c, d
		}
	}
	if best != "" {
		return best, true
	}
	if len(w) >= 4 {
		for _, c := range candidates {
			if c != word && strings.HasPrefix(normalize(c), w) {
				return c, true
			}
		}
	}
	return "", false
}

func normalize(s string) string {
	s = strings.ToLower(s)
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' {
			return -1
		}
		return r
	}, s)
}

// editDistance is the Levenshtein distance of a and b, or a value ≥ limit
// once it is known to be at least limit. Long inputs are not compared.
func editDistance(a, b string, limit int) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 256 || len(rb) > 256 {
		return limit
	}
	if d := len(ra) - len(rb); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= limit {
			return limit
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
