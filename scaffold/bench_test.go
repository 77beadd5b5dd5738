package scaffold

import (
	"fmt"
	"testing"
)

// BenchmarkRender is the in-memory part of plugin new: every template file rendered.
func BenchmarkRender(b *testing.B) {
	o := opts(b.TempDir())
	for b.Loop() {
		if _, err := Render(o); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreate is plugin new without the process: render, write to a temporary directory,
// rename into place.
func BenchmarkCreate(b *testing.B) {
	parent := b.TempDir()
	i := 0
	for b.Loop() {
		o := opts(parent)
		o.Name = fmt.Sprintf("p%d", i)
		i++
		if _, err := Create(o); err != nil {
			b.Fatal(err)
		}
	}
}
