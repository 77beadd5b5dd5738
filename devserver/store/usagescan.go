package store

import (
	"bytes"
	"strconv"
)

// The usage of a model_call event is read from its data on every metered call, in the meter's
// goroutine, which shares the dev server's cores with the calls themselves: encoding/json's
// reflection was the largest part of the meter's own work a call. The data the dev server writes
// is one flat object of numbers, strings and booleans, which scanUsage reads without it; anything
// it does not read exactly as encoding/json would (a key that matches only when case is ignored,
// a count that is not an integer, an escape in a key) goes to encoding/json.

// scanUsage reads the members of modelCallUsage's struct from data, valid JSON (prepEvent has
// checked it), as json.Unmarshal would into it; ok is false when data is not a flat object it
// reads with certainty.
func scanUsage(data []byte) (u usageDelta, refused, ok bool) {
	p := skipSpace(data, 0)
	if p >= len(data) || data[p] != '{' {
		return u, false, false
	}
	p = skipSpace(data, p+1)
	if p < len(data) && data[p] == '}' {
		return u, false, len(bytes.TrimSpace(data[p+1:])) == 0
	}
	for {
		// A key, without escapes.
		if p >= len(data) || data[p] != '"' {
			return u, false, false
		}
		end := bytes.IndexByte(data[p+1:], '"')
		if end < 0 {
			return u, false, false
		}
		key := data[p+1 : p+1+end]
		if bytes.IndexByte(key, '\\') >= 0 {
			return u, false, false
		}
		p = skipSpace(data, p+2+end)
		if p >= len(data) || data[p] != ':' {
			return u, false, false
		}
		p = skipSpace(data, p+1)
		// A scalar value: a string, a number, true, false or null.
		start := p
		if p < len(data) && data[p] == '"' {
			for p++; p < len(data) && data[p] != '"'; p++ {
				if data[p] == '\\' {
					p++
				}
			}
			if p >= len(data) {
				return u, false, false
			}
			p++
		} else {
			for p < len(data) && !valueEnd[data[p]] {
				p++
			}
		}
		val := data[start:p]
		if len(val) == 0 || val[0] == '{' || val[0] == '[' {
			return u, false, false
		}
		var n *int64
		switch string(key) {
		case "input_tokens":
			n = &u.input
		case "output_tokens":
			n = &u.output
		case "cache_read_input_tokens":
			n = &u.cacheRead
		case "cache_creation_input_tokens":
			n = &u.cacheCreation
		case "cost_usd":
			if string(val) != "null" {
				f, err := strconv.ParseFloat(string(val), 64)
				if err != nil {
					return u, false, false
				}
				u.cost = f
			}
		case "refused":
			switch {
			case string(val) == "null":
			case val[0] != '"' || bytes.IndexByte(val, '\\') >= 0:
				return u, false, false
			default:
				refused = len(val) > 2
			}
		default:
			for _, k := range usageKeys {
				if len(key) == len(k) && bytes.EqualFold(key, []byte(k)) {
					return u, false, false // encoding/json would take it
				}
			}
		}
		if n != nil && string(val) != "null" {
			v, err := strconv.ParseInt(string(val), 10, 64)
			if err != nil {
				return u, false, false
			}
			*n = v
		}
		p = skipSpace(data, p)
		if p >= len(data) {
			return u, false, false
		}
		if data[p] == '}' {
			return u, refused, len(bytes.TrimSpace(data[p+1:])) == 0
		}
		if data[p] != ',' {
			return u, false, false
		}
		p = skipSpace(data, p+1)
	}
}

var usageKeys = []string{"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "cost_usd", "refused"}

// valueEnd are the bytes that end a number or literal in valid JSON.
var valueEnd = [256]bool{' ': true, '\t': true, '\r': true, '\n': true, ',': true, '}': true, ']': true}

func skipSpace(b []byte, p int) int {
	for p < len(b) && (b[p] == ' ' || b[p] == '\t' || b[p] == '\r' || b[p] == '\n') {
		p++
	}
	return p
}
