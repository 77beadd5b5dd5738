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
