package apiv1

import "strings"

// The prefixes of the IDs the dev server makes. An ID is its prefix and lowercase base32
// characters (a-z, 2-7): 20 of them for a job, 12 for an approval or a rule.
const (
	JobIDPrefix      = "job_"
	ApprovalIDPrefix = "apr_"
	RuleIDPrefix     = "rule_"
)

// ValidID reports whether id has the shape of an ID with prefix: the prefix, then 1 to 64
// lowercase base32 characters. It says nothing of whether such a thing exists; it lets a client
// refuse what cannot be an ID (a typo, a path, an empty string) without asking the server.
func ValidID(prefix, id string) bool {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok || rest == "" || len(rest) > 64 {
		return false
	}
	for _, c := range rest {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}
