package scaffold

import (
	"regexp"
	"strconv"
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
		"Foo_Bar":                 `use lowercase, e.g. "foo-bar"`,
		"acme_triage":             `'_' at position 5; use only lowercase letters, digits and hyphens, e.g. "acme-triage"`,
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

func TestSuggestName(t *testing.T) {
	cases := map[string]string{
		"Foo_Bar":                      "foo-bar",
		"Acme":                         "acme",
		"A B":                          "a-b",
		"acme_triage":                  "acme-triage",
		"__x__":                        "x",
		"1abc":                         "abc",
		"a--b":                         "a-b",
		"acme-":                        "acme",
		"Acmé Triage!":                 "acm-triage",
		"123":                          "",
		"___":                          "",
		"ÉÈ":                           "",
		strings.Repeat("Ab_", 30):      strings.TrimRight(strings.Repeat("ab-", 30)[:63], "-"),
		strings.Repeat("a", 62) + "_b": strings.Repeat("a", 62),
	}
	for in, want := range cases {
		if got := SuggestName(in); got != want {
			t.Errorf("SuggestName(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every suggestion an error offers is itself a valid name, whatever the input.
func TestSuggestionsValidate(t *testing.T) {
	pieces := []string{"a", "Z", "9", "_", "-", " ", ".", "é", "É", "\t", "\u212a", "İ", "--", "x_y", "ß", "日本", "\x00", "\xff"}
	inputs := []string{"Foo_Bar", "FOO", "_", "-A-", strings.Repeat("A_", 40), strings.Repeat("a", 63) + "B"}
	// Every string of up to three pieces: small enough to run in milliseconds, odd enough to find
	// a suggestion that starts with a digit, ends with a hyphen or doubles one.
	var walk func(prefix string, depth int)
	walk = func(prefix string, depth int) {
		inputs = append(inputs, prefix)
		if depth == 3 {
			return
		}
		for _, p := range pieces {
			walk(prefix+p, depth+1)
		}
	}
	walk("", 0)
	re := regexp.MustCompile(`e\.g\. ("(?:[^"\\]|\\.)*")`)
	for _, in := range inputs {
		if s := SuggestName(in); s != "" {
			if err := ValidateName(s); err != nil {
				t.Errorf("SuggestName(%q) = %q, which is invalid: %v", in, s, err)
			}
		}
		err := ValidateName(in)
		if err == nil {
			continue
		}
		m := re.FindStringSubmatch(err.Error())
		if m == nil {
			continue
		}
		s, uerr := strconv.Unquote(m[1])
		if uerr != nil {
			t.Fatalf("ValidateName(%q) = %q: suggestion does not unquote: %v", in, err, uerr)
		}
		if verr := ValidateName(s); verr != nil {
			t.Errorf("ValidateName(%q) suggests %q, which is rejected: %v", in, s, verr)
		}
	}
}
