package lint

import (
	"strings"
	"testing"
)

func spaces(n int) string { return strings.Repeat(" ", n) }

func TestPythonCode(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"a comment", "x = 1  # Anthropic()\ny", "x = 1  " + spaces(13) + "\ny"},
		{"a string", `c = "Anthropic()" + d`, "c = " + spaces(13) + " + d"},
		{"single quotes", `c = 'a\'b' + d`, `c =        + d`},
		{"a docstring keeps its newlines", "\"\"\"Use\nOpenAI()\"\"\"\nz", spaces(6) + "\n" + spaces(11) + "\nz"},
		{"a quote inside a docstring", "'''it's\n'''x", "       \n   x"},
		{"an unclosed one-line string ends with its line", "s = \"open\nOpenAI()", "s =      \nOpenAI()"},
		{"an unclosed docstring runs to the end", "a\"\"\"b\nc", "a" + spaces(4) + "\n "},
		{"a backslash at the end", `x "\`, `x   `},
		{"a hash in a string is no comment", `"#" + Anthropic()`, `    + Anthropic()`},
		{"a quote in a comment is no string", "# don't\nAnthropic()", "       \nAnthropic()"},
		{"nothing to blank", "client = Anthropic()\n", "client = Anthropic()\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pythonCode(tc.src); got != tc.want {
				t.Errorf("pythonCode(%q)\n got %q\nwant %q", tc.src, got, tc.want)
			}
		})
	}
}

// FuzzPythonCode holds pythonCode to the byte-by-byte scan it replaced (pythonCodeByteByByte,
// below): the same blanks for any source.
func FuzzPythonCode(f *testing.F) {
	for _, s := range []string{"x = 1 # c\n", `"a\"b" 'c'`, "'''d\n'''", "\"\"\"\n\\\"\"\"\"", "s = 'open\nx", `\`, "#"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if got, want := pythonCode(src), pythonCodeByteByByte(src); got != want {
			t.Errorf("pythonCode(%q) = %q, the byte-by-byte scan %q", src, got, want)
		}
	})
}

// pythonCodeByteByByte is pythonCode as it was first written, a byte at a time: the reference
// of FuzzPythonCode.
func pythonCodeByteByByte(src string) string {
	b := []byte(src)
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '#':
			for i < len(b) && b[i] != '\n' {
				b[i] = ' '
				i++
			}
		case c == '"' || c == '\'':
			n := 1
			if i+2 < len(b) && b[i+1] == c && b[i+2] == c {
				n = 3
			}
			j := i + n
			for j < len(b) {
				if b[j] == '\\' {
					j += 2
					continue
				}
				if n == 1 && b[j] == '\n' {
					break // an unclosed one-line string ends with its line
				}
				if b[j] == c && (n == 1 || (j+2 < len(b) && b[j+1] == c && b[j+2] == c)) {
					j += n
					break
				}
				j++
			}
			for k := i; k < min(j, len(b)); k++ {
				if b[k] != '\n' {
					b[k] = ' '
				}
			}
			i = j
		default:
			i++
		}
	}
	return string(b)
}
