package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/scaffold"
)

// These benchmarks time whole oz0 processes, as a user or CI meets them: start-up included.
// BenchmarkColdVersion is the baseline: the cost of starting the binary at all.

// oz0Binary builds the real binary into the benchmark's temporary directory (the build cache
// makes every build after the first a link).
func oz0Binary(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "oz0")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func runBin(b *testing.B, bin string, dir string, args ...string) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("oz0 %v: %v\n%s", args, err, out)
	}
}

func BenchmarkColdVersion(b *testing.B) {
	bin := oz0Binary(b)
	for b.Loop() {
		runBin(b, bin, "", "version")
	}
}

func BenchmarkColdPluginLintTemplate(b *testing.B) {
	bin := oz0Binary(b)
	parent := b.TempDir()
	if _, err := scaffold.Create(scaffold.Options{Name: "acme-triage", Template: "byo-agent", Description: "Sorts support tickets", Parent: parent}); err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(parent, "acme-triage")
	for b.Loop() {
		runBin(b, bin, dir, "plugin", "lint")
	}
}

func BenchmarkColdPluginNew(b *testing.B) {
	bin := oz0Binary(b)
	parent := b.TempDir()
	i := 0
	for b.Loop() {
		runBin(b, bin, parent, "plugin", "new", fmt.Sprintf("p%d", i), "--template", "byo-agent", "--description", "Sorts support tickets")
		i++
	}
}

// BenchmarkColdDevReady is `oz0 dev` as a user starts it, process start to ready (the
// --ready-file written), on the scaffolded template; then it is stopped with SIGINT, untimed.
func BenchmarkColdDevReady(b *testing.B) {
	bin := oz0Binary(b)
	parent := b.TempDir()
	if _, err := scaffold.Create(scaffold.Options{Name: "acme-triage", Template: "byo-agent", Description: "Sorts support tickets", Parent: parent}); err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(parent, "acme-triage")
	ready := filepath.Join(b.TempDir(), "ctx")
	for b.Loop() {
		cmd := exec.Command(bin, "dev", "--ephemeral", "--ready-file", ready)
		cmd.Dir = dir
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := os.Stat(ready); err == nil {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				b.Fatal("oz0 dev not ready in 10 s")
			}
			time.Sleep(200 * time.Microsecond)
		}
		b.StopTimer()
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		os.Remove(ready)
		b.StartTimer()
	}
}
