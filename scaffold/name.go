package scaffold

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/orchestrator-zero/oz0/internal/textclip"
)

// MaxNameLen is the longest plugin name: it must fit a DNS label, as names end up in hosts.
const MaxNameLen = 63

// MaxDescriptionLen bounds the one-line description.
const MaxDescriptionLen = 200

// ValidateName checks a plugin name: lowercase letters, digits and hyphens, starting with a
// letter, at most 63 characters. The error says what is wrong and how to mend it.
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("plugin name is empty; give one like acme-triage (lowercase letters, digits and hyphens)")
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("plugin name %q is not UTF-8 text; use only lowercase letters, digits and hyphens", textclip.ClipN(name, MaxNameLen+1))
	}
	if n := utf8.RuneCountInString(name); n > MaxNameLen {
		return fmt.Errorf("plugin name %q is %d characters; use at most %d", textclip.ClipN(name, MaxNameLen+1), n, MaxNameLen)
	}
	if strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return fmt.Errorf("plugin name %q is a path; give a bare name and choose the parent directory with --dir", name)
	}
	if lower := strings.ToLower(name); lower != name {
		return fmt.Errorf("plugin name %q has an uppercase letter; use lowercase%s", name, suggestion(name))
	}
	first, _ := utf8.DecodeRuneInString(name)
	if first < 'a' || first > 'z' {
		return fmt.Errorf("plugin name %q must start with a lowercase letter (a-z)%s", name, suggestion(name))
	}
	for i, r := range name {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' {
			continue
		}
		what := fmt.Sprintf("%q", r)
		switch r {
		case ' ':
			what = "a space"
		case '\n', '\r':
			what = "a line break"
		case '\t':
			what = "a tab"
		}
		return fmt.Errorf("plugin name %q has %s at position %d; use only lowercase letters, digits and hyphens%s", name, what, i+1, suggestion(name))
	}
	if strings.HasSuffix(name, "-") {
		return fmt.Errorf("plugin name %q ends with a hyphen; end it with a letter or digit%s", name, suggestion(name))
	}
	if strings.Contains(name, "--") {
		return fmt.Errorf("plugin name %q has two hyphens in a row; use one%s", name, suggestion(name))
	}
	return nil
}

// suggestion is ", e.g. \"valid-name\"" for an error about name, or "" when nothing valid can be
// made of it: a suggestion the user copies must itself pass ValidateName.
func suggestion(name string) string {
	s := SuggestName(name)
	if s == "" || s == name {
		return ""
	}
	return fmt.Sprintf(", e.g. %q", s)
}

// SuggestName makes a valid plugin name out of an invalid one: lowercased, each run of other
// characters turned into one hyphen, anything before the first letter and trailing hyphens
// trimmed, cut to MaxNameLen. It returns "" when no letter is left.
func SuggestName(name string) string {
	var b strings.Builder
	hyphen := false
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if b.Len() == 0 && (r < 'a' || r > 'z') {
				continue // a name starts with a letter
			}
			if hyphen && b.Len() > 0 {
				b.WriteByte('-')
			}
			hyphen = false
			b.WriteRune(r)
			continue
		}
		hyphen = true
	}
	s := b.String()
	if len(s) > MaxNameLen {
		s = strings.TrimRight(s[:MaxNameLen], "-")
	}
	return s
}

// PackageName is the Python package for a plugin name: hyphens become underscores.
func PackageName(name string) string { return strings.ReplaceAll(name, "-", "_") }

// ValidateDescription checks the one-line description that lands in YAML, TOML and Python.
func ValidateDescription(d string) error {
	if strings.TrimSpace(d) == "" {
		return fmt.Errorf("description is empty; say in a few words what the agent does, e.g. --description \"Sorts support tickets\"")
	}
	if n := utf8.RuneCountInString(d); n > MaxDescriptionLen {
		return fmt.Errorf("description is %d characters; keep it to one line of at most %d", n, MaxDescriptionLen)
	}
	if !utf8.ValidString(d) {
		return fmt.Errorf("description is not valid UTF-8; retype it")
	}
	for _, r := range d {
		if unicode.IsControl(r) {
			return fmt.Errorf("description has a control character or line break; keep it to one line of plain text")
		}
	}
	return nil
}
