package tenanthooks

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// compileGlob turns a glob over <harness>.<tool> into an anchored regular expression:
// * is any run of characters, ? one character, [abc] / [a-z] one of a set, [!abc] / [^abc] one
// not in it, \x the character x. Matching is case-sensitive and of the whole name.
func compileGlob(glob string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString(`^`)
	rs := []rune(glob)
	for i := 0; i < len(rs); i++ {
		switch c := rs[i]; c {
		case '*':
			for i+1 < len(rs) && rs[i+1] == '*' {
				i++
			}
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		case '\\':
			if i+1 >= len(rs) {
				return nil, errors.New(`it ends with \ (escape what?); write \\ for a backslash`)
			}
			i++
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		case '[':
			j, class, err := globClass(rs, i)
			if err != nil {
				return nil, err
			}
			b.WriteString(class)
			i = j
		case ']':
			return nil, errors.New("] without [; write \\] for a literal ]")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString(`$`)
	return regexp.Compile(b.String())
}

// globClass parses the class that starts at rs[start] == '[' and returns the index of its ']'
// and the class as a regular expression.
func globClass(rs []rune, start int) (int, string, error) {
	var b strings.Builder
	b.WriteByte('[')
	i := start + 1
	if i < len(rs) && (rs[i] == '!' || rs[i] == '^') {
		b.WriteByte('^')
		i++
	}
	n := 0
	for ; i < len(rs); i++ {
		c := rs[i]
		switch {
		case c == ']' && n > 0:
			b.WriteByte(']')
			// A range must go up: the regexp compiler checks it.
			if _, err := regexp.Compile(b.String()); err != nil {
				return 0, "", fmt.Errorf("the set %s is not valid (a range must go up, e.g. [a-z])", string(rs[start:i+1]))
			}
			return i, b.String(), nil
		case c == ']':
			return 0, "", fmt.Errorf("the set at column %d is empty ([]); write \\] for a literal ]", start+1)
		case c == '\\':
			if i+1 >= len(rs) {
				return 0, "", errors.New(`it ends with \ (escape what?)`)
			}
			i++
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
			n++
		case c == '-' && n > 0 && i+1 < len(rs) && rs[i+1] != ']':
			b.WriteByte('-')
		default:
			if strings.ContainsRune(`\^[]-`, c) {
				b.WriteByte('\\')
			}
			b.WriteRune(c)
			n++
		}
	}
	return 0, "", fmt.Errorf("the [ at column %d is not closed with ]", start+1)
}

// neverQualified reports whether a glob cannot match a qualified name <harness>.<tool>: it has
// no . and nothing that could stand for one.
func neverQualified(glob string) bool {
	return !strings.ContainsAny(glob, ".*?[")
}
