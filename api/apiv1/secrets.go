package apiv1

// The rules of a secret (PUT /api/v1/secrets/{name}), which the CLI checks before it calls and
// the server enforces.

// MaxSecretValue is the largest secret value, in bytes.
const MaxSecretValue = 64 << 10

// SecretMinMaskLen is the shortest secret value, in characters, that the API's answers (events,
// traces, recordings) show as ***: a shorter one would mask half of everything.
const SecretMinMaskLen = 4

// ValidSecretName reports whether name is a secret's name: like an environment variable,
// ^[A-Z][A-Z0-9_]{0,127}$. (Checked by hand: that regexp's bounded repeat compiles to ~100 KB at
// package init, which every oz0 command paid.)
func ValidSecretName(name string) bool {
	if len(name) == 0 || len(name) > 128 || name[0] < 'A' || name[0] > 'Z' {
		return false
	}
	for _, c := range []byte(name[1:]) {
		if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
