//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/devserver/store"
	"github.com/orchestrator-zero/oz0/internal/testbin"
	"github.com/orchestrator-zero/oz0/internal/textclip"
)

// TestDiskFull runs the real `oz0 dev` with its state directory on a full disk: an 8 MiB tmpfs,
// mounted in a user and mount namespace of the test's own (no root needed), 5 MiB of it taken by
// another file. A harness says 20 MiB: the job fails at once saying the disk is full, its session
// stopped, its record ending with the gap; `oz0 run` ends with it (it hung); a job that waits is
// cancelled at once (`oz0 job cancel` hung 30 s and left it running); a new job is refused saying
// why; once the other file is gone, jobs run again. Started on a full disk, oz0 dev says so (it
// said `database or disk is full (13)`, or `disk I/O error (4874)`). docs/reliability.md has the
// figures it logs.
func TestDiskFull(t *testing.T) {
	if out, err := exec.Command("unshare", "--user", "--map-root-user", "--mount", "true").CombinedOutput(); err != nil {
		t.Skipf("a full disk needs a user and mount namespace, which cannot be made here (unshare: %v %s)", err, out)
	}
	bin, err := exec.LookPath("oz0")
	if err != nil {
		t.Fatal(err)
	}
	harness := testbin.Build(t, testbin.TestHarness)
	work, err := os.MkdirTemp("", "oz0-diskfull-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	manifest := "apiVersion: oz0/v1\nname: diskfull\nversion: 0.1.0\nruntime: binary\nagents: [agents/]\nharnesses:\n"
	files := map[string]string{"prompts/p.md": "Go.\n"}
	for name, argv := range map[string][]string{"flood": {"saysflood", "320x65536"}, "hang": {"hang"}, "ok": {"ok"}} {
		cmd, _ := json.Marshal(append([]string{harness}, argv...))
		manifest += fmt.Sprintf("  - name: %s\n    command: %s\n    formats: [anthropic-messages]\n", name, cmd)
		files["agents/"+name+".yaml"] = fmt.Sprintf("name: %s\nruntime: harness:%s\ninstructions: prompts/p.md\n", name, name)
	}
	files["oz0-plugin.yaml"] = manifest
	plug := filepath.Join(work, "plug")
	testbin.WriteFiles(t, plug, files)
	disk := filepath.Join(work, "disk") // the tmpfs's mount point, in the namespace
	if err := os.Mkdir(disk, 0o755); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(disk, "state")
	// onDisk runs oz0 dev in a namespace of its own on a fresh 8 MiB tmpfs, after fill.
	onDisk := func(fill, ready string) *exec.Cmd {
		script := `mount -t tmpfs -o size=8m none "$1" && ` + fill + `; exec "$2" dev --sandbox none --plugin "$3" --state-dir "$1/state" --ready-file "$4"`
		return exec.Command("unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script, "sh", disk, bin, plug, ready)
	}

	// Started on a full disk: one line that says so, and how to mend it; exit 3.
	out, err := onDisk(`head -c 16777216 /dev/zero > "$1/filler" 2>/dev/null`, filepath.Join(work, "ctx0")).CombinedOutput()
	full := regexp.MustCompile(`^oz0: the disk that holds the state directory ` + regexp.QuoteMeta(state) + ` is full \(\d+ (bytes|KiB)? ?free\): oz0 dev needs 1 MiB free there; free some space on it, or choose another --state-dir\n$`)
	if code := exitCode(err); code != 3 || !full.Match(out) {
		t.Errorf("oz0 dev on a full disk: exit %d\n%s", code, out)
	}

	ready := filepath.Join(work, "ctx")
	dev := startProcess(t, ready, filepath.Join(work, "dev.log"), "unshare", onDisk(`head -c 5242880 /dev/zero > "$1/filler"`, ready).Args[1:]...)
	ctx, err := apiv1.ParseContext(dev.ready)
	if err != nil {
		t.Fatal(err)
	}
	oz0 := func(args ...string) (code int, stdout, stderr string, took time.Duration) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), apiv1.ContextEnv+"="+ctx.String())
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-time.After(2 * time.Minute):
			cmd.Process.Kill()
			t.Fatalf("oz0 %s did not end within two minutes:\n%s\n%s", strings.Join(args, " "), textclip.LastLines(o.String(), 5, 2000), e.String())
		}
		return exitCode(err), o.String(), e.String(), time.Since(start)
	}
	trace := func(job string) []store.Event {
		t.Helper()
		code, stdout, stderr, _ := oz0("job", "trace", job)
		if code != 0 {
			t.Fatalf("oz0 job trace: exit %d: %s", code, stderr)
		}
		_, evs, err := store.LoadTrace(strings.NewReader(stdout))
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}

	// A job that waits, to be cancelled while the disk is full.
	code, stdout, stderr, _ := oz0("run", "hang", "wait", "--detach")
	if code != 0 {
		t.Fatalf("oz0 run hang --detach: exit %d: %s", code, stderr)
	}
	waiting := strings.TrimSpace(stdout)
	waitFor(t, "the waiting job's say", func() bool { return strings.Contains(traceLinesOf(trace(waiting)), `"type":"say"`) })

	// The flood: oz0 run ends with the job, which failed at once, saying why.
	code, stdout, stderr, took := oz0("run", "flood", "go")
	failed := regexp.MustCompile(`(?m)^oz0: job (job_[a-z2-7]+) failed: its events could not be recorded, so its session was stopped: the disk that holds oz0 dev's state directory ` +
		regexp.QuoteMeta(state) + ` is full \([^)]*free\); free some space on it \(oz0 dev carries on once it can write\)$`)
	m := failed.FindStringSubmatch(stderr)
	if code != 1 || m == nil {
		t.Fatalf("oz0 run flood: exit %d\n%s", code, stderr)
	}
	flood := m[1]
	evs := trace(flood)
	n := len(evs)
	var gap struct {
		Level string `json:"level"`
		Gap   *struct {
			Events int `json:"events"`
			Bytes  int `json:"bytes"`
		} `json:"gap"`
	}
	if n < 3 || evs[n-3].Type != store.EventLog || json.Unmarshal(evs[n-3].Data, &gap) != nil || gap.Gap == nil || gap.Level != "warning" ||
		evs[n-2].Type != store.EventError || !evs[n-1].Terminal() {
		t.Fatalf("the flood's record does not end with its gap, its error and its end:\n%s", clipLines(traceLines(evs[max(0, n-3):])))
	}
	said := 0
	for _, e := range evs {
		if e.Type == store.EventSay {
			said += len(e.Data)
		}
	}
	code, stdout, _, _ = oz0("job", "show", flood, "--json")
	var j apiv1.Job
	if code != 0 || json.Unmarshal([]byte(stdout), &j) != nil {
		t.Fatalf("oz0 job show: exit %d: %s", code, stdout)
	}
	t.Logf("the flood: oz0 run ended %s after it started; the job failed %s after it began to run, %s after its last recorded event; %.1f MiB of says recorded, %d events (%.1f MiB) not",
		took.Round(time.Millisecond), j.EndedAt.Sub(j.StartedAt).Round(time.Millisecond), evs[n-1].Time.Sub(evs[n-4].Time).Round(time.Millisecond),
		float64(said)/(1<<20), gap.Gap.Events, float64(gap.Gap.Bytes)/(1<<20))
	t.Logf("its record ends:\n%s", clipLines(traceLines(evs[n-3:])))

	// While the disk is full: a cancel answers, the job's end written from the store's reserve; a
	// job that has ended is said to have; a new job is refused, saying why.
	code, stdout, stderr, took = oz0("job", "cancel", waiting)
	if code != 0 || strings.TrimSpace(stdout) != waiting+" cancelled" {
		t.Errorf("oz0 job cancel while the disk is full: exit %d\n%s%s", code, stdout, stderr)
	}
	t.Logf("oz0 job cancel of a waiting job, the disk full: %s", took.Round(time.Millisecond))
	if code, _, stderr, _ = oz0("job", "cancel", flood); code != 2 || !strings.Contains(stderr, "has already ended: failed") {
		t.Errorf("oz0 job cancel of the failed job: exit %d\n%s", code, stderr)
	}
	refused := regexp.MustCompile(`(?m)^oz0: the disk that holds oz0 dev's state directory ` + regexp.QuoteMeta(state) + ` is full \([^)]*free\); free some space on it \(oz0 dev carries on once it can write\)$`)
	if code, _, stderr, _ = oz0("run", "ok", "hi"); code != 3 || !refused.MatchString(stderr) {
		t.Errorf("oz0 run while the disk is full: exit %d\n%s", code, stderr)
	}

	// Room again (the other file removed, through the namespace's view of the disk): oz0 dev
	// says so, and runs jobs.
	if err := os.Remove(filepath.Join("/proc", fmt.Sprint(dev.cmd.Process.Pid), "root", disk, "filler")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "oz0 dev to say the disk has room again", func() bool {
		b, _ := os.ReadFile(dev.log)
		return strings.Contains(string(b), "the disk that holds the state directory has room again: jobs run again")
	})
	if code, _, stderr, _ = oz0("run", "ok", "hi"); code != 0 {
		t.Errorf("oz0 run once there is room: exit %d\n%s", code, stderr)
	}
	b, _ := os.ReadFile(dev.log)
	if !strings.Contains(string(b), "warning: the disk that holds oz0 dev's state directory "+state+" is full (") {
		t.Errorf("oz0 dev did not say the disk was full:\n%s", b)
	}
}

// traceLinesOf is a trace's events as JSON lines.
func traceLinesOf(evs []store.Event) string { return strings.Join(traceLines(evs), "\n") }

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
