package gateway

import (
	"bytes"
	"io"

	"github.com/orchestrator-zero/oz0/internal/jsonutil"
)

// maxPending is the most bytes of an unfinished event held back; past it they are passed on as
// they are (an event that large is not one the gateway needs to read).
const maxPending = 4 << 20

// sseParser splits a stream of server-sent events into events, reads the usage on the way and, on
// an OpenAI stream whose include_usage the gateway asked for, drops the usage chunk.
type sseParser struct {
	face  Format
	strip bool

	pend []byte // the start of an event not yet complete
	out  []byte

	usage     Usage
	streamErr string
	done      bool  // the stream's last event has passed (message_stop, data: [DONE])
	deltas    int64 // events that carried content (text, a tool call's arguments, thinking)
}

// metered is the stream's usage as the gateway meters it: the upstream's, and for a stream that
// ended before its last event (whose final usage may not have come), at least one output token for
// each event that carried content.
func (p *sseParser) metered() Usage {
	u := p.usage
	if !p.done {
		u.OutputTokens = max(u.OutputTokens, p.deltas)
	}
	return u
}

var (
	contentBlockDelta = []byte("event: content_block_delta")
	contentMember     = []byte(`"content":"`)
	argumentsMember   = []byte(`"arguments":"`)
)

// carriesContent reports whether an OpenAI chunk's data has a non-empty content or arguments
// string: a text delta or a piece of a tool call.
func carriesContent(data []byte) bool {
	for _, key := range [][]byte{contentMember, argumentsMember} {
		for rest := data; ; {
			i := bytes.Index(rest, key)
			if i < 0 {
				break
			}
			rest = rest[i+len(key):]
			if len(rest) > 0 && rest[0] != '"' {
				return true
			}
		}
	}
	return false
}

// eventEnd returns the length of the first complete event in data (its blank line included), or -1.
func eventEnd(data []byte) int {
	i := bytes.Index(data, []byte("\n\n"))
	j := bytes.Index(data, []byte("\n\r\n"))
	switch {
	case i < 0 && j < 0:
		return -1
	case j < 0 || (i >= 0 && i < j):
		return i + 2
	}
	return j + 3
}

// feed takes the next bytes of the stream and returns the complete events to pass on. The result
// is valid until the next call.
func (p *sseParser) feed(chunk []byte) []byte {
	data := chunk
	if len(p.pend) > 0 {
		p.pend = append(p.pend, chunk...)
		data = p.pend
	}
	p.out = p.out[:0]
	i := 0
	for {
		n := eventEnd(data[i:])
		if n < 0 {
			break
		}
		ev := data[i : i+n]
		if p.keep(ev) {
			p.out = append(p.out, ev...)
		}
		i += n
	}
	rest := data[i:]
	if len(rest) > maxPending {
		p.out = append(p.out, rest...)
		rest = nil
	}
	if len(p.pend) > 0 {
		p.pend = p.pend[:copy(p.pend, rest)]
	} else {
		p.pend = append(p.pend[:0], rest...)
	}
	return p.out
}

// rest returns what is left of an unfinished last event when the stream ends.
func (p *sseParser) rest() []byte { return p.pend }

// fields returns the event name and data of one event (data lines joined with \n).
func eventFields(ev []byte) (name, data []byte) {
	multi := false
	for len(ev) > 0 {
		var line []byte
		if k := bytes.IndexByte(ev, '\n'); k >= 0 {
			line, ev = ev[:k], ev[k+1:]
		} else {
			line, ev = ev, nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		switch {
		case bytes.HasPrefix(line, []byte("event:")):
			name = bytes.TrimPrefix(line[6:], []byte(" "))
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(line[5:], []byte(" "))
			if data == nil {
				data = d
			} else {
				if !multi {
					data = append([]byte(nil), data...)
					multi = true
				}
				data = append(append(data, '\n'), d...)
			}
		}
	}
	return name, data
}

// keep reads one event and says whether to pass it on.
func (p *sseParser) keep(ev []byte) bool {
	if p.face == AnthropicMessages {
		// Content deltas are counted; only message_start, message_delta, message_stop and error
		// events are read, and the rest pass unread.
		if bytes.HasPrefix(ev, contentBlockDelta) {
			p.deltas++
			return true
		}
		if !bytes.Contains(ev, []byte("message_")) && !bytes.Contains(ev, []byte("error")) {
			return true
		}
		_, data := eventFields(ev)
		typ, _ := jsonutil.String(memberValue(data, "type"))
		switch typ {
		case "message_start":
			p.usage = Usage{}
			if u := memberValue(memberValue(data, "message"), "usage"); len(u) > 0 && u[0] == '{' {
				anthropicUsage(u, &p.usage)
			}
		case "message_delta":
			// Cumulative counts: the last message_delta has the final ones; counts it leaves out
			// keep message_start's.
			if u := memberValue(data, "usage"); len(u) > 0 && u[0] == '{' {
				anthropicUsage(u, &p.usage)
			}
		case "message_stop":
			p.done = true
		case "error":
			p.streamErr, _ = jsonutil.String(memberValue(memberValue(data, "error"), "type"))
		}
		return true
	}
	_, data := eventFields(ev)
	if string(data) == "[DONE]" {
		p.done = true
		return true
	}
	if !hasObjectMember(data, []byte(`"usage"`)) {
		if carriesContent(data) {
			p.deltas++
		}
		if bytes.HasPrefix(data, []byte(`{"error"`)) {
			e := memberValue(data, "error")
			if p.streamErr, _ = jsonutil.String(memberValue(e, "type")); p.streamErr == "" {
				p.streamErr, _ = jsonutil.String(memberValue(e, "code"))
			}
		}
		return true
	}
	var choices, usage []byte
	topLevel(data, func(m member) bool {
		switch {
		case m.keyIs("choices"):
			choices = data[m.start:m.end]
		case m.keyIs("usage"):
			usage = data[m.start:m.end]
		}
		return true
	})
	if len(usage) == 0 || usage[0] != '{' {
		return true
	}
	p.usage = openaiUsage(usage)
	// The usage chunk has no choices.
	empty := len(choices) < 2 || len(bytes.TrimSpace(choices[1:len(choices)-1])) == 0
	return !(p.strip && empty)
}

// hasObjectMember reports whether data has key followed by a colon and an object: a cheap test
// that passes over "usage":null (which every chunk of an include_usage stream carries).
func hasObjectMember(data, key []byte) bool {
	for {
		i := bytes.Index(data, key)
		if i < 0 {
			return false
		}
		data = data[i+len(key):]
		j := skipSpace(data, 0)
		if j < len(data) && data[j] == ':' {
			j = skipSpace(data, j+1)
			if j < len(data) && data[j] == '{' {
				return true
			}
		}
	}
}

// maskInPlace overwrites every occurrence of key in b with as many asterisks.
func maskInPlace(b, key []byte) {
	if len(key) == 0 {
		return
	}
	for i := 0; ; {
		j := bytes.Index(b[i:], key)
		if j < 0 {
			return
		}
		for k := i + j; k < i+j+len(key); k++ {
			b[k] = '*'
		}
		i += j + len(key)
	}
}

// maskWriter writes through to w with every occurrence of key masked, across writes too: it holds
// back a tail that could be the start of the key until the next write or Flush. (An event boundary
// is never the start of a key, so a stream's events are never held back.) Write masks p in place.
type maskWriter struct {
	w    io.Writer
	key  []byte
	hold []byte
	tmp  []byte
}

func (m *maskWriter) Write(p []byte) error {
	if len(m.key) == 0 {
		_, err := m.w.Write(p)
		return err
	}
	data := p
	if len(m.hold) > 0 {
		m.tmp = append(append(m.tmp[:0], m.hold...), p...)
		data = m.tmp
		m.hold = m.hold[:0]
	}
	maskInPlace(data, m.key)
	cut := len(data)
	for i := max(0, len(data)-len(m.key)+1); i < len(data); i++ {
		if data[i] == m.key[0] && bytes.HasPrefix(m.key, data[i:]) {
			cut = i
			break
		}
	}
	m.hold = append(m.hold, data[cut:]...)
	if cut == 0 {
		return nil
	}
	_, err := m.w.Write(data[:cut])
	return err
}

// Flush writes what is held back.
func (m *maskWriter) Flush() error {
	if len(m.hold) == 0 {
		return nil
	}
	_, err := m.w.Write(m.hold)
	m.hold = m.hold[:0]
	return err
}
