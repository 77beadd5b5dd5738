package apiv1

import (
	"fmt"
	"unicode/utf8"
)

// MaxInput is the most bytes a job's input may take written as a JSON string (InputSize): what
// the session request carries it as. The request carries it twice, as "text" and as "input"
// (for an agent that takes JSON, "input" is the value, at most as long), on one line of the
// harness protocol, at most 8 MiB with the agent's instructions and the rest; 2 × 3 MiB leaves 2
// MiB for those (a prompt file is at most 1 MiB). One limit, said where an input is refused: the
// API (POST /api/v1/jobs, 422 bad_input), oz0 run before it sends, oz0 plugin test's --input.
const MaxInput = 3 << 20

// InputSize is the bytes input takes written as a JSON string, its quotes and escapes included,
// as oz0 writes it (encoding/json without HTML escaping): a character of plain text its own
// bytes, a quote, a backslash or a line break 2, another control character, U+2028, U+2029 or a
// byte that is not UTF-8 6.
func InputSize(input string) int {
	n := 2
	for i := 0; i < len(input); {
		c := input[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			case c < 0x20:
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(input[i:])
		switch {
		case r == utf8.RuneError && size == 1, r == '\u2028', r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// InputTooLarge says why input is too large for a job, naming it as what ("the input on stdin"),
// or "" when it is not.
func InputTooLarge(what, input string) string {
	size := InputSize(input)
	switch {
	case size <= MaxInput:
		return ""
	case len(input) > MaxInput:
		return fmt.Sprintf("%s is over %d MiB, the most a job takes; give a shorter one", what, MaxInput>>20)
	}
	return fmt.Sprintf("%s is %d bytes, %d bytes written as a JSON string (its quotes, line breaks and control characters escaped), as the session request carries it: over the %d MiB (%d bytes) a job takes; give a shorter one", what, len(input), size, MaxInput>>20, MaxInput)
}
