package supervisor

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/internal/textclip"
)

// The bounds on a harness's stderr, its log. The whole of it is counted; the supervisor keeps the
// last StderrTailSize bytes in memory (End.StderrTail) and sends each line to the sink as an
// EventStderr, cut at MaxStderrLine, within a budget: StderrBurst bytes at once, refilled at
// StderrRate bytes a second (each line costs its length plus stderrLineCost). Lines over the
// budget are counted, not sent, and one EventStderr with a Note says how many when lines are sent
// again, or at the end. A harness that writes 1 GB to stderr costs the node about
// StderrTailSize + MaxStderrLine of memory and the sink at most StderrBurst + StderrRate × the
// session's duration.
const (
	StderrTailSize = 64 << 10
	MaxStderrLine  = 16 << 10
	StderrBurst    = 1 << 20
	StderrRate     = 64 << 10
	stderrLineCost = 64
)

type stderrLog struct {
	emit func(harnesskit.Event) // serialized by the session

	mu    sync.Mutex
	ring  []byte // StderrTailSize, filled circularly
	pos   int    // next write position in ring
	full  bool   // ring has wrapped
	total int64

	// owned by the reading goroutine
	line     []byte // the current line, at most MaxStderrLine bytes
	lineCut  int64  // bytes of the current line past MaxStderrLine
	tokens   float64
	refilled time.Time
	dropped  int64 // lines not sent since the last note
	dropB    int64
	dropAll  int64
}

func newStderrLog(emit func(harnesskit.Event)) *stderrLog {
	return &stderrLog{emit: emit, ring: make([]byte, StderrTailSize), tokens: StderrBurst, refilled: time.Now()}
}

// write takes a chunk of stderr. It is called by one goroutine.
func (l *stderrLog) write(p []byte) {
	l.keep(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.appendLine(p)
			return
		}
		if len(l.line) == 0 && l.lineCut == 0 {
			l.send(p[:i], 0)
		} else {
			l.appendLine(p[:i])
			l.send(l.line, l.lineCut)
			l.line, l.lineCut = l.line[:0], 0
		}
		p = p[i+1:]
	}
}

func (l *stderrLog) appendLine(p []byte) {
	room := MaxStderrLine - len(l.line)
	if len(p) > room {
		l.lineCut += int64(len(p) - room)
		p = p[:room]
	}
	l.line = append(l.line, p...)
}

// finish sends the last line (without "\n") and the note of lines left out.
func (l *stderrLog) finish() {
	if len(l.line) > 0 || l.lineCut > 0 {
		l.send(l.line, l.lineCut)
		l.line, l.lineCut = nil, 0
	}
	l.note()
}

func (l *stderrLog) send(line []byte, cut int64) {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(line) > MaxStderrLine {
		cut += int64(len(line) - MaxStderrLine)
		line = line[:MaxStderrLine]
	}
	cost := float64(len(line) + stderrLineCost)
	if l.tokens < cost {
		now := time.Now()
		l.tokens = min(StderrBurst, l.tokens+now.Sub(l.refilled).Seconds()*StderrRate)
		l.refilled = now
	}
	if l.tokens < cost {
		l.dropped++
		l.dropB += int64(len(line)) + cut
		l.dropAll++
		return
	}
	l.tokens -= cost
	l.note()
	ev := harnesskit.Event{Kind: harnesskit.EventStderr, Text: strings.ToValidUTF8(string(line), "\uFFFD")}
	if cut > 0 {
		ev.Note = fmt.Sprintf("the line is %d bytes long; the first %d are kept", int64(len(line))+cut, len(line))
	}
	l.emit(ev)
}

func (l *stderrLog) note() {
	if l.dropped == 0 {
		return
	}
	l.emit(harnesskit.Event{Kind: harnesskit.EventStderr, Note: fmt.Sprintf(
		"%d lines of stderr (%d bytes) were left out of the trace: over the budget of %s at once and %s a second; the last %s of stderr is kept with the session's end",
		l.dropped, l.dropB, textclip.SizeName(int64(StderrBurst)), textclip.SizeName(int64(StderrRate)), textclip.SizeName(int64(StderrTailSize)))})
	l.dropped, l.dropB = 0, 0
}

// keep adds p to the tail.
func (l *stderrLog) keep(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total += int64(len(p))
	size := len(l.ring)
	if len(p) >= size {
		copy(l.ring, p[len(p)-size:])
		l.pos, l.full = 0, true
		return
	}
	n := copy(l.ring[l.pos:], p)
	if n < len(p) {
		copy(l.ring, p[n:])
		l.full = true
	}
	l.pos = (l.pos + len(p)) % size
	if l.pos == 0 && len(p) > 0 {
		l.full = true
	}
}

// tail returns the last StderrTailSize bytes of stderr and the total size.
func (l *stderrLog) tail() ([]byte, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.full {
		return bytes.Clone(l.ring[:l.pos]), l.total
	}
	out := make([]byte, 0, len(l.ring))
	out = append(out, l.ring[l.pos:]...)
	return append(out, l.ring[:l.pos]...), l.total
}
