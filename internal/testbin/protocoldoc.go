package testbin

import (
	"os"
	"strings"
	"testing"
)

// DocBlock is a ```json block of docs/protocol.md.
type DocBlock struct {
	Line    int    // the line of the opening fence
	Section string // the ## heading it is under
	Lines   []string
}

// ProtocolBlocks reads the ```json blocks of docs/protocol.md (at protocolDoc).
func ProtocolBlocks(t testing.TB, protocolDoc string) []DocBlock {
	t.Helper()
	data, err := os.ReadFile(protocolDoc)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []DocBlock
	var cur *DocBlock
	section := ""
	for i, l := range strings.Split(string(data), "\n") {
		switch {
		case cur != nil && strings.HasPrefix(l, "```"):
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			if strings.TrimSpace(l) != "" {
				cur.Lines = append(cur.Lines, l)
			}
		case strings.HasPrefix(l, "```json"):
			cur = &DocBlock{Line: i + 1, Section: section}
		case strings.HasPrefix(l, "## "):
			section = strings.TrimPrefix(l, "## ")
		}
	}
	if cur != nil {
		t.Fatalf("%s:%d: a ```json block is not closed", protocolDoc, cur.Line)
	}
	return blocks
}

// ProtocolTranscript is the worked transcript's lines, in order.
func ProtocolTranscript(t testing.TB, protocolDoc string) []string {
	t.Helper()
	var lines []string
	for _, b := range ProtocolBlocks(t, protocolDoc) {
		if strings.HasPrefix(b.Section, "A worked transcript") {
			lines = append(lines, b.Lines...)
		}
	}
	if len(lines) != 6 {
		t.Fatalf("the transcript in %s has %d lines, want 6", protocolDoc, len(lines))
	}
	return lines
}
