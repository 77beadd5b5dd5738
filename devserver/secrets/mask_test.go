package secrets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestMasker(t *testing.T) {
	s := open(t, t.TempDir())
	mask := s.Masker()
	in := []byte(`{"text":"nothing here"}`)
	if out := mask(in); &out[0] != &in[0] {
		t.Fatal("no secrets: not the same slice")
	}
	s.Set("ANTHROPIC_API_KEY", "sk-ant-abc123")
	s.Set("SHORT", "abc") // too short to mask
	s.Set("LONGER", "sk-ant-abc123-and-more")
	s.Set("QUOTED", `pa"ss\word<&>`)
	s.Set("UNICODE", "clé-secrète-🔑")
	cases := map[string]string{
		`{"text":"nothing here, abc"}`:                       `{"text":"nothing here, abc"}`,
		`key=sk-ant-abc123`:                                  `key=***`,
		`sk-ant-abc123sk-ant-abc123`:                         `******`,
		`{"a":"sk-ant-abc123-and-more","b":"sk-ant-abc123"}`: `{"a":"***","b":"***"}`, // the longest first
		`sk-ant-abc12`:                                       `sk-ant-abc12`,
		`raw pa"ss\word<&> end`:                              `raw *** end`,
		`{"p":"pa\"ss\\word<&>"}`:                            `{"p":"***"}`, // JS, Python
		`{"p":"pa\"ss\\word\u003c\u0026\u003e"}`:             `{"p":"***"}`, // Go
		`{"p":"clé-secrète-🔑"}`:                              `{"p":"***"}`, // raw UTF-8
		`{"p":"cl\u00e9-secr\u00e8te-\ud83d\udd11"}`:         `{"p":"***"}`, // Python's ensure_ascii
		`{"p":"cl\u00E9-secr\u00E8te-\uD83D\uDD11"}`:         `{"p":"***"}`, // upper-case hex
	}
	for in, want := range cases {
		b := []byte(in)
		got := mask(b)
		if string(got) != want {
			t.Errorf("mask(%s) = %s, want %s", in, got, want)
		}
		if string(b) != in {
			t.Errorf("mask modified its argument: %s", b)
		}
	}
	// It follows changes.
	s.Remove("ANTHROPIC_API_KEY")
	if got := string(mask([]byte("key=sk-ant-abc123"))); got != "key=sk-ant-abc123" {
		t.Errorf("after Remove: %s", got)
	}
	s.Set("NEW", "brand-new-value")
	if got := string(mask([]byte("brand-new-value"))); got != "***" {
		t.Errorf("after Set: %s", got)
	}
	if got := mask(nil); got != nil {
		t.Errorf("nil: %q", got)
	}
}

// naiveMask is the reference: at each position, the longest value that starts there.
func naiveMask(b []byte, pats []string) []byte {
	var out []byte
	for i := 0; i < len(b); {
		best := 0
		for _, p := range pats {
			if len(p) > best && bytes.HasPrefix(b[i:], []byte(p)) {
				best = len(p)
			}
		}
		if best > 0 {
			out = append(out, Mask...)
			i += best
			continue
		}
		out = append(out, b[i])
		i++
	}
	return out
}

// The scan (many secrets) and the checks (few) agree with the reference on random text.
func TestMaskerRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := "abcd-_"
	word := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for _, n := range []int{1, 5, fewPatterns, 40} {
		var values []string
		for range n {
			values = append(values, word(4+rng.IntN(6)))
		}
		m := newMatcher(values)
		for range 2000 {
			var b strings.Builder
			for range rng.IntN(12) {
				if rng.IntN(3) == 0 {
					b.WriteString(values[rng.IntN(len(values))])
				} else {
					b.WriteString(word(rng.IntN(8)))
				}
			}
			in := []byte(b.String())
			got := m.mask(in)
			if want := naiveMask(in, values); !bytes.Equal(got, want) && !(len(want) == 0 && len(got) == 0) {
				t.Fatalf("%d values %q\nmask(%q) = %q\nwant %q", n, values, in, got, want)
			}
		}
	}
}

func TestForms(t *testing.T) {
	v := "a\"b\\c\n\u2028é🔑<"
	got := forms(v)
	for _, want := range []string{
		v,
		`a\"b\\c\n\u2028é🔑\u003c`,            // Go
		`a\"b\\c\n\u2028é🔑<`,                 // Go without HTML escaping
		"a\\\"b\\\\c\\n\u2028é🔑<",            // JS, Python ensure_ascii=False
		`a\"b\\c\n\u2028\u00e9\ud83d\udd11<`, // Python
		`a\"b\\c\n\u2028\u00E9\uD83D\uDD11<`, // upper-case hex
	} {
		found := false
		for _, g := range got {
			found = found || g == want
		}
		if !found {
			t.Errorf("forms lack %q: %q", want, got)
		}
	}
	// Each form is what its encoder writes: Go's for two of them.
	b, _ := json.Marshal(v)
	if string(b[1:len(b)-1]) != got[1] {
		t.Errorf("Go form %q vs %q", got[1], b)
	}
}

func benchEvent(withSecret string) []byte {
	return []byte(fmt.Sprintf(`{"type":"tool_result","id":"p1","tool":"notify_team","result":"told the billing team: I was charged twice for my order %s, please refund"}`, withSecret))
}

func BenchmarkMasker(b *testing.B) {
	for _, n := range []int{0, 1, 3, 12, 100} {
		for _, hit := range []bool{false, true} {
			b.Run(fmt.Sprintf("secrets=%d/hit=%v", n, hit), func(b *testing.B) {
				var values []string
				for i := range n {
					values = append(values, fmt.Sprintf("sk-secret-%04d-%s", i, strings.Repeat("k", 30)))
				}
				m := newMatcher(values)
				ev := benchEvent("")
				if hit && n > 0 {
					ev = benchEvent(values[n-1])
				}
				mask := func(b []byte) []byte {
					if m == nil {
						return b
					}
					return m.mask(b)
				}
				b.SetBytes(int64(len(ev)))
				for b.Loop() {
					mask(ev)
				}
			})
		}
	}
}

// A secret said in pieces, with other lines between them, is masked as a whole, and nothing said
// before it waits longer than it must.
func TestStreamMasksASecretCutAnywhere(t *testing.T) {
	s := open(t, t.TempDir())
	if err := s.Set("ANTHROPIC_API_KEY", "sk-ant-PLANTEDCANARY123"); err != nil {
		t.Fatal(err)
	}
	key := "sk-ant-PLANTEDCANARY123"
	text := "Here it is: " + key + " and again " + key + ", done."
	for cut1 := 0; cut1 <= len(text); cut1++ {
		for _, cut2 := range []int{cut1, (cut1 + len(text)) / 2, len(text)} {
			st := s.Stream()
			var shown []string
			for _, piece := range []string{text[:cut1], text[cut1:cut2], text[cut2:]} {
				shown = append(shown, st.Write(piece))
			}
			shown = append(shown, st.Flush())
			all := strings.Join(shown, "")
			if all != "Here it is: *** and again ***, done." {
				t.Fatalf("cut at %d, %d: %q", cut1, cut2, shown)
			}
			for i := range shown {
				for j := i + 1; j <= len(shown); j++ {
					if strings.Contains(strings.Join(shown[i:j], ""), "PLANTED") {
						t.Fatalf("cut at %d, %d: a reader joins %q", cut1, cut2, shown[i:j])
					}
				}
			}
		}
	}
	// What cannot begin a secret is shown at once.
	st := s.Stream()
	if got := st.Write("Sorting the ticket. "); got != "Sorting the ticket. " {
		t.Errorf("held back %q", got)
	}
	if got := st.Write("ask"); got != "a" || st.Flush() != "sk" {
		t.Errorf("an end that could begin the key: %q", got)
	}
	// No secrets: nothing held.
	empty := open(t, t.TempDir())
	if got := empty.Stream().Write("ask"); got != "ask" {
		t.Errorf("no secrets: %q", got)
	}
}
