package supervisor

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/harnesskit"
)

// allowLine writes the line encodeLine writes, byte for byte, whatever the arguments' spacing and
// characters, and refuses what encodeLine refuses.
func TestAllowLineIsEncodeLines(t *testing.T) {
	for _, args := range []string{
		`{}`, `{"team":"billing"}`, ` { "a" : [ 1 , 2 ] ,"b":{ "c" :null } } `,
		`{"html":"<b>&amp;</b>","u":"\u2028 raw: ` + "\u2028\u2029" + `","q":"\"\\/"}`,
		`{"n":12345678901234567890,"f":-1.5e-3,"t":true}`,
		`{"é":"😀","tab":"a` + "\\t" + `b"}`,
	} {
		for _, id := range []string{"p1", `p"2`, "p\u2028"} {
			want, werr := encodeLine(harnesskit.Permission{ID: id, Allow: true, Arguments: []byte(args)})
			got, gerr := allowLine(id, []byte(args))
			if !bytes.Equal(got, want) || (werr == nil) != (gerr == nil) {
				t.Errorf("allowLine(%q, %s) = %q, %v; encodeLine: %q, %v", id, args, got, gerr, want, werr)
			}
		}
	}
	big := `{"s":"` + strings.Repeat("x", harnesskit.MaxLine) + `"}`
	if _, err := allowLine("p1", []byte(big)); err == nil {
		t.Error("a line over the limit was made")
	}
}

// An 8 MiB call's answer is made in one buffer of its size: encodeLine grew three, about five
// times the line in all. (With the race detector, which instruments it, twice the line.)
func TestAllowLineAllocatesItsSize(t *testing.T) {
	args := []byte(`{"summary":"` + strings.Repeat("a", 8<<20-100) + `"}`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	line, err := allowLine("p1", args)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 2*uint64(len(line))+1<<20 {
		t.Errorf("a line of %d bytes allocated %d", len(line), n)
	}
}
