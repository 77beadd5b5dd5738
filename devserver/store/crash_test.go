package store

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const crashEnv = "OZ0_STORE_CRASH_CHILD"

// TestMain runs the test binary as TestCrash's child when asked to, rather than the tests.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashEnv); dir != "" {
		crashChild(dir)
		return
	}
	os.Exit(m.Run())
}

// crashChild is the child of TestCrash: it appends in a loop, from several goroutines, and
// prints each acknowledged seq, until it is killed.
func crashChild(dir string) {
	s, err := Open(dir)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	if _, err := s.MarkInterrupted("crashed"); err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	j, err := s.CreateJob(NewJob{Agent: "crash"})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	s.SetStatus(j.ID, StatusRunning, "")
	var mu sync.Mutex
	say := func(line string) {
		mu.Lock()
		os.Stdout.WriteString(line + "\n") // unbuffered: the parent has it before we go on
		mu.Unlock()
	}
	say("job " + j.ID)
	for g := range 8 {
		go func() {
			for i := 0; ; i++ {
				if i%7 == 0 {
					evs, err := s.AppendBatch(j.ID, []NewEvent{
						{Type: EventSay, Data: json.RawMessage(fmt.Sprintf(`{"g":%d,"i":%d,"k":0}`, g, i))},
						{Type: EventSay, Data: json.RawMessage(fmt.Sprintf(`{"g":%d,"i":%d,"k":1}`, g, i))},
						{Type: EventModelCall, Data: json.RawMessage(`{"input_tokens":1,"output_tokens":2}`)},
					})
					if err != nil {
						say("error " + err.Error())
						return
					}
					say("ack " + strconv.FormatInt(evs[2].Seq, 10))
					continue
				}
				e, err := s.Append(j.ID, EventSay, json.RawMessage(fmt.Sprintf(`{"g":%d,"i":%d,"pad":"%s"}`, g, i, strings.Repeat("x", i%300))))
				if err != nil {
					say("error " + err.Error())
					return
				}
				say("ack " + strconv.FormatInt(e.Seq, 10))
			}
		}()
	}
	select {} // until killed
}

// TestCrash kills (SIGKILL) a child process that appends in a loop, at a random moment, and
// checks that the database opens with every acknowledged event and no gap in the seqs. Three
// rounds on the same state directory.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range 3 {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), crashEnv+"="+dir)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Read everything the child prints, and kill it at a random moment while it appends
		// from all eight goroutines.
		var job string
		var maxAck int64
		acks := 0
		var childErr string
		lines := make(chan struct{})
		read := make(chan struct{})
		go func() {
			defer close(read)
			sc := bufio.NewScanner(out)
			first := true
			for sc.Scan() {
				line := sc.Text()
				switch {
				case strings.HasPrefix(line, "job "):
					job = strings.TrimPrefix(line, "job ")
				case strings.HasPrefix(line, "ack "):
					n, _ := strconv.ParseInt(strings.TrimPrefix(line, "ack "), 10, 64)
					maxAck = max(maxAck, n)
					acks++
				case strings.HasPrefix(line, "error "):
					childErr = line
				}
				if first && acks > 0 {
					first = false
					close(lines)
				}
			}
			if first {
				close(lines)
			}
		}()
		select {
		case <-lines:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatal("the child acknowledged nothing in 30 s")
		}
		time.Sleep(time.Duration(20+rng.IntN(300)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-read // acks printed before the kill landed count too
		cmd.Wait()
		if childErr != "" {
			t.Fatalf("round %d: child: %s", round, childErr)
		}
		if job == "" || acks == 0 {
			t.Fatalf("round %d: the child acknowledged nothing", round)
		}

		s, err := Open(dir)
		if err != nil {
			t.Fatalf("round %d: open after the crash: %v", round, err)
		}
		evs, err := s.Events(job, 0, 10000)
		for err == nil && len(evs) > 0 && len(evs)%10000 == 0 {
			var more []Event
			more, err = s.Events(job, evs[len(evs)-1].Seq, 10000)
			evs = append(evs, more...)
			if len(more) == 0 {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range evs {
			if e.Seq != int64(i+1) {
				t.Fatalf("round %d: event %d has seq %d: a gap", round, i, e.Seq)
			}
			if !json.Valid(e.Data) {
				t.Fatalf("round %d: seq %d: bad data %q", round, e.Seq, e.Data)
			}
		}
		last := int64(len(evs))
		if last < maxAck {
			t.Fatalf("round %d: %d events survived, but seq %d was acknowledged", round, last, maxAck)
		}
		g, _ := s.GetJob(job)
		calls := 0
		for _, e := range evs {
			if e.Type == EventModelCall {
				calls++
			}
		}
		if g.Usage.ModelCalls != int64(calls) || g.Usage.OutputTokens != int64(2*calls) {
			t.Fatalf("round %d: usage %+v for %d model_call events", round, g.Usage, calls)
		}
		t.Logf("round %d: %d acknowledged (max seq %d), %d events survived", round, acks, maxAck, last)
		s.Close()
	}
	// The next start marks the last round's job interrupted.
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ids, err := s.MarkInterrupted("crashed")
	if err != nil || len(ids) != 1 {
		t.Fatalf("MarkInterrupted: %v %v", ids, err)
	}
	jobs, _ := s.ListJobs(ListFilter{Status: []Status{StatusInterrupted}})
	if len(jobs) != 3 {
		t.Fatalf("%d interrupted jobs, want 3", len(jobs))
	}
}
