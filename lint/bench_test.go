package lint

import (
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkLintTemplate lints the byo-agent template plugin, on disk.
func BenchmarkLintTemplate(b *testing.B) {
	dir := b.TempDir()
	writeFiles(b, dir, templateFiles(), nil)
	b.ReportAllocs()
	for b.Loop() {
		rep, err := Run(dir)
		if err != nil || len(rep.Diagnostics) > 0 {
			b.Fatal(err, rep.Diagnostics)
		}
	}
}

// BenchmarkLint1000 lints 1,000 copies of the template per op with
// RunMany (goal: at most 2 s per op).
func BenchmarkLint1000(b *testing.B) {
	root := b.TempDir()
	dirs := make([]string, 1000)
	for i := range dirs {
		dirs[i] = filepath.Join(root, fmt.Sprintf("p%04d", i))
		writeFiles(b, dirs[i], templateFiles(), nil)
	}
	b.ReportAllocs()
	for b.Loop() {
		reps, err := RunMany(dirs, 0)
		if err != nil {
			b.Fatal(err)
		}
		for _, rep := range reps {
			if len(rep.Diagnostics) > 0 {
				b.Fatal(rep.Diagnostics)
			}
		}
	}
}

// BenchmarkLint1000Sequential is BenchmarkLint1000 on one goroutine.
func BenchmarkLint1000Sequential(b *testing.B) {
	root := b.TempDir()
	dirs := make([]string, 1000)
	for i := range dirs {
		dirs[i] = filepath.Join(root, fmt.Sprintf("p%04d", i))
		writeFiles(b, dirs[i], templateFiles(), nil)
	}
	for b.Loop() {
		for _, d := range dirs {
			if _, err := Run(d); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkLintBigSchema lints the template with an input schema near the limits: 1 MiB at most,
// 64 levels deep at most. The compile's cost should grow with the schema's size alone: wide is
// 1,200 properties each 30 arrays deep (~1 MB), deep the 64 levels.
func BenchmarkLintBigSchema(b *testing.B) {
	chain := nestedItems(30)
	wide := `{"type": "object", "properties": {`
	for i := range 1200 {
		if i > 0 {
			wide += ", "
		}
		wide += fmt.Sprintf("%q: %s", fmt.Sprint("p", i), chain)
	}
	wide += "}}"
	for _, tc := range []struct{ name, schema string }{{"wide", wide}, {"deep", nestedItems(64)}} {
		b.Run(tc.name, func(b *testing.B) {
			dir := b.TempDir()
			files := templateFiles()
			files["agents/acme-triage.yaml"] = replace(templateAgent, "input: text", "input: {schema: in.json}")
			files["in.json"] = tc.schema
			writeFiles(b, dir, files, nil)
			b.ReportAllocs()
			for b.Loop() {
				rep, err := Run(dir)
				if err != nil || len(rep.Diagnostics) > 0 {
					b.Fatal(err, rep.Diagnostics)
				}
			}
		})
	}
}
