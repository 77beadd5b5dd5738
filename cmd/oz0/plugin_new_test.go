package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/prompt"
)

// testPrompter answers as a person would and records what was asked: a form's fields by title
// from answers, a yes/no question with confirm, a waiting tool call with approval.
type testPrompter struct {
	answers  map[string]string
	asked    []string
	err      error
	confirm  bool
	approval struct {
		choice, reason string
		ok             bool
	}
}

func (a *testPrompter) Ask(qs []prompt.Question) error {
	for _, q := range qs {
		a.asked = append(a.asked, q.Title)
		v := a.answers[q.Title]
		if q.Validate != nil {
			if err := q.Validate(v); err != nil {
				return err
			}
		}
		*q.Value = v
	}
	return a.err
}

func (a *testPrompter) Confirm(_ context.Context, title string) bool {
	a.asked = append(a.asked, title)
	return a.confirm
}

func (a *testPrompter) Approval(ctx context.Context, title string) (choice, reason string, ok bool) {
	a.asked = append(a.asked, title)
	return a.approval.choice, a.approval.reason, a.approval.ok
}

func newTestFactory(t *testing.T, tty bool, p prompt.Prompter) (*cmdutil.Factory, string) {
	t.Helper()
	dir := t.TempDir()
	ios, _, _, _ := iostreams.Test()
	ios.SetTTY(tty, tty)
	return &cmdutil.Factory{IOStreams: ios, Version: "test", Getwd: func() (string, error) { return dir, nil }, Prompter: p}, dir
}

func TestPluginNewAsksForWhatIsMissingOnATerminal(t *testing.T) {
	a := &testPrompter{answers: map[string]string{"Plugin name": "acme-triage", "Template": "byo-agent", "Description": "Sorts support tickets"}}
	f, dir := newTestFactory(t, true, a)
	if code := execute(f, []string{"plugin", "new"}); code != 0 {
		t.Fatalf("exit %d: %s", code, f.IOStreams.ErrOut)
	}
	if got := strings.Join(a.asked, ","); got != "Plugin name,Template,Description" {
		t.Errorf("asked %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "acme-triage", "oz0-plugin.yaml")); err != nil {
		t.Fatal(err)
	}
}

func TestPluginNewAsksOnlyForTheMissingFlag(t *testing.T) {
	a := &testPrompter{answers: map[string]string{"Description": "Sorts support tickets"}}
	f, _ := newTestFactory(t, true, a)
	if code := execute(f, []string{"plugin", "new", "acme-triage", "--template", "byo-agent"}); code != 0 {
		t.Fatalf("exit %d: %s", code, f.IOStreams.ErrOut)
	}
	if got := strings.Join(a.asked, ","); got != "Description" {
		t.Errorf("asked %q", got)
	}
}

func TestPluginNewCancelledFormWritesNothing(t *testing.T) {
	a := &testPrompter{answers: map[string]string{"Description": "x"}, err: prompt.ErrCancel}
	f, dir := newTestFactory(t, true, a)
	code := execute(f, []string{"plugin", "new", "acme-triage", "--template", "byo-agent"})
	if code != cmdutil.ExitUsage {
		t.Fatalf("exit %d, want %d", code, cmdutil.ExitUsage)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Fatalf("cancel left %v behind", entries)
	}
	if !strings.Contains(f.IOStreams.ErrOut.(interface{ String() string }).String(), "nothing was written") {
		t.Errorf("stderr: %s", f.IOStreams.ErrOut)
	}
}

func TestPluginNewRefusesNonEmptyTargetBeforeAsking(t *testing.T) {
	a := &testPrompter{}
	f, dir := newTestFactory(t, true, a)
	if err := os.MkdirAll(filepath.Join(dir, "acme-triage"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "acme-triage", "keep.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	code := execute(f, []string{"plugin", "new", "acme-triage"})
	if code != cmdutil.ExitUsage {
		t.Fatalf("exit %d", code)
	}
	if len(a.asked) != 0 {
		t.Errorf("asked %v before refusing", a.asked)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "acme-triage", "keep.txt")); string(b) != "mine" {
		t.Error("the existing file was touched")
	}
}

func TestPluginNewWithoutTerminalNamesTheMissingFlags(t *testing.T) {
	f, _ := newTestFactory(t, false, &testPrompter{})
	code := execute(f, []string{"plugin", "new", "acme-triage"})
	if code != cmdutil.ExitUsage {
		t.Fatalf("exit %d", code)
	}
	msg := f.IOStreams.ErrOut.(interface{ String() string }).String()
	if !strings.Contains(msg, "--template") || !strings.Contains(msg, "--description") || strings.Count(msg, "\n") != 1 {
		t.Errorf("want one line naming both flags, got %q", msg)
	}
}

// The next steps of byo-agent say how to test without uv when uv is not installed, and are
// unchanged when it is; a framework template's tests need the framework uv installs, and a Node
// template's need npm: theirs are unchanged either way.
func TestPluginNewNextStepsWithoutUV(t *testing.T) {
	steps := "Next steps:\n  cd p\n  uv lock && uv sync\n  uv run pytest\n  oz0 plugin lint\n"
	fallback := "\nuv is not installed (not on PATH); the tests also run without it:\n  python3 -m unittest discover -s tests -v\n"
	for _, tc := range []struct {
		name     string
		template string
		haveUV   bool
		want     string
	}{
		{"byo-agent with uv", "byo-agent", true, steps},
		{"byo-agent without uv", "byo-agent", false, steps + fallback},
		{"adk without uv", "adk", false, steps},
		{"strands-ts", "strands-ts", false, "Next steps:\n  cd p\n  npm ci\n  npm test\n  oz0 plugin lint\n"},
		{"adk-ts", "adk-ts", false, "Next steps:\n  cd p\n  npm ci\n  npm test\n  oz0 plugin lint\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, dir := newTestFactory(t, false, nil)
			opts := &pluginNewOptions{IO: f.IOStreams, Getwd: f.Getwd, Name: "p", Template: tc.template, Description: "d",
				LookPath: func(name string) (string, error) {
					if name == "uv" && tc.haveUV {
						return "/usr/bin/uv", nil
					}
					return "", exec.ErrNotFound
				}}
			if err := pluginNewRun(opts); err != nil {
				t.Fatal(err)
			}
			out := f.IOStreams.Out.(*bytes.Buffer).String()
			_, got, _ := strings.Cut(out, "\n\n")
			if got != tc.want {
				t.Errorf("%s, uv installed %v: printed\n%s\nwant\n%s", tc.template, tc.haveUV, got, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "p")); err != nil {
				t.Fatal(err)
			}
		})
	}
}
