package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// runnableMark is the line before a code block's fence that marks the block runnable: a reader
// can paste it into a shell as it is, so a test does. An HTML comment, so a page shows nothing of it.
const runnableMark = "<!-- runnable -->"

// docBlock is a runnable code block of a user doc.
type docBlock struct {
	name string // the page and the fence's line, as a script's name: README.md:24 is README_md_24
	text string
	repo bool // README.md's: run from the repository's root
}

// runnableBlocks are the blocks of README.md and docs/*.md marked runnable.
func runnableBlocks(t *testing.T) []docBlock {
	t.Helper()
	pages, _ := filepath.Glob("../../docs/*.md")
	var blocks []docBlock
	for _, p := range append([]string{"../../README.md"}, pages...) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		for i := 0; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) != runnableMark {
				continue
			}
			rel, _ := filepath.Rel("../..", p)
			if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
				t.Errorf("%s:%d: %s is not followed by a code block's fence", rel, i+1, runnableMark)
				continue
			}
			start := i + 2
			end := start
			for end < len(lines) && !strings.HasPrefix(lines[end], "```") {
				end++
			}
			if end == len(lines) {
				t.Errorf("%s:%d: the runnable block has no closing fence", rel, i+2)
				break
			}
			name := regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(fmt.Sprintf("%s_%d", rel, i+2), "_")
			blocks = append(blocks, docBlock{name: name, text: strings.Join(lines[start:end], "\n") + "\n", repo: rel == "README.md"})
			i = end
		}
	}
	return blocks
}

// TestDocsRunnableBlocks runs every code block of README.md and docs/*.md marked runnable with
// bash (-euo pipefail), in a home of its own and offline, so that what a page tells a reader to
// type works as written: the README's from the repository's root, as a reader who has just cloned
// it (its quickstart builds oz0 with make build and runs the guide's job); the pages' in an empty
// directory, with oz0 on PATH (this test binary, as the scripts have it).
func TestDocsRunnableBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("the docs' runnable blocks build oz0 and run its jobs")
	}
	blocks := runnableBlocks(t)
	if len(blocks) == 0 {
		t.Fatalf("no code block is marked %s: README.md's quickstart is one", runnableMark)
	}
	dir := t.TempDir()
	for _, b := range blocks {
		script := "exec bash -euo pipefail $WORK/block.sh\n-- block.sh --\n" + b.text
		if b.repo {
			script = "cd $OZ0_REPO\n" + script
		}
		if err := os.WriteFile(filepath.Join(dir, b.name+".txtar"), []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			home := env.WorkDir + ".home"
			if err := os.Mkdir(home, 0o755); err != nil {
				return err
			}
			env.Setenv("HOME", home)
			env.Setenv("PYTHONDONTWRITEBYTECODE", "1")
			env.Setenv("OZ0_REPO", repo)
			// make build, offline, from the caches this test was built with.
			return offlineGo(env)
		},
	})
}

// The marker finds the README's quickstart, whole.
func TestRunnableBlocksFound(t *testing.T) {
	var quickstart string
	for _, b := range runnableBlocks(t) {
		if strings.HasPrefix(b.name, "README_md_") {
			quickstart = b.text
		}
	}
	if !strings.Contains(quickstart, "make build") || !strings.Contains(quickstart, "oz0 run acme-triage") {
		t.Errorf("README.md's quickstart is not a runnable block (found %q)", quickstart)
	}
}
