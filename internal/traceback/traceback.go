// Package traceback reads the traceback a harness printed on stderr as it failed: Python's
// ("Traceback (most recent call last):", its frames, the exception) and Node's (the error, then
// its "    at …" frames). A job that fails keeps its harness's last one (oz0 job show, oz0 run and
// the dev UI show it), so the file and line that raised are one look away, not twenty rows of
// stderr.
package traceback

import (
	"strings"

	"github.com/orchestrator-zero/oz0/internal/lazyre"
	"github.com/orchestrator-zero/oz0/internal/textclip"
)

// Bounds of what Last keeps: a traceback is read by a person, and kept on the job's record.
const (
	MaxLines    = 100
	MaxLineSize = 500
)

const pythonStart = "Traceback (most recent call last):"

// Last is the last traceback in text (the end of a harness's stderr): its lines, from Python's
// "Traceback (most recent call last):" to the exception, or Node's error line and its "at" frames;
// nil when text has none. A traceback over MaxLines keeps its first line and its last lines (the
// innermost frames and the exception); each line is clipped to MaxLineSize bytes.
func Last(text string) []string {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	var tb []string
	if i := lastIndex(lines, func(l string) bool { return strings.TrimSpace(l) == pythonStart }); i >= 0 {
		tb = python(lines[i:])
	}
	if js := node(lines); len(js) > 0 && (tb == nil || nodeLater(lines, js, tb)) {
		tb = js
	}
	if tb == nil {
		return nil
	}
	if len(tb) > MaxLines {
		tb = append(tb[:1:1], tb[len(tb)-(MaxLines-1):]...)
	}
	for i, l := range tb {
		if c, cut := textclip.Bytes(l, MaxLineSize-len("…")); cut {
			tb[i] = c + "…"
		}
	}
	return tb
}

// python is the traceback that lines starts with: its indented frame lines, then the exception
// line (the first that is not indented), and the lines of a message that goes on (up to a blank
// line or the next traceback).
func python(lines []string) []string {
	tb := []string{strings.TrimSpace(lines[0])}
	i := 1
	for ; i < len(lines) && strings.HasPrefix(lines[i], " "); i++ {
		tb = append(tb, strings.TrimRight(lines[i], " "))
	}
	if i < len(lines) && strings.TrimSpace(lines[i]) != "" {
		tb = append(tb, strings.TrimRight(lines[i], " "))
	}
	return tb
}

// nodeFrame is a frame of Node's stack: "    at fn (file:///p/a.mjs:3:9)", "    at file:///p/a.mjs:3:9".
var nodeFrame = lazyre.New(`^\s+at (?:(.*?) \()?((?:file://)?[^()]+?):(\d+):(\d+)\)?$`)

// node is Node's last stack in lines: the error line and the "at" frames after it.
func node(lines []string) []string {
	end := lastIndex(lines, func(l string) bool { return nodeFrame().MatchString(l) })
	if end < 0 {
		return nil
	}
	start := end
	for start > 0 && nodeFrame().MatchString(lines[start-1]) {
		start--
	}
	if start == 0 || strings.TrimSpace(lines[start-1]) == "" {
		return nil // frames with no error line: not a stack Node printed for an error
	}
	tb := []string{strings.TrimSpace(lines[start-1])}
	for _, l := range lines[start : end+1] {
		tb = append(tb, strings.TrimRight(l, " "))
	}
	return tb
}

// nodeLater reports whether Node's stack js comes after Python's traceback py in lines.
func nodeLater(lines, js, py []string) bool {
	at := func(first string) int {
		return lastIndex(lines, func(l string) bool { return strings.TrimSpace(l) == first })
	}
	return at(js[0]) > at(py[0])
}

func lastIndex(lines []string, f func(string) bool) int {
	for i := len(lines) - 1; i >= 0; i-- {
		if f(lines[i]) {
			return i
		}
	}
	return -1
}

// Frame is one frame of a traceback: where the call was, and, for Python, its line of code.
type Frame struct {
	File string
	Line string
	Func string
	Code string
}

// String is the frame on one line: "src/acme/agent.py:15, in notify_team: return x[team]".
func (f Frame) String() string {
	s := f.File + ":" + f.Line
	if f.Func != "" {
		s += ", in " + f.Func
	}
	if f.Code != "" {
		s += ": " + f.Code
	}
	return s
}

var pythonFrame = lazyre.New(`^\s*File "(.+)", line (\d+)(?:, in (.+))?$`)

// Frames are the frames of a traceback Last returned, outermost first, as Python prints them
// (Node's, innermost first as printed, are turned around).
func Frames(tb []string) []Frame {
	var out []Frame
	if len(tb) > 0 && tb[0] == pythonStart {
		for i := 1; i < len(tb); i++ {
			m := pythonFrame().FindStringSubmatch(tb[i])
			if m == nil {
				continue
			}
			f := Frame{File: m[1], Line: m[2], Func: m[3]}
			if i+1 < len(tb) && !pythonFrame().MatchString(tb[i+1]) && strings.HasPrefix(tb[i+1], "    ") {
				if code := strings.TrimSpace(tb[i+1]); strings.Trim(code, "^~ ") != "" {
					f.Code = code
				}
			}
			out = append(out, f)
		}
		return out
	}
	for _, l := range tb {
		if m := nodeFrame().FindStringSubmatch(l); m != nil {
			out = append([]Frame{{File: strings.TrimPrefix(m[2], "file://"), Line: m[3], Func: m[1]}}, out...)
		}
	}
	return out
}

// Exception is the traceback's last line for Python (the exception), its first for Node (the error).
func Exception(tb []string) string {
	if len(tb) == 0 {
		return ""
	}
	if tb[0] == pythonStart {
		return tb[len(tb)-1]
	}
	return tb[0]
}
