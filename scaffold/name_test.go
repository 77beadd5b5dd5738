package scaffold

import (
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	good := []string{"acme-triage", "a", "a1", "agent-2-b", strings.Repeat("a", 63)}
	for _, n := range good {
		if err := ValidateName(n); err != nil {
			t.Errorf("ValidateName(%q) = %v, want ok", n, err)
		}
	}
	bad := map[string]string{
		"":                        "empty",
		"../x":                    "is a path",
		"a/b":                     "is a path",
		"A B":                     "uppercase",
		"a b":                     "a space",
		"ab\ncd":                  "a line break at position 3",
		"ab\tcd":                  "a tab at position 3",
		"-x":                      "start with a lowercase letter",
		"1abc":                    "start with a lowercase letter",
		"Acme":                    `use lowercase, e.g. "acme"`,
		"acme_triage":             `'_'`,
		"acme-":                   "ends with a hyphen",
		"a--b":                    "two hyphens",
		"acmé":                    `'é'`,
		strings.Repeat("a", 64):   "64 characters; use at most 63",
		"..":                      "is a path",
		"\xff":                    `"\xff" is not UTF-8 text`,
		strings.Repeat("b", 5000): `"` + strings.Repeat("b", 63) + `…" is 5000 characters`,
	}
	for n, want := range bad {
		err := ValidateName(n)
		if err == nil {
			t.Errorf("ValidateName(%q) = nil, want an error containing %q", n, want)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("ValidateName(%q) = %q, want it to contain %q", n, err, want)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("ValidateName(%q): error is not one line", n)
		}
	}
}

func TestPackageName(t *testing.T) {
	if got := PackageName("acme-triage-2"); got != "acme_triage_2" {
		t.Errorf("got %q", got)
	}
}

func TestValidateDescription(t *testing.T) {
	if err := ValidateDescription("Sorts support tickets"); err != nil {
		t.Error(err)
	}
	for _, d := range []string{"", "  ", "two\nlines", "tab\there", strings.Repeat("x", 201)} {
		if err := ValidateDescription(d); err == nil {
			t.Errorf("ValidateDescription(%q) = nil", d)
		}
	}
}
