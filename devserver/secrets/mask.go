package secrets

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
)

// Mask is what replaces a secret value.
const Mask = "***"

// fewPatterns is the most patterns the matcher looks for one by one with bytes.Index (fast,
// vectorised: ≈ 40 ns each on a 140-byte event); with more, one scan of the text with a filter
// on each position's first four bytes is faster (≈ 2.5 ns a byte, whatever the number of
// patterns).
const fewPatterns = 8

// matcher replaces every occurrence of its patterns with Mask, leftmost first and, among the
// patterns that match at one place, the longest. Its patterns are each secret value in every form
// it may take inside JSON text (see forms), so a value is masked in a harness's JSON line whatever
// encoder wrote it. It is immutable.
type matcher struct {
	pats     [][]byte             // longest first
	byPrefix map[uint32]*bucket   // the patterns by their first 4 bytes
	filter   [1 << 16 / 64]uint64 // bit b[0] | b[1]<<8 set for each pattern's first two bytes
}

// bucket is the patterns that share their first 4 bytes (API keys of one provider share more):
// one map lookup per distinct length, longest first, finds the one that matches.
type bucket struct {
	lens []int // distinct, longest first
	pats map[string]bool
}

func newMatcher(values []string) *matcher {
	seen := map[string]bool{}
	var pats [][]byte
	for _, v := range values {
		if utf8.RuneCountInString(v) < apiv1.SecretMinMaskLen {
			continue
		}
		for _, f := range forms(v) {
			if len(f) >= 4 && !seen[f] {
				seen[f] = true
				pats = append(pats, []byte(f))
			}
		}
	}
	if len(pats) == 0 {
		return nil
	}
	slices.SortStableFunc(pats, func(a, b []byte) int { return len(b) - len(a) })
	m := &matcher{pats: pats, byPrefix: map[uint32]*bucket{}}
	for _, p := range pats { // longest first, so each bucket's lens are too
		k := binary.LittleEndian.Uint32(p)
		bk := m.byPrefix[k]
		if bk == nil {
			bk = &bucket{pats: map[string]bool{}}
			m.byPrefix[k] = bk
		}
		if len(bk.lens) == 0 || bk.lens[len(bk.lens)-1] != len(p) {
			bk.lens = append(bk.lens, len(p))
		}
		bk.pats[string(p)] = true
		h := k & 0xffff
		m.filter[h/64] |= 1 << (h % 64)
	}
	return m
}

// mask returns b with every pattern replaced by Mask; b itself when none occurs.
func (m *matcher) mask(b []byte) []byte {
	if len(b) < 4 {
		return b
	}
	if len(m.pats) <= fewPatterns {
		return m.maskFew(b)
	}
	var out []byte
	last := 0
	for i := 0; i+4 <= len(b); {
		if h := uint32(b[i]) | uint32(b[i+1])<<8; m.filter[h/64]&(1<<(h%64)) != 0 {
			if p := m.matchAt(b[i:], binary.LittleEndian.Uint32(b[i:])); p > 0 {
				if out == nil {
					out = make([]byte, 0, len(b))
				}
				out = append(out, b[last:i]...)
				out = append(out, Mask...)
				i += p
				last = i
				continue
			}
		}
		i++
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// maskFew is mask for a few patterns: the next occurrence of each is found with bytes.Index, and
// the leftmost (the longest of those at one place) is replaced.
func (m *matcher) maskFew(b []byte) []byte {
	var next [fewPatterns]int
	any := false
	for i, p := range m.pats {
		next[i] = bytes.Index(b, p)
		any = any || next[i] >= 0
	}
	if !any {
		return b
	}
	out := make([]byte, 0, len(b))
	last := 0
	for {
		best := -1
		for i := range m.pats {
			if next[i] >= 0 && (best < 0 || next[i] < next[best]) {
				best = i // on a tie the earlier, longer pattern stays
			}
		}
		if best < 0 {
			break
		}
		pos := next[best]
		out = append(out, b[last:pos]...)
		out = append(out, Mask...)
		last = pos + len(m.pats[best])
		for i, p := range m.pats {
			if next[i] >= 0 && next[i] < last {
				if j := bytes.Index(b[last:], p); j >= 0 {
					next[i] = last + j
				} else {
					next[i] = -1
				}
			}
		}
	}
	return append(out, b[last:]...)
}

// matchAt returns the length of the longest pattern that b starts with, 0 if none.
func (m *matcher) matchAt(b []byte, k uint32) int {
	bk := m.byPrefix[k]
	if bk == nil {
		return 0
	}
	for _, n := range bk.lens {
		if n <= len(b) && bk.pats[string(b[:n])] {
			return n
		}
	}
	return 0
}

// forms returns the ways v can appear in text: as it is, and inside a JSON string as the usual
// encoders write it: Go's encoding/json with and without HTML escaping (\u003c, \u2028…),
// JavaScript's JSON.stringify and Python's json.dumps(ensure_ascii=False) (only ", \ and control
// characters escaped), and Python's default json.dumps (ensure_ascii: everything outside ASCII as
// \uXXXX, surrogate pairs above U+FFFF), with lower- and upper-case hex digits.
func forms(v string) []string {
	out := []string{v}
	goHTML, _ := json.Marshal(v)
	out = append(out, string(goHTML[1:len(goHTML)-1]))
	goPlain, _ := jsonutil.Marshal(v)
	out = append(out, string(goPlain[1:len(goPlain)-1]))
	out = append(out, jsonEscape(v, false, false), jsonEscape(v, true, false), jsonEscape(v, true, true))
	return out
}

// jsonEscape escapes v as a JSON string's content: ", \ and control characters always (\n, \r,
// \t, \b, \f by name), and, with ascii, every character outside printable ASCII as \uXXXX.
func jsonEscape(v string, ascii, upper bool) string {
	hex := "\\u%04x"
	if upper {
		hex = "\\u%04X"
	}
	var b strings.Builder
	for _, r := range v {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || ascii && r >= 0x7f:
			if r > 0xffff {
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(&b, hex+hex, r1, r2)
			} else {
				fmt.Fprintf(&b, hex, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Stream masks a stream of texts that may be cut anywhere, such as a harness's says, so that a
// secret split across two of them is masked as well: Write returns what may be shown now, masked,
// and holds back the end of the stream that could be the start of a secret (at most the longest
// secret's length minus one bytes); Flush returns the rest, masked. Nothing a reader can join
// together holds a secret. A Stream is for one goroutine.
type Stream struct {
	store *Store
	held  string
}

// Stream returns a Stream that masks the secrets as they are when each text is written.
func (s *Store) Stream() *Stream { return &Stream{store: s} }

// Write takes the next text of the stream and returns what of the stream can be shown now.
func (st *Stream) Write(text string) string {
	buf := st.held + text
	m := st.store.matcher.Load()
	if m == nil {
		st.held = ""
		return buf
	}
	cut := m.cut(buf)
	st.held = buf[cut:]
	return string(m.mask([]byte(buf[:cut])))
}

// Flush returns what the stream holds back, masked: its end.
func (st *Stream) Flush() string {
	rest := st.held
	st.held = ""
	if m := st.store.matcher.Load(); m != nil {
		return string(m.mask([]byte(rest)))
	}
	return rest
}

// cut is where buf may be cut so that what comes after could not end a secret begun before: the
// start of its longest end that begins a pattern, moved back to the start of any occurrence it
// falls inside.
func (m *matcher) cut(buf string) int {
	cut := len(buf)
	for _, p := range m.pats { // longest first
		for k := min(len(p)-1, len(buf)); k > 0; k-- {
			if len(buf)-k < cut && strings.HasPrefix(string(p), buf[len(buf)-k:]) {
				cut = len(buf) - k
				break
			}
		}
	}
	for _, p := range m.pats {
		for i := max(0, cut-len(p)+1); i < cut; i++ {
			if strings.HasPrefix(buf[i:], string(p)) && i+len(p) > cut {
				cut = i
				break
			}
		}
	}
	return cut
}
