package apiv1

import (
	"regexp"
	"strings"
	"testing"
)

// ValidSecretName is checked by hand; it must agree with the pattern it documents.
func TestValidNameAgreesWithItsPattern(t *testing.T) {
	re := regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,127}$`)
	names := []string{"", "A", "a", "_A", "0A", "ANTHROPIC_API_KEY", "A1_", "A-B", "A B", "AÉ", "Ab",
		"A" + strings.Repeat("B", 127), "A" + strings.Repeat("B", 128), strings.Repeat("_", 5), "Z9", "A\n"}
	for _, n := range names {
		if got, want := ValidSecretName(n), re.MatchString(n); got != want {
			t.Errorf("ValidSecretName(%q) = %v, the pattern says %v", n, got, want)
		}
	}
}
