package eval

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/lint/evalfile"
)

func TestParseShard(t *testing.T) {
	for in, want := range map[string][2]int{"1/1": {1, 1}, "3/4": {3, 4}, "256/256": {256, 256}} {
		i, n, err := ParseShard(in)
		if err != nil || i != want[0] || n != want[1] {
			t.Errorf("ParseShard(%q) = %d, %d, %v", in, i, n, err)
		}
	}
	for in, says := range map[string]string{
		"0/3": "counts from 1 to 3", "5/4": "counts from 1 to 4", "x": "takes i/n", "1/": "takes i/n",
		"1/0": "1 to 256 shards", "1/257": "1 to 256 shards", "-1/2": "counts from 1", "1/2/3": "takes i/n",
	} {
		if _, _, err := ParseShard(in); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("ParseShard(%q): %v, want it to say %q", in, err, says)
		}
	}
}

// testFiles is `files` eval files with cases each, their recordings in dir keeping the durations
// ms gives (by case ID; none for a case it leaves out).
func testFiles(t *testing.T, dir string, files, cases int, ms func(id string) int64) []*File {
	t.Helper()
	var out []*File
	for i := range files {
		name := fmt.Sprintf("evals/f%02d.yaml", i)
		ef := &evalfile.File{Name: name, Agent: "a"}
		for j := range cases {
			c := &evalfile.Case{Name: fmt.Sprintf("c%03d", j), Source: evalfile.FromRecording, Path: fmt.Sprintf("recordings/f%02d/c%03d.json", i, j)}
			if d := ms(CaseID(name, c.Name)); d > 0 {
				p := filepath.Join(dir, filepath.FromSlash(c.Path))
				if err := writeRecording(p, &Recording{Job: "job_x", DurationMS: d, Calls: nil}); err != nil {
					t.Fatal(err)
				}
			}
			ef.Cases = append(ef.Cases, c)
		}
		out = append(out, &File{File: ef, Path: name, Dir: dir})
	}
	return out
}

// For any number of shards and any order of the files, every case is in exactly one shard, and
// in the same one.
func TestSplitEveryCaseOnce(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	files := testFiles(t, dir, 7, 9, func(string) int64 {
		if rng.IntN(3) == 0 {
			return 0 // some cases have no duration
		}
		return 100 + rng.Int64N(5000)
	})
	for n := 1; n <= 8; n++ {
		var first map[string]int
		for order := range 5 {
			shuffled := slices.Clone(files)
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			if order == 0 {
				slices.Reverse(shuffled)
			}
			at := map[string]int{}
			for i := 1; i <= n; i++ {
				part, sh := Split(shuffled, i, n)
				if sh.Index != i || sh.Total != n || len(sh.Cases) != 63 {
					t.Fatalf("n=%d shard %d: %+v", n, i, sh)
				}
				for _, f := range part {
					for _, c := range f.Cases {
						id := CaseID(f.Name, c.Name)
						if prev, ok := at[id]; ok {
							t.Fatalf("n=%d: %s in shards %d and %d", n, id, prev, i)
						}
						at[id] = i
					}
				}
			}
			if len(at) != 63 {
				t.Fatalf("n=%d: %d of 63 cases in a shard", n, len(at))
			}
			if first == nil {
				first = at
			} else if !maps.Equal(first, at) {
				t.Fatalf("n=%d: another order of the files split the cases otherwise", n)
			}
		}
	}
}

// The recordings' durations balance the shards: one long case is a shard alone.
func TestSplitByRecordedDurations(t *testing.T) {
	dir := t.TempDir()
	files := testFiles(t, dir, 1, 4, func(id string) int64 {
		if strings.HasSuffix(id, "c002") {
			return 9000
		}
		return 3000
	})
	long, _ := Split(files, 1, 2)
	if len(long) != 1 || len(long[0].Cases) != 1 || long[0].Cases[0].Name != "c002" {
		t.Errorf("shard 1/2 has %v, want c002 alone", caseNames(long))
	}
	rest, _ := Split(files, 2, 2)
	if got := caseNames(rest); !slices.Equal(got, []string{"c000", "c001", "c003"}) {
		t.Errorf("shard 2/2 has %v, want the three short cases in the file's order", got)
	}
}

func caseNames(files []*File) []string {
	var out []string
	for _, f := range files {
		for _, c := range f.Cases {
			out = append(out, c.Name)
		}
	}
	return out
}

// 200 recorded cases over 4 shards: the longest shard within 1.2 times the mean (docs/
// performance.md has the figure).
func TestAssignBalance(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var cases []Weighted
	var total int64
	for i := range 200 {
		// Durations as a run's are: most short, a long tail (log-normal, median 4s).
		ms := int64(4000 * math.Exp(rng.NormFloat64()))
		cases = append(cases, Weighted{ID: fmt.Sprintf("evals/e.yaml c%03d", i), MS: ms})
		total += ms
	}
	at := Assign(cases, 4)
	loads := make([]int64, 4)
	for _, c := range cases {
		loads[at[c.ID]] += c.MS
	}
	mean := float64(total) / 4
	ratio := float64(slices.Max(loads)) / mean
	t.Logf("200 cases, 4 shards: loads %v ms, longest/mean %.4f", loads, ratio)
	if ratio > 1.2 {
		t.Errorf("the longest shard is %.3f times the mean, over 1.2", ratio)
	}
}

// shardReports runs Split on files for n shards and makes each shard's report from full's
// results, as oz0 eval --shard i/n --json would.
func shardReports(files []*File, full *Report, n int) []ShardReport {
	byID := map[string]Result{}
	for _, r := range full.Results {
		byID[CaseID(r.File, r.Case)] = r
	}
	var out []ShardReport
	for i := 1; i <= n; i++ {
		part, sh := Split(files, i, n)
		r := &Report{Plugins: full.Plugins, OZ0Version: full.OZ0Version, Shard: sh, Results: []Result{}}
		for _, f := range part {
			for _, c := range f.Cases {
				r.Results = append(r.Results, byID[CaseID(f.Name, c.Name)])
			}
		}
		out = append(out, ShardReport{Name: fmt.Sprintf("shard-%d.json", i), Report: r})
	}
	return out
}

func TestMerge(t *testing.T) {
	dir := t.TempDir()
	files := testFiles(t, dir, 3, 4, func(id string) int64 { return int64(len(id)) * 100 })
	full := &Report{Plugins: []PluginRef{{Name: "acme", Version: "0.1.0"}}, OZ0Version: "0.3.0"}
	for _, f := range files {
		for i, c := range f.Cases {
			r := Result{File: f.Name, Case: c.Name, Status: Passed, Source: "recording", Tokens: 10, DurationMS: 1000}
			if i == 1 {
				r.Status, r.Failures = Failed, []Failure{{Kind: "contains", Line: 3, Col: 9, Message: "does not contain \"x\""}}
			}
			full.Results = append(full.Results, r)
		}
	}
	var want bytes.Buffer
	if err := WriteJUnit(&want, full); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 5; n++ {
		shards := shardReports(files, full, n)
		slices.Reverse(shards) // the order they are given in does not matter
		merged, err := Merge(shards)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		var got bytes.Buffer
		if err := WriteJUnit(&got, merged); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("n=%d: the merged JUnit differs from the unsharded run's:\n%s\nwant\n%s", n, got.String(), want.String())
		}
		if merged.Shard != nil || len(merged.Plugins) != 1 || merged.Plugins[0].Name != "acme" || merged.OZ0Version != "0.3.0" {
			t.Errorf("n=%d: merged report %+v %+v %q", n, merged.Shard, merged.Plugins, merged.OZ0Version)
		}
	}

	refused := func(name string, shards []ShardReport, says string) {
		t.Helper()
		_, err := Merge(shards)
		if err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %v, want it to say %q", name, err, says)
		}
		if _, ok := err.(*MergeError); err != nil && !ok {
			t.Errorf("%s: %T, not a *MergeError", name, err)
		}
	}
	three := func() []ShardReport { return shardReports(files, full, 3) }
	s := three()
	var shard3 []string
	for _, r := range s[2].Report.Results {
		shard3 = append(shard3, CaseID(r.File, r.Case))
	}
	refused("missing shard", s[:2], "shard 3/3 is missing: no report has cases "+strings.Join(shard3, ", "))
	s = three()
	refused("doubled shard", []ShardReport{s[0], s[1], s[1], s[2]}, "shard-2.json and shard-2.json are both shard 2/3")
	s = three()
	s[1].Report.Results = append(s[1].Report.Results, s[0].Report.Results[0])
	refused("doubled case", s, "case "+CaseID(s[0].Report.Results[0].File, s[0].Report.Results[0].Case)+" is in both shard-1.json and shard-2.json")
	s = three()
	s[2].Report.Plugins = []PluginRef{{Name: "other", Version: "0.1.0"}}
	refused("another plugin", s, "shard-1.json is of plugin acme 0.1.0 and shard-3.json of plugin other 0.1.0")
	s = three()
	s[1].Report.Plugins = []PluginRef{{Name: "acme", Version: "0.2.0"}}
	refused("another version", s, "of plugin acme 0.1.0 and shard-2.json of plugin acme 0.2.0")
	s = three()
	s[1].Report.Plugins = append(s[1].Report.Plugins, PluginRef{Name: "billing", Version: "0.1.0"})
	refused("another plugin more", s, "shard-1.json is of plugin acme 0.1.0 and shard-2.json of plugins acme 0.1.0, billing 0.1.0")
	s = three()
	s[1].Report.OZ0Version = "0.4.0"
	refused("another oz0", s, "shard-1.json was made by oz0 0.3.0 and shard-2.json by oz0 0.4.0")
	s = three()
	refused("another split", append(s[:2], shardReports(files, full, 4)[3]), "shard-1.json is shard 1/3 and shard-4.json shard 4/4")
	s = three()
	s[0].Report.Shard = nil
	refused("no shard", s, "shard-1.json is not a shard's report")
	refused("none", nil, "no reports")
}

func TestReadShard(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := ReadShard(write("a.json", `{"cases": []}`)); err == nil || !strings.Contains(err.Error(), "is not a shard's report") {
		t.Errorf("unsharded: %v", err)
	}
	if _, err := ReadShard(write("b.json", `[1]`)); err == nil || !strings.Contains(err.Error(), "is not the output of oz0 eval --json") {
		t.Errorf("not a report: %v", err)
	}
	r, err := ReadShard(write("c.json", `{"shard": {"index": 1, "total": 2, "cases": ["e.yaml a"]}, "cases": [{"file": "e.yaml", "case": "a", "status": "passed"}]}`))
	if err != nil || r.Report.Shard.Total != 2 || len(r.Report.Results) != 1 {
		t.Errorf("a shard's report: %+v, %v", r, err)
	}
}
