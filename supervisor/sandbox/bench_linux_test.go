//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkRunTrue runs /bin/true in each tier, start to exit: what a sandbox adds to a session's
// start and end. none is the plain fork and exec.
func BenchmarkRunTrue(b *testing.B) {
	for _, tier := range Tiers {
		b.Run(string(tier), func(b *testing.B) {
			if err := Check(tier); err != nil {
				b.Skip(err)
			}
			for b.Loop() {
				root := b.TempDir()
				box := filepath.Join(root, "sandbox")
				os.Mkdir(box, 0o700)
				cmd := &exec.Cmd{Path: "/bin/true", Args: []string{"true"}, Dir: root}
				if tier == None {
					if err := cmd.Run(); err != nil {
						b.Fatal(err)
					}
					continue
				}
				c := Config{Tier: tier, Argv: cmd.Args, Root: box, Writable: []string{root}}
				if tier == Strict {
					c.Listen = []string{"127.0.0.1:1"}
				}
				p, err := Prepare(cmd, c)
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Start(); err != nil {
					b.Fatal(err)
				}
				if err := p.Cmd().Wait(); err != nil {
					b.Fatal(err)
				}
				for _, l := range p.Listeners() {
					l.Close()
				}
			}
		})
	}
}
