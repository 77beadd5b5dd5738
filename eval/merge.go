package eval

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ShardReport is a shard's report (oz0 eval --shard i/n --json) and the file it was read from,
// which the errors name.
type ShardReport struct {
	Name   string
	Report *Report
}

// MergeError says why shards' reports cannot be merged: one line, naming the reports and cases.
type MergeError struct{ Msg string }

func (e *MergeError) Error() string { return e.Msg }

func mergef(format string, args ...any) error { return &MergeError{Msg: fmt.Sprintf(format, args...)} }

// ReadShard reads a shard's report, as oz0 eval --shard i/n --json wrote it.
func ReadShard(path string) (ShardReport, error) {
	r, err := ReadBaseline(path)
	var bad notAReport
	if errors.As(err, &bad) {
		return ShardReport{}, mergef("%s", bad.Error())
	}
	if err != nil {
		return ShardReport{}, err
	}
	if r.Shard == nil {
		return ShardReport{}, mergef("%s is not a shard's report: make each with oz0 eval --shard i/n --json", path)
	}
	return ShardReport{Name: path, Report: r}, nil
}

// Merge makes the reports of a run's shards one report, as the run unsharded would have written
// it: its cases in the run's order. It refuses (a *MergeError) reports of different plugins,
// plugin versions, oz0 versions or runs (other cases, another number of shards), a shard given
// twice or missing, and a case in two reports or in none.
func Merge(shards []ShardReport) (*Report, error) {
	if len(shards) == 0 {
		return nil, mergef("no reports to merge")
	}
	first := shards[0]
	fr := first.Report
	byIndex := map[int]string{}
	for _, s := range shards {
		r := s.Report
		if r.Shard == nil {
			return nil, mergef("%s is not a shard's report: make each with oz0 eval --shard i/n --json", s.Name)
		}
		if !slices.Equal(r.Plugins, fr.Plugins) {
			return nil, mergef("%s is of %s and %s of %s: merge the shards of one run", first.Name, pluginsOf(fr), s.Name, pluginsOf(r))
		}
		if r.OZ0Version != fr.OZ0Version {
			return nil, mergef("%s was made by oz0 %s and %s by oz0 %s: run every shard with one oz0", first.Name, dash(fr.OZ0Version), s.Name, dash(r.OZ0Version))
		}
		if r.Shard.Total != fr.Shard.Total {
			return nil, mergef("%s is shard %d/%d and %s shard %d/%d: merge the shards of one run", first.Name, fr.Shard.Index, fr.Shard.Total, s.Name, r.Shard.Index, r.Shard.Total)
		}
		if !slices.Equal(r.Shard.Cases, fr.Shard.Cases) {
			return nil, mergef("%s and %s are of runs with different cases: run every shard on the same eval files, with the same arguments", first.Name, s.Name)
		}
		if other, ok := byIndex[r.Shard.Index]; ok {
			return nil, mergef("%s and %s are both shard %d/%d: give each shard's report once", other, s.Name, r.Shard.Index, r.Shard.Total)
		}
		byIndex[r.Shard.Index] = s.Name
	}
	order := make(map[string]int, len(fr.Shard.Cases))
	for i, id := range fr.Shard.Cases {
		order[id] = i
	}
	results := make([]Result, len(fr.Shard.Cases))
	from := make([]string, len(fr.Shard.Cases)) // the report each case came from
	for _, s := range shards {
		for _, c := range s.Report.Results {
			id := CaseID(c.File, c.Case)
			i, ok := order[id]
			switch {
			case !ok:
				return nil, mergef("%s has case %s, which its run does not list", s.Name, id)
			case from[i] != "":
				return nil, mergef("case %s is in both %s and %s", id, from[i], s.Name)
			}
			results[i], from[i] = c, s.Name
		}
	}
	var missing []string
	for i, id := range fr.Shard.Cases {
		if from[i] == "" {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		var shardsMissing []string
		for i := 1; i <= fr.Shard.Total; i++ {
			if _, ok := byIndex[i]; !ok {
				shardsMissing = append(shardsMissing, fmt.Sprintf("%d/%d", i, fr.Shard.Total))
			}
		}
		what := "no report has"
		switch len(shardsMissing) {
		case 0:
		case 1:
			what = "shard " + shardsMissing[0] + " is missing: no report has"
		default:
			what = "shards " + strings.Join(shardsMissing, ", ") + " are missing: no report has"
		}
		return nil, mergef("%s %s", what, listSome(missing, 5))
	}
	return &Report{Plugins: fr.Plugins, OZ0Version: fr.OZ0Version, Results: results}, nil
}

// pluginsOf names a report's plugins: "plugin acme 0.1.0", "plugins a 0.1.0, b 0.2.0".
func pluginsOf(r *Report) string {
	var names []string
	for _, p := range r.Plugins {
		names = append(names, p.Name+" "+p.Version)
	}
	switch len(names) {
	case 0:
		return "no plugin"
	case 1:
		return "plugin " + names[0]
	}
	return "plugins " + strings.Join(names, ", ")
}

// listSome names the first n of ids, and how many more there are.
func listSome(ids []string, n int) string {
	noun := "cases"
	if len(ids) == 1 {
		noun = "case"
	}
	if len(ids) <= n {
		return noun + " " + strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s %s and %d more", noun, strings.Join(ids[:n], ", "), len(ids)-n)
}
