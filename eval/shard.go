package eval

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/orchestrator-zero/oz0/lint/evalfile"
)

// Sharding (oz0 eval --shard i/n) spreads a run's cases over the n jobs of a CI matrix, and Merge
// makes the shards' reports one again. Each shard reads every eval file and computes the same
// split on its own, so the shards need nothing from each other:
//   - a case's ID is its file as shown and its name, unique in a run (names are unique in a
//     file); the split depends on the set of IDs and their durations only, never on the order
//     of the files, so every case is in exactly one shard;
//   - the cases are balanced by duration, longest first onto the shard with the least so far
//     (ties by ID, then the lowest shard), so the shards finish together: a recording keeps
//     the duration of the case it was recorded from; a case without one weighs the mean of those
//     that have one (1 when none has: the cases are then dealt out by ID).

// Shard is one of Total parts of a run's cases; Index counts from 1.
type Shard struct {
	Index int `json:"index"`
	Total int `json:"total"`
	// Cases are the IDs of every case of the run (all shards'), in the run's order: Merge checks
	// the shards against them, and orders the merged report by them.
	Cases []string `json:"cases"`
}

// MaxShards bounds n in --shard i/n: more jobs than a CI matrix runs is a mistake.
const MaxShards = 256

// ParseShard parses i/n, 1 ≤ i ≤ n ≤ MaxShards.
func ParseShard(s string) (index, total int, err error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	switch {
	case !ok || err1 != nil || err2 != nil:
		return 0, 0, fmt.Errorf("takes i/n, the shard and how many there are (1/4 runs the first quarter of the cases), not %q", s)
	case n < 1 || n > MaxShards:
		return 0, 0, fmt.Errorf("%q: there must be 1 to %d shards", s, MaxShards)
	case i < 1 || i > n:
		return 0, 0, fmt.Errorf("%q: the shard counts from 1 to %d", s, n)
	}
	return i, n, nil
}

// CaseID is how a case is named across shards: its file as shown and its name.
func CaseID(file, name string) string { return file + " " + name }

// Weighted is a case to place: its ID and its duration in milliseconds (0: not known).
type Weighted struct {
	ID string
	MS int64
}

// Assign places each case in one of n shards (0 to n-1), balancing their durations: the shard of
// each case's ID.
func Assign(cases []Weighted, n int) map[string]int {
	var sum, known int64
	for _, c := range cases {
		if c.MS > 0 {
			sum += c.MS
			known++
		}
	}
	mean := int64(1)
	if known > 0 {
		mean = max(sum/known, 1)
	}
	sorted := slices.Clone(cases)
	for i := range sorted {
		if sorted[i].MS <= 0 {
			sorted[i].MS = mean
		}
	}
	slices.SortFunc(sorted, func(a, b Weighted) int {
		return cmp.Or(cmp.Compare(b.MS, a.MS), strings.Compare(a.ID, b.ID))
	})
	loads := make([]int64, n)
	out := make(map[string]int, len(cases))
	for _, c := range sorted {
		least := 0
		for s := 1; s < n; s++ {
			if loads[s] < loads[least] {
				least = s
			}
		}
		loads[least] += c.MS
		out[c.ID] = least
	}
	return out
}

// Split keeps of files the cases of shard index of total (index from 1), balanced by the durations
// their recordings keep. It returns the shard's files (those with a case in it, each with its
// cases of the shard) and the Shard for the report.
func Split(files []*File, index, total int) ([]*File, *Shard) {
	sh := &Shard{Index: index, Total: total, Cases: []string{}}
	var cases []Weighted
	for _, f := range files {
		for _, c := range f.Cases {
			id := CaseID(f.Name, c.Name)
			sh.Cases = append(sh.Cases, id)
			cases = append(cases, Weighted{ID: id, MS: recordedMS(f, c)})
		}
	}
	at := Assign(cases, total)
	var out []*File
	for _, f := range files {
		var keep []*evalfile.Case
		for _, c := range f.Cases {
			if at[CaseID(f.Name, c.Name)] == index-1 {
				keep = append(keep, c)
			}
		}
		if len(keep) > 0 {
			ef := *f.File
			ef.Cases = keep
			out = append(out, &File{File: &ef, Path: f.Path, Dir: f.Dir})
		}
	}
	return out, sh
}

// recordedMS is the duration the case's recording keeps, 0 when it has none (a script, a live
// case, a recording made before recordings kept it, or one that cannot be read: the run says
// why, in the shard the case falls in).
func recordedMS(f *File, c *evalfile.Case) int64 {
	if c.Source != evalfile.FromRecording {
		return 0
	}
	data, err := os.ReadFile(filepath.Join(f.Dir, filepath.FromSlash(c.Path)))
	if err != nil {
		return 0
	}
	var r struct {
		DurationMS int64 `json:"duration_ms"`
	}
	if json.Unmarshal(data, &r) != nil {
		return 0
	}
	return r.DurationMS
}
